// fast-check arbitraries from the contract's JSON Schemas: values that match a schema (kept small), and
// mutants of such values that do not. Written for the subset of JSON Schema 2020-12 the contract uses:
// type (one or several, `null` included), enum, const, properties, required, additionalProperties,
// min/maxProperties, propertyNames, items, min/maxItems, uniqueItems, min/maxLength, pattern, format
// (email, uri, date-time), minimum/maximum, oneOf/anyOf and $ref. The one maintained JSON Schema →
// fast-check package on npm (json-schema-fast-check) is archived, predates fast-check 4 and has no
// oneOf, so this is our own. Every value is checked against the schema with Ajv before it is used, so
// a gap here costs generation time, never a wrong verdict.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

export type Schema = Record<string, unknown>;
type Json = unknown;

export interface SchemaContext {
  /** The contract (or any document) that `$ref`s point into. */
  document: Record<string, unknown>;
  /** Values to prefer for properties of these names: real ids, the catalog's models. */
  hints?: Readonly<Record<string, fc.Arbitrary<unknown>>>;
}

const DEPTH_LIMIT = 6;
// Strings and arrays stay short unless the schema insists: big values find no more bugs, only slowness.
const EXTRA_LENGTH = 24;
const EXTRA_ITEMS = 3;

export function resolveRef(document: Record<string, unknown>, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`Only local $refs are supported: ${ref}`);
  let node: unknown = document;
  for (const segment of ref.slice(2).split('/')) {
    node = (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`Unresolvable $ref ${ref}`);
  }
  return node as Schema;
}

// Both keyed by the contract's own schema objects, so that a schema derived from one is derived once and
// its Ajv validator compiled once.
const dereferenced = new WeakMap<Schema, Schema>();
const branchesOf = new WeakMap<Schema, Schema[]>();

/** The schema with `$ref`s followed at the top (siblings of a `$ref` apply too, as in 2020-12). */
export function deref(schema: Schema, document: Record<string, unknown>): Schema {
  const known = dereferenced.get(schema);
  if (known) return known;
  let current = schema;
  while (typeof current.$ref === 'string') {
    const { $ref, ...siblings } = current;
    current = Object.keys(siblings).length > 0 ? { ...resolveRef(document, $ref as string), ...siblings } : resolveRef(document, $ref as string);
  }
  dereferenced.set(schema, current);
  return current;
}

/** A oneOf/anyOf's branches, each with the keywords beside the oneOf (a shared `type`, say) applied. */
function branches(schema: Schema, document: Record<string, unknown>): Schema[] | undefined {
  const listed = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (!listed) return undefined;
  let merged = branchesOf.get(schema);
  if (!merged) {
    const { oneOf: _oneOf, anyOf: _anyOf, discriminator: _discriminator, ...rest } = schema;
    merged = listed.map((branch) => (Object.keys(rest).length > 0 ? { ...rest, ...deref(branch, document) } : deref(branch, document)));
    branchesOf.set(schema, merged);
  }
  return merged;
}

function typesOf(schema: Schema): string[] | undefined {
  if (Array.isArray(schema.type)) return schema.type as string[];
  if (typeof schema.type === 'string') return [schema.type];
  return undefined;
}

const text = (min: number, max: number) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' }) },
    // Any code point: control characters, NUL, astral planes, lone surrogates.
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'binary' }) },
  );

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((schema.maxLength as number | undefined) ?? Infinity, minLength + EXTRA_LENGTH);
  const fits = (value: string) => [...value].length >= minLength && [...value].length <= ((schema.maxLength as number | undefined) ?? Infinity);
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  switch (schema.format) {
    case 'date-time':
      return fc
        .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2199-12-31T23:59:59Z'), noInvalidDate: true })
        .map((date) => date.toISOString());
    case 'email':
      return fc.emailAddress().filter(fits);
    case 'uri':
      return fc.webUrl({ withQueryParameters: true, withFragments: true }).filter(fits);
    default:
      return text(minLength, maxLength);
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function integerArbitrary(schema: Schema): fc.Arbitrary<number> {
  const min = (schema.minimum as number | undefined) ?? Number.MIN_SAFE_INTEGER;
  const max = (schema.maximum as number | undefined) ?? Number.MAX_SAFE_INTEGER;
  const small = fc.integer({ min: Math.max(min, INT32_MIN), max: Math.min(max, INT32_MAX) });
  if (min >= INT32_MIN && max <= INT32_MAX) return small;
  // Beyond 32 bits too, where the schema allows it: integer columns overflow there.
  return fc.oneof({ weight: 4, arbitrary: small }, { weight: 1, arbitrary: fc.maxSafeInteger().map((n) => Math.min(max, Math.max(min, n))) });
}

function numberArbitrary(schema: Schema): fc.Arbitrary<number> {
  const min = schema.minimum as number | undefined;
  const max = schema.maximum as number | undefined;
  return fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) }),
    integerArbitrary(schema),
  );
}

