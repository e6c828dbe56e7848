// Reads open-agent-api.yaml and lists its operations in the form the generators and the server need.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const contractPath = fileURLToPath(new URL('../open-agent-api.yaml', import.meta.url));

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface OperationInfo {
  operationId: string;
  method: HttpMethod;
  /** The path as the contract writes it, e.g. `/v1/agents/{agentId}`. */
  path: string;
  summary: string;
  secured: boolean;
  /** Declared statuses a handler returns (all but `default` and error envelopes), e.g. `[200, 201]`. */
  handlerStatuses: number[];
  /** Content types per declared success status. */
  responseContent: Record<string, string[]>;
  requestContentTypes: string[];
  /** `[DONE]` for OpenAI-style streams, from `x-stream-terminator`. */
  streamTerminator?: string;
  /** Creates something, so it takes an `Idempotency-Key`, from `x-idempotent`. */
  idempotent: boolean;
  /** How this operation's errors are rendered when not as the one envelope (a protocol's own), from `x-error-format`. */
  errorFormat?: string;
}

type Json = Record<string, unknown>;

export function loadContract(path = contractPath): Json {
  return parse(readFileSync(path, 'utf8')) as Json;
}

function resolveRef(doc: Json, value: unknown): Json {
  let current = value as Json;
  while (current && typeof current.$ref === 'string') {
    const segments = current.$ref.replace(/^#\//, '').split('/');
    current = segments.reduce<Json>((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')] as Json, doc);
  }
  return current;
}

/** A response the error middleware renders: the one envelope, or a protocol's own error (`x-error-envelope`). */
function isErrorEnvelope(doc: Json, content: Record<string, Json>): boolean {
  const schema = content['application/json']?.schema as Json | undefined;
  return schema?.$ref === '#/components/schemas/Error' || (schema !== undefined && resolveRef(doc, schema)['x-error-envelope'] === true);
}

export function listOperations(doc: Json = loadContract()): OperationInfo[] {
  const paths = doc.paths as Record<string, Json>;
  const globalSecurity = (doc.security as unknown[] | undefined) ?? [];
  const operations: OperationInfo[] = [];
  for (const [path, pathItem] of Object.entries(paths)) {
    for (const method of HTTP_METHODS) {
      const op = pathItem[method] as Json | undefined;
      if (!op) continue;
      const security = (op.security as unknown[] | undefined) ?? globalSecurity;
      const responses = op.responses as Record<string, unknown>;
      const responseContent: Record<string, string[]> = {};
      let streamTerminator: string | undefined;
      for (const [status, response] of Object.entries(responses)) {
        if (status === 'default') continue;
        const content = (resolveRef(doc, response).content ?? {}) as Record<string, Json>;
        // Error envelopes are thrown as ApiError and rendered by the error middleware, not returned.
        if (Number(status) >= 400 && isErrorEnvelope(doc, content)) continue;
        responseContent[status] = Object.keys(content);
        const terminator = content['text/event-stream']?.['x-stream-terminator'];
        if (typeof terminator === 'string') streamTerminator = terminator;
      }
      const requestBody = op.requestBody ? resolveRef(doc, op.requestBody) : undefined;
      operations.push({
        operationId: String(op.operationId),
        method,
        path,
        summary: String(op.summary ?? ''),
        secured: security.length > 0,
        handlerStatuses: Object.keys(responseContent).map(Number),
        responseContent,
        requestContentTypes: Object.keys((requestBody?.content ?? {}) as Json),
        ...(streamTerminator ? { streamTerminator } : {}),
        idempotent: op['x-idempotent'] === true,
        ...(typeof op['x-error-format'] === 'string' ? { errorFormat: op['x-error-format'] } : {}),
      });
    }
  }
  return operations;
}

/**
 * `/v1/agents/{agentId}` → `/v1/agents/:agentId`. A literal colon (A2A's `/tasks/{id}:cancel`) is escaped,
 * as express-openapi-validator escapes it, or path-to-regexp would read it as a parameter.
 */
export function toExpressPath(path: string): string {
  return path
    .split(':')
    .map((part) => part.replace(/\{([^}]+)\}/g, ':$1'))
    .join('\\:');
}
