// The contract at run time: the parsed document (for the request/response validator and the docs) and
// compiled validators for server-sent event payloads, which express-openapi-validator does not check.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import type { RouteSpec } from '../../generated/server.gen.ts';

export const contractFile = fileURLToPath(new URL('../../open-agent-api.yaml', import.meta.url));
const generatedFile = fileURLToPath(new URL('../../generated/contract.json', import.meta.url));

export interface Contract {
  /** The YAML text, served as is by `GET /openapi.yaml`. */
  text: string;
  document: Record<string, unknown>;
  version: string;
}

let cached: Contract | undefined;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** generated/contract.json: the document parsed from `text`, with the hash of the text it was parsed from. */
export function contractDocumentJson(text: string): string {
  return `${JSON.stringify({ sha256: sha256(text), document: parse(text) as unknown })}\n`;
}

/**
 * The parsed document: generated/contract.json when `npm run generate` wrote it from this very text (reading
 * JSON takes milliseconds where parsing the YAML takes most of a second of start-up), the YAML otherwise.
 */
function documentOf(text: string): Record<string, unknown> {
  try {
    const generated = JSON.parse(readFileSync(generatedFile, 'utf8')) as { sha256?: unknown; document?: Record<string, unknown> };
    if (generated.sha256 === sha256(text) && generated.document) return generated.document;
  } catch {
    // Not generated yet: the YAML says the same.
  }
  return parse(text) as Record<string, unknown>;
}

export function loadContract(): Contract {
  if (!cached) {
    const text = readFileSync(contractFile, 'utf8');
    const document = documentOf(text);
    cached = { text, document, version: String((document.info as { version: string }).version) };
  }
  return cached;
}

function rebaseRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebaseRefs);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([key, value]) => [
        key,
        key === '$ref' && typeof value === 'string' ? value.replace(/^#/, 'contract#') : rebaseRefs(value),
      ]),
    );
  }
  return schema;
}

export interface StreamValidator {
  /** Returns a description of what is wrong, or undefined when `data` matches the contract. */
  (data: unknown): string | undefined;
}

/** Compiles validators for the `text/event-stream` payload schema of each streaming operation. */
export function createStreamValidators(contract: Contract, routes: readonly RouteSpec[]): Map<string, StreamValidator> {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const components = (contract.document.components ?? {}) as Record<string, unknown>;
  ajv.addSchema({ $id: 'contract', components: rebaseRefs(components) });
  const paths = contract.document.paths as Record<string, Record<string, Record<string, unknown>>>;
  const validators = new Map<string, StreamValidator>();
  for (const route of routes) {
    for (const [status, types] of Object.entries(route.responseContent)) {
      if (!types.includes('text/event-stream')) continue;
      const responses = paths[route.path]?.[route.method]?.responses as Record<string, Record<string, unknown>>;
      const content = responses[status]?.content as Record<string, { schema: unknown }>;
      const validate: ValidateFunction = ajv.compile(rebaseRefs(content['text/event-stream']?.schema) as object);
      validators.set(route.operationId, (data) =>
        validate(data) ? undefined : ajv.errorsText(validate.errors, { dataVar: 'event' }),
      );
    }
  }
  return validators;
}
