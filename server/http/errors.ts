import type { components } from '../../generated/openapi.gen.ts';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ErrorDetail = components['schemas']['ErrorDetail'];
export type ErrorEnvelope = components['schemas']['Error'];

/** The one catalog: every code the contract declares, its HTTP status and a default message. */
export const errorCatalog = {
  validation_error: { status: 400, message: 'The request does not match the contract.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_request: { status: 400, message: 'The request is not valid.' },
  invalid_token: { status: 400, message: 'The token is invalid, expired or already used.' },
  unauthorized: { status: 401, message: 'A valid API key or access token is required.' },
  quota_exceeded: { status: 402, message: 'A limit of your plan is reached.' },
  forbidden: { status: 403, message: 'This is not allowed.' },
  not_found: { status: 404, message: 'Not found.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed here.' },
  not_acceptable: { status: 406, message: 'No representation matches the Accept header.' },
  conflict: { status: 409, message: 'The request conflicts with the current state.' },
  request_in_progress: { status: 409, message: 'A request with this idempotency key is still in progress.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'This media type is not supported here.' },
  idempotency_key_reused: { status: 422, message: 'This idempotency key was used with a different request.' },
  rate_limited: { status: 429, message: 'Too many requests.' },
  internal_error: { status: 500, message: 'An unexpected error occurred.' },
  not_implemented: { status: 501, message: 'This operation is not implemented yet.' },
  upstream_error: { status: 502, message: 'An upstream service failed.' },
  service_unavailable: { status: 503, message: 'The service is unavailable.' },
  billing_disabled: { status: 503, message: 'Billing is not configured on this server.' },
  upstream_timeout: { status: 504, message: 'An upstream service did not answer in time.' },
} as const satisfies Record<ErrorCode, { status: number; message: string }>;

export interface ApiErrorOptions {
  details?: ErrorDetail[];
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error that becomes the envelope. Handlers and domain code throw it; the error middleware renders it. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
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

export function invalidRequest(message: string, path?: string): ApiError {
  return new ApiError('invalid_request', message, path ? { details: [{ message, path }] } : {});
}

export function envelope(error: ApiError, requestId: string): ErrorEnvelope {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details?.length ? { details: error.details } : {}),
      request_id: requestId,
    },
  };
}
