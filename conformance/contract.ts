// The contract as the kit judges by it: each operation's method, path, security, parameters and example
// request body, and for each declared status the media types with compiled JSON Schema validators.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import type { operations } from '../generated/openapi.gen.ts';

export type OperationId = keyof operations;

export const defaultContractFile = fileURLToPath(new URL('../open-agent-api.yaml', import.meta.url));

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Record<string, unknown>;

export interface Validator {
  /** What is wrong with `value`, or undefined when it matches. */
  (value: unknown): string | undefined;
}

export interface MediaSpec {
  validate: Validator;
  /** A last `data:` payload that is not an event, e.g. `[DONE]` (`x-stream-terminator`). */
  terminator: string | undefined;
}

export interface ResponseSpec {
  /** Keyed by media type without parameters, e.g. `application/json`; empty when the response has no body. */
  content: Map<string, MediaSpec>;
  /** Declared headers, keyed by lower-case name. */
  headers: Map<string, Validator>;
}

export interface ParameterSpec {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Json;
}

export interface OperationSpec {
  operationId: OperationId;
  method: string;
  path: string;
  secured: boolean;
  parameters: ParameterSpec[];
  /** The first example of the first JSON request body, for requests whose body does not matter. */
  requestExample: unknown;
  /** The protocol whose error shape the operation answers in (`x-error-format`, e.g. A2A's), if not ours. */
  errorFormat?: string;
  /** Keyed by status as the contract writes it: `200`, `4XX`, `default`. */
  responses: Map<string, ResponseSpec>;
}

export interface Contract {
  version: string;
  operations: OperationSpec[];
  operation(operationId: OperationId): OperationSpec;
  /** The one HTTP status of each error code, as the `ErrorCode` schema lists them. */
  statusOfCode: Map<string, number>;
  /** The declared response for a status: exact, then range (`4XX`), then `default`. */
  responseFor(operation: OperationSpec, status: number): { key: string; spec: ResponseSpec } | undefined;
  /** A validator for a schema of `components.schemas`, e.g. `Error`. */
  schema(name: string): Validator;
}

function pointerGet(document: Json, ref: string): unknown {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, key) => (node as Json | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
}

function resolve(document: Json, value: unknown): Json {
  let current = value as Json | undefined;
  for (let depth = 0; current && typeof current.$ref === 'string' && depth < 20; depth++) {
    current = pointerGet(document, current.$ref) as Json | undefined;
  }
  return current ?? {};
}

/** Points local `$ref`s at the schema registered under `contract`, so that Ajv resolves them. */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([key, value]) => [
        key,
        key === '$ref' && typeof value === 'string' ? value.replace(/^#/, 'contract#') : rebase(value),
      ]),
    );
  }
  return schema;
}

/** `validation_error`, `invalid_json` → 400; `unauthorized` → 401; … from the ErrorCode description. */
function parseStatusOfCode(document: Json): Map<string, number> {
  const description = String((pointerGet(document, '#/components/schemas/ErrorCode') as Json | undefined)?.description ?? '');
  const statuses = new Map<string, number>();
  for (const match of description.matchAll(/((?:`[a-z_]+`[,\s]*)+)→\s*(\d{3})/g)) {
    for (const code of match[1]!.matchAll(/`([a-z_]+)`/g)) statuses.set(code[1]!, Number(match[2]));
  }
  return statuses;
}

function firstExample(document: Json, media: Json | undefined): unknown {
  if (!media) return undefined;
  if ('example' in media) return media.example;
  const examples = Object.values((media.examples ?? {}) as Json);
  return examples.length ? resolve(document, examples[0]).value : undefined;
}

/** Ajv's errors, each once and the first few only: a `oneOf` miss repeats itself for every branch. */
function describeErrors(errors: NonNullable<ValidateFunction['errors']>): string {
  const messages = [
    ...new Set(
      errors.map((error) => {
        const extra = (error.params as { additionalProperty?: string }).additionalProperty;
        return `${error.instancePath || '/'} ${error.message ?? 'is invalid'}${extra ? ` (${extra})` : ''}`;
      }),
    ),
  ];
  return messages.length > 4 ? `${messages.slice(0, 4).join('; ')}; and ${messages.length - 4} more` : messages.join('; ');
}