/** Keys a `propertyNames` schema accepts: a reference or an enum names them; otherwise strings of its shape. */
function propertyNamesArbitrary(names: Schema, context: SchemaContext, depth: number): fc.Arbitrary<string> {
  if (names.$ref !== undefined || names.enum !== undefined || names.const !== undefined) {
    return arbitraryOf(names, context, depth + 1).filter((name): name is string => typeof name === 'string');
  }
  return stringArbitrary({ type: 'string', ...names });
}

function objectArbitrary(schema: Schema, context: SchemaContext, depth: number): fc.Arbitrary<Record<string, Json>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  const deep = depth >= DEPTH_LIMIT;
  const model: Record<string, fc.Arbitrary<Json>> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (deep && !required.includes(name)) continue;
    const generated = arbitraryOf(property, context, depth + 1);
    const hint = context.hints?.[name];
    model[name] = hint ? fc.oneof({ weight: 3, arbitrary: hint }, { weight: 1, arbitrary: generated }) : generated;
  }
  let arbitrary: fc.Arbitrary<Record<string, Json>> = fc.record(model, { requiredKeys: required.filter((name) => name in model) });

  const additional = schema.additionalProperties;
  const maxProperties = (schema.maxProperties as number | undefined) ?? Infinity;
  if (additional !== false && !deep) {
    const names = schema.propertyNames ? propertyNamesArbitrary(schema.propertyNames as Schema, context, depth) : fc.string({ maxLength: 12 });
    const values = additional && typeof additional === 'object' ? arbitraryOf(additional as Schema, context, depth + 1) : fc.jsonValue({ maxDepth: 2 });
    const extra = fc.dictionary(names.filter((name) => !(name in properties)), values, {
      maxKeys: Math.max(0, Math.min(EXTRA_ITEMS, maxProperties - required.length)),
      noNullPrototype: true,
    });
    arbitrary = fc.tuple(arbitrary, extra).map(([declared, more]) => ({ ...more, ...declared }));
  }
  const minProperties = (schema.minProperties as number | undefined) ?? 0;
  if (minProperties > 0 || maxProperties < Infinity) {
    arbitrary = arbitrary.filter((value) => Object.keys(value).length >= minProperties && Object.keys(value).length <= maxProperties);
  }
  return arbitrary;
}

function arrayArbitrary(schema: Schema, context: SchemaContext, depth: number): fc.Arbitrary<Json[]> {
  const items = arbitraryOf((schema.items ?? {}) as Schema, context, depth + 1);
  const minLength = (schema.minItems as number | undefined) ?? 0;
  const cap = depth >= DEPTH_LIMIT ? 0 : EXTRA_ITEMS;
  const maxLength = Math.min((schema.maxItems as number | undefined) ?? Infinity, minLength + cap);
  if (schema.uniqueItems === true) return fc.uniqueArray(items, { minLength, maxLength, selector: (value) => JSON.stringify(value) });
  return fc.array(items, { minLength, maxLength });
}

