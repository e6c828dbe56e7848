// A tool's JSON-schema parameters as form fields, and the other way round for the tool editor. Only the
// shapes a function tool's parameters use are understood (an object of scalars, enums, and nested values
// shown as JSON); anything else still gets a field, as JSON text.

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  enum?: unknown[];
  format?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  default?: unknown;
}

export type FieldType = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface Field {
  name: string;
  label: string;
  description: string | undefined;
  type: FieldType;
  required: boolean;
  options: string[];
  /** The HTML input type for strings with a known format. */
  inputType: 'text' | 'email' | 'url' | 'date' | 'datetime-local';
}

function typeOf(schema: JsonSchema): FieldType {
  if (Array.isArray(schema.enum) && schema.enum.every((value) => typeof value === 'string')) return 'enum';
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((type) => type && type !== 'null');
  const type = types.length === 1 ? types[0] : undefined;
  return type === 'string' || type === 'number' || type === 'integer' || type === 'boolean' ? type : 'json';
}

const INPUT_TYPES: Record<string, Field['inputType']> = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

function asSchema(value: unknown): JsonSchema {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as JsonSchema) : {};
}

/** One field per property of an object schema, in the schema's order. */
export function fieldsOf(parameters: unknown): Field[] {
  const schema = asSchema(parameters);
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(asSchema(schema.properties)).map(([name, raw]) => {
    const property = asSchema(raw);
    const type = typeOf(property);
    return {
      name,
      label: typeof property.title === 'string' && property.title ? property.title : name,
      description: typeof property.description === 'string' ? property.description : undefined,
      type,
      required: required.has(name),
      options: type === 'enum' ? (property.enum as string[]) : [],
      inputType: (type === 'string' && property.format && INPUT_TYPES[property.format]) || 'text',
    };
  });
}

/** A call's arguments, parsed; what the model wrote when it is not a JSON object. */
export function parseArguments(text: string): { values: Record<string, unknown>; error: string | null } {
  try {
    const value: unknown = JSON.parse(text || '{}');
    if (value && typeof value === 'object' && !Array.isArray(value)) return { values: value as Record<string, unknown>, error: null };
    return { values: {}, error: 'The arguments are not a JSON object.' };
  } catch {
    return { values: {}, error: 'The arguments are not valid JSON.' };
  }
}

/** A value shown in a field of `type`. */
export function display(value: unknown, type: FieldType): string {
  if (value === undefined || value === null) return '';
  if (type === 'json' || typeof value === 'object') return JSON.stringify(value, null, 2);
  return String(value);
}

/** Fields that a call left out although its schema requires them (a model's slip, worth showing). */
export function missingRequired(fields: Field[], values: Record<string, unknown>): string[] {
  return fields.filter((field) => field.required && (values[field.name] === undefined || values[field.name] === null)).map((field) => field.name);
}

/**
 * Reads a JSON-schema text typed into the tool editor: an object schema, or an error saying what is
 * wrong with it, named for the person who typed it.
 */
export function parseParameters(text: string): { schema: Record<string, unknown> | undefined; error: string | null } {
  if (!text.trim()) return { schema: undefined, error: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { schema: undefined, error: `Not valid JSON: ${(error as Error).message}` };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { schema: undefined, error: 'The parameters must be a JSON object (a JSON Schema).' };
  const schema = value as JsonSchema;
  if (schema.type !== undefined && schema.type !== 'object') return { schema: undefined, error: 'The parameters schema must have "type": "object".' };
  if (schema.properties !== undefined && (typeof schema.properties !== 'object' || Array.isArray(schema.properties))) {
    return { schema: undefined, error: '"properties" must be an object.' };
  }
  return { schema: value as Record<string, unknown>, error: null };
}

/** A result typed by the person: sent as typed, but JSON is tidied to one line as tools usually answer. */
export function resultText(text: string): string {
  const trimmed = text.trim();
  try {
    return JSON.stringify(JSON.parse(trimmed));
  } catch {
    return trimmed;
  }
}
