// The one error catalog and the error type every layer throws. It lives below HTTP so that the store and
// the domain modules can name what is wrong without knowing how a request reached them: the domain names
// the resource or the request field, and the HTTP layer (server/http/errors.ts) turns a field into a JSON
// pointer into the request and the error into the envelope.
import type { components } from '../generated/openapi.gen.ts';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ErrorType = components['schemas']['ErrorType'];

/**
 * Every code the contract declares: its HTTP status, a default message, and the `type` OpenAI's clients
 * read (`APIError.type`), so that an OpenAI SDK pointed at this server fills it as it would for OpenAI.
 */
export const errorCatalog = {
  validation_error: { status: 400, type: 'invalid_request_error', message: 'The request does not match the contract.' },
  invalid_json: { status: 400, type: 'invalid_request_error', message: 'The request body is not valid JSON.' },
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'The request is not valid.' },
  invalid_token: { status: 400, type: 'invalid_request_error', message: 'The token is invalid, expired or already used.' },
  unauthorized: { status: 401, type: 'authentication_error', message: 'A valid API key or access token is required.' },
  quota_exceeded: { status: 402, type: 'insufficient_quota', message: 'A limit of your plan is reached.' },
  forbidden: { status: 403, type: 'permission_error', message: 'This is not allowed.' },
  not_found: { status: 404, type: 'not_found_error', message: 'Not found.' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', message: 'This method is not allowed here.' },
  not_acceptable: { status: 406, type: 'invalid_request_error', message: 'No representation matches the Accept header.' },
  request_timeout: { status: 408, type: 'invalid_request_error', message: 'The request did not arrive in time.' },
  conflict: { status: 409, type: 'conflict_error', message: 'The request conflicts with the current state.' },
  request_in_progress: { status: 409, type: 'conflict_error', message: 'A request with this idempotency key is still in progress.' },
  payload_too_large: { status: 413, type: 'invalid_request_error', message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error', message: 'This media type is not supported here.' },
  idempotency_key_reused: { status: 422, type: 'invalid_request_error', message: 'This idempotency key was used with a different request.' },
  rate_limited: { status: 429, type: 'rate_limit_error', message: 'Too many requests.' },
  headers_too_large: { status: 431, type: 'invalid_request_error', message: 'The request line and headers are too large (16 KB at most).' },
  internal_error: { status: 500, type: 'server_error', message: 'An unexpected error occurred.' },
  not_implemented: { status: 501, type: 'server_error', message: 'This operation is not implemented yet.' },
  upstream_error: { status: 502, type: 'server_error', message: 'An upstream service failed.' },
  service_unavailable: { status: 503, type: 'server_error', message: 'The service is unavailable.' },
  billing_disabled: { status: 503, type: 'server_error', message: 'Billing is not configured on this server.' },
  upstream_timeout: { status: 504, type: 'server_error', message: 'An upstream service did not answer in time.' },
} as const satisfies Record<ErrorCode, { status: number; type: ErrorType; message: string }>;

/** Where a field is: the request part it came in, when the domain knows it; the HTTP layer finds it otherwise. */
export type FieldLocation = 'body' | 'query' | 'path' | 'headers';

/**
 * One thing wrong. `field` names a request field the way a person would write it (`messages[3].tool_call_id`,
 * `after`); the HTTP layer turns it into a JSON pointer (`/body/messages/3/tool_call_id`).
 */
export interface Problem {
  message: string;
  field?: string;
  in?: FieldLocation;
  metric?: components['schemas']['UsageMetric'];
  limit?: number;
  used?: number;
  run_id?: string;
}

export interface ApiErrorOptions {
  details?: Problem[];
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error that becomes the envelope. Any layer throws it; the HTTP layer renders it. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Problem[] | undefined;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, options: ApiErrorOptions = {}) {
    super(message ?? errorCatalog[code].message, { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = errorCatalog[code].status;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError('not_found', `No ${what} ${id}.`);
}

/** A 400 naming the field at fault. */
export function invalidRequest(message: string, field?: string, where?: FieldLocation): ApiError {
  return new ApiError('invalid_request', message, field ? { details: [{ message, field, ...(where ? { in: where } : {}) }] } : {});
}

/** A field path built from segments: `field('messages', 3, 'tool_call_id')` is `messages[3].tool_call_id`. */
export function field(...segments: (string | number)[]): string {
  return segments.reduce<string>((path, segment) => (typeof segment === 'number' ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment), '');
}