/** Values that (mostly) match `schema`; pair with `schemaChecker` to keep only those that do. */
export function arbitraryOf(schema: Schema | boolean, context: SchemaContext, depth = 0): fc.Arbitrary<Json> {
  if (schema === true) return fc.jsonValue({ maxDepth: 2 });
  if (schema === false) throw new Error('No value matches the schema `false`.');
  const resolved = deref(schema, context.document);
  if ('const' in resolved) return fc.constant(resolved.const);
  if (Array.isArray(resolved.enum)) return fc.constantFrom(...(resolved.enum as Json[]));
  const alternatives = branches(resolved, context.document);
  if (alternatives) return fc.oneof(...alternatives.map((branch) => arbitraryOf(branch, context, depth + 1)));
  const types = typesOf(resolved);
  if (!types) {
    if (resolved.properties || resolved.additionalProperties !== undefined) return objectArbitrary(resolved, context, depth);
    if (resolved.items) return arrayArbitrary(resolved, context, depth);
    return fc.jsonValue({ maxDepth: 2 });
  }
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<Json> => {
      switch (type) {
        case 'null':
          return fc.constant(null);
        case 'boolean':
          return fc.boolean();
        case 'integer':
          return integerArbitrary(resolved);
        case 'number':
          return numberArbitrary(resolved);
        case 'string':
          return stringArbitrary(resolved);
        case 'array':
          return arrayArbitrary(resolved, context, depth);
        case 'object':
          return objectArbitrary(resolved, context, depth);
        default:
          throw new Error(`Unsupported type ${type}`);
      }
    }),
  );
}

function rebaseRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebaseRefs);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([key, value]) => [key, key === '$ref' && typeof value === 'string' ? value.replace(/^#/, 'doc#') : rebaseRefs(value)]),
    );
  }
  return schema;
}

/** Ajv validators for schemas of one document (the contract), compiled once per schema object. */
export function schemaChecker(document: Record<string, unknown>): (schema: Schema) => (value: unknown) => boolean {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'doc', components: rebaseRefs(document.components ?? {}) });
  const compiled = new WeakMap<Schema, ValidateFunction>();
  return (schema) => {
    let validate = compiled.get(schema);
    if (!validate) {
      validate = ajv.compile(rebaseRefs(schema) as object);
      compiled.set(schema, validate);
    }
    const check = validate;
    return (value) => check(value) as boolean;
  };
}

/** Values that match `schema`, checked. */
export function validArbitrary(schema: Schema, context: SchemaContext, check: (value: unknown) => boolean): fc.Arbitrary<Json> {
  return arbitraryOf(schema, context).filter(check);
}

export interface Mutant {
  value: Json;
  /** What was broken and where, as a JSON pointer into the value. */
  mutation: string;
}

type Path = (string | number)[];