export function loadContract(file = defaultContractFile): Contract {
  const document = parse(readFileSync(file, 'utf8')) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'contract', components: rebase(document.components ?? {}) });

  const compiled = new Map<string, Validator>();
  const validatorFor = (schema: unknown, coerce: 'none' | 'header' = 'none'): Validator => {
    const key = `${coerce}:${JSON.stringify(schema ?? {})}`;
    let validator = compiled.get(key);
    if (!validator) {
      const validate: ValidateFunction = ajv.compile((rebase(schema ?? {}) as object) ?? {});
      validator = (value) => {
        // Header values are strings on the wire; an integer header is judged as the number it spells.
        const candidate = coerce === 'header' && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
        return validate(candidate) ? undefined : describeErrors(validate.errors ?? []);
      };
      compiled.set(key, validator);
    }
    return validator;
  };

  const globalSecurity = (document.security as unknown[] | undefined) ?? [];
  const operationsList: OperationSpec[] = [];
  for (const [path, rawItem] of Object.entries((document.paths ?? {}) as Json)) {
    const pathItem = resolve(document, rawItem);
    const shared = ((pathItem.parameters as unknown[] | undefined) ?? []).map((p) => resolve(document, p));
    for (const method of METHODS) {
      const op = pathItem[method] as Json | undefined;
      if (!op) continue;
      const own = ((op.parameters as unknown[] | undefined) ?? []).map((p) => resolve(document, p));
      const byKey = new Map<string, Json>();
      for (const parameter of [...shared, ...own]) byKey.set(`${String(parameter.in)}:${String(parameter.name)}`, parameter);
      const body = op.requestBody ? resolve(document, op.requestBody) : undefined;
      const bodyContent = (body?.content ?? {}) as Record<string, Json>;
      const responses = new Map<string, ResponseSpec>();
      for (const [status, rawResponse] of Object.entries((op.responses ?? {}) as Json)) {
        const response = resolve(document, rawResponse);
        const content = new Map<string, MediaSpec>();
        for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, Json>)) {
          const terminator = media['x-stream-terminator'];
          // Parameters such as `; version=0.0.4` say nothing the kit judges; it matches on the type alone.
          content.set(type.split(';')[0]!.trim().toLowerCase(), {
            validate: validatorFor(media.schema),
            terminator: typeof terminator === 'string' ? terminator : undefined,
          });
        }
        const headers = new Map<string, Validator>();
        for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
          headers.set(name.toLowerCase(), validatorFor(resolve(document, header).schema, 'header'));
        }
        responses.set(status, { content, headers });
      }
      operationsList.push({
        operationId: String(op.operationId) as OperationId,
        method: method.toUpperCase(),
        path,
        secured: ((op.security as unknown[] | undefined) ?? globalSecurity).length > 0,
        parameters: [...byKey.values()].map((parameter) => ({
          name: String(parameter.name),
          in: parameter.in as ParameterSpec['in'],
          required: parameter.required === true,
          schema: resolve(document, parameter.schema),
        })),
        requestExample: firstExample(document, bodyContent['application/json']),
        ...(typeof op['x-error-format'] === 'string' ? { errorFormat: op['x-error-format'] } : {}),
        responses,
      });
    }
  }
  const byId = new Map(operationsList.map((operation) => [operation.operationId, operation]));
  return {
    version: String((document.info as Json | undefined)?.version ?? ''),
    operations: operationsList,
    operation(operationId) {
      const operation = byId.get(operationId);
      if (!operation) throw new Error(`The contract has no operation ${operationId}.`);
      return operation;
    },
    statusOfCode: parseStatusOfCode(document),
    responseFor(operation, status) {
      for (const key of [String(status), `${Math.floor(status / 100)}XX`, 'default']) {
        const spec = operation.responses.get(key);
        if (spec) return { key, spec };
      }
      return undefined;
    },
    schema(name) {
      return validatorFor({ $ref: `#/components/schemas/${name}` });
    },
  };
}