function pointer(path: Path): string {
  return `/${path.map((segment) => String(segment).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

/** A copy of `root` with the part at `path` replaced. */
function setAt(root: Json, path: Path, replace: (current: Json) => Json): Json {
  if (path.length === 0) return replace(root);
  const [head, ...rest] = path;
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[head as number] = setAt(copy[head as number], rest, replace);
    return copy;
  }
  const copy = { ...(root as Record<string, Json>) };
  copy[head as string] = setAt(copy[head as string], rest, replace);
  return copy;
}

const SAMPLES_BY_TYPE: Record<string, Json> = {
  null: null,
  boolean: true,
  integer: 7,
  number: 1.5,
  string: 'fuzz',
  array: [],
  object: {},
};

/**
 * The schema each part of `value` was generated from, found by walking both together. For oneOf the
 * branch the value matches is followed, so that the mutations below break the branch in use.
 */
function sites(schema: Schema, value: Json, document: Record<string, unknown>, check: (schema: Schema) => (value: unknown) => boolean, path: Path = []): { path: Path; schema: Schema; value: Json }[] {
  const resolved = deref(schema, document);
  const alternatives = branches(resolved, document);
  if (alternatives) {
    const branch = alternatives.find((b) => check(b)(value));
    return branch ? sites(branch, value, document, check, path) : [{ path, schema: resolved, value }];
  }
  const found = [{ path, schema: resolved, value }];
  if (Array.isArray(value) && resolved.items) {
    value.forEach((item, index) => found.push(...sites(resolved.items as Schema, item, document, check, [...path, index])));
  } else if (value && typeof value === 'object' && !Array.isArray(value)) {
    const properties = (resolved.properties ?? {}) as Record<string, Schema>;
    for (const [name, item] of Object.entries(value as Record<string, Json>)) {
      const child = properties[name] ?? (typeof resolved.additionalProperties === 'object' ? (resolved.additionalProperties as Schema) : undefined);
      if (child) found.push(...sites(child, item, document, check, [...path, name]));
    }
  }
  return found;
}

/** Every mutation of `value` this module knows that breaks a rule of the part's schema. */
export function mutationsOf(schema: Schema, value: Json, document: Record<string, unknown>, check: (schema: Schema) => (value: unknown) => boolean): Mutant[] {
  const mutants: Mutant[] = [];
  for (const site of sites(schema, value, document, check)) {
    const at = pointer(site.path);
    const s = site.schema;
    const add = (mutation: string, replace: (current: Json) => Json) => mutants.push({ value: setAt(value, site.path, replace), mutation: `${mutation} at ${at}` });
    const types = typesOf(s);
    if (types) {
      for (const [type, sample] of Object.entries(SAMPLES_BY_TYPE)) {
        if (!types.includes(type) && !(type === 'integer' && types.includes('number'))) add(`${type} instead of ${types.join('|')}`, () => sample);
      }
    }
    if (Array.isArray(s.enum)) add('a value outside the enum', () => `not-${String((s.enum as Json[])[0])}`);
    if ('const' in s) add('not the const', () => (typeof s.const === 'string' ? `${s.const}-not` : 'not-the-const'));
    if (typeof site.value === 'string') {
      if (typeof s.maxLength === 'number') add(`a string one past maxLength ${s.maxLength}`, () => 'x'.repeat((s.maxLength as number) + 1));
      if (typeof s.minLength === 'number' && s.minLength > 0) add(`a string under minLength ${s.minLength}`, () => 'x'.repeat((s.minLength as number) - 1));
      if (typeof s.pattern === 'string') add('a string off the pattern', () => ' \u0000 off pattern');
      if (typeof s.format === 'string') add(`not a ${s.format}`, () => `not a ${s.format}`);
    }
    if (typeof site.value === 'number') {
      if (typeof s.maximum === 'number') add(`above maximum ${s.maximum}`, () => (s.maximum as number) + 1);
      if (typeof s.minimum === 'number') add(`below minimum ${s.minimum}`, () => (s.minimum as number) - 1);
      if (types?.includes('integer') && !types.includes('number')) add('a fraction for an integer', (current) => (current as number) + 0.5);
    }
    if (Array.isArray(site.value)) {
      const items = site.value;
      if (typeof s.maxItems === 'number') {
        add(`an array one past maxItems ${s.maxItems}`, () => Array.from({ length: (s.maxItems as number) + 1 }, (_, i) => items[i % Math.max(1, items.length)] ?? null));
      }
      if (typeof s.minItems === 'number' && s.minItems > 0) add(`an array under minItems ${s.minItems}`, () => items.slice(0, (s.minItems as number) - 1));
      if (s.uniqueItems === true && items.length > 0) add('a duplicate item', () => [...items, items[0]]);
    }
    if (site.value && typeof site.value === 'object' && !Array.isArray(site.value)) {
      const present = Object.keys(site.value);
      for (const name of (s.required ?? []) as string[]) {
        if (present.includes(name)) add(`required "${name}" missing`, (current) => Object.fromEntries(Object.entries(current as object).filter(([key]) => key !== name)));
      }
      if (s.additionalProperties === false) add('an unknown property', (current) => ({ ...(current as object), fuzz_unknown_property: 1 }));
      if (typeof s.maxProperties === 'number') {
        add(`more than maxProperties ${s.maxProperties}`, (current) => ({
          ...(current as object),
          ...Object.fromEntries(Array.from({ length: (s.maxProperties as number) + 1 }, (_, i) => [`fuzz_${i}`, 'x'])),
        }));
      }
      if (typeof s.minProperties === 'number' && s.minProperties > 0) add(`fewer than minProperties ${s.minProperties}`, () => ({}));
    }
  }
  return mutants;
}

/** Mutants of valid values that the schema rejects, each saying what was broken. */
export function invalidArbitrary(schema: Schema, context: SchemaContext, check: (schema: Schema) => (value: unknown) => boolean): fc.Arbitrary<Mutant> {
  const validate = check(schema);
  return fc
    .tuple(validArbitrary(schema, context, validate), fc.nat())
    .map(([value, pick]) => {
      const candidates = mutationsOf(schema, value, context.document, check).filter((mutant) => !validate(mutant.value));
      return candidates.length > 0 ? candidates[pick % candidates.length]! : undefined;
    })
    .filter((mutant): mutant is Mutant => mutant !== undefined);
}
