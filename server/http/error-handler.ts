// Every error leaves the server as the one envelope, with the status the catalog gives its code.
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { ApiError, field, type ErrorCode, type FieldLocation, type Problem } from '../errors.ts';
import { envelope } from './errors.ts';
import { allowedMethods } from './operations.ts';

/** The statuses express-openapi-validator and body-parser raise, as our codes. */
const codeByStatus: Record<number, ErrorCode> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

interface ValidatorError {
  status: number;
  message: string;
  errors?: { path: string; message: string }[];
  headers?: { Allow?: string };
  type?: string;
  code?: string;
}

function isValidatorError(error: unknown): error is ValidatorError {
  return typeof error === 'object' && error !== null && typeof (error as ValidatorError).status === 'number';
}

const LOCATIONS: Record<string, FieldLocation> = { body: 'body', query: 'query', params: 'path', path: 'path', headers: 'headers' };

/** The field a validator's path (`.body.messages[0].role`) names: `messages[0].role`, in the body. */
function problemAt(path: string, message: string): Problem {
  const segments = path
    .replace(/\[(\d+)\]/g, '.$1')
    .replace(/^[./]+/, '')
    .split(/[./]/)
    .filter(Boolean);
  const where = LOCATIONS[segments[0] ?? ''];
  const rest = where ? segments.slice(1) : segments;
  if (rest.length === 0) return { message, ...(where ? { in: where } : {}) };
  return { message, field: field(...rest.map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment))), ...(where ? { in: where } : {}) };
}

/**
 * Whether the validator's 500 is one it made of a multipart body it could not read (cut short, a bad part
 * header, a file under an unexpected field): those carry the request's own path, where the validator's
 * other 500s (a response off the contract) say `.response`. The uploader keeps files in memory, so
 * nothing on the server's side can fail while a body is read.
 */
function unreadableMultipart(error: ValidatorError, req: Request): boolean {
  return error.status === 500 && (req.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/') && error.errors?.[0]?.path === req.path;
}

function toApiError(error: unknown, req: Request): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (!isValidatorError(error)) return undefined;
  if (unreadableMultipart(error, req)) {
    return new ApiError('invalid_request', `The multipart body cannot be read: ${error.message}.`);
  }
  if (error.type === 'entity.parse.failed') {
    return new ApiError('invalid_json', `The request body is not valid JSON: ${error.message}.`);
  }
  if (error.type === 'entity.too.large' || error.code === 'LIMIT_FILE_SIZE') {
    return new ApiError('payload_too_large');
  }
  if (error.type === 'encoding.unsupported' || error.type === 'charset.unsupported') {
    return new ApiError('unsupported_media_type', error.message);
  }
  const code = codeByStatus[error.status];
  if (!code) return undefined;
  if (code === 'validation_error') {
    const details = (error.errors ?? []).map((item) => problemAt(item.path, item.message));
    return new ApiError(code, details.length ? 'The request does not match the contract.' : error.message, { details });
  }
  return new ApiError(code, error.message, error.headers?.Allow ? { headers: { Allow: error.headers.Allow } } : {});
}

/** 404 for a path no operation has, 405 with `Allow` for a method the path does not take. */
export const unmatchedRoute: RequestHandler = (req, _res, next) => {
  const allowed = allowedMethods(req.path);
  if (allowed.length === 0) {
    next(new ApiError('not_found', `No operation at ${req.method} ${req.path}.`));
  } else {
    next(
      new ApiError('method_not_allowed', `${req.method} is not allowed on ${req.path}; allowed: ${allowed.join(', ')}.`, {
        headers: { Allow: allowed.join(', ') },
      }),
    );
  }
};

/**
 * How an operation of a protocol with its own error shape (A2A's JSON-RPC errors and `google.rpc.Status`,
 * MCP's JSON-RPC errors) renders an error, named by the operation's `x-error-format`. Headers it names
 * replace the error's own (MCP's 401 challenge).
 */
export type ErrorFormat = (error: ApiError, req: Request) => { status: number; body: unknown; headers?: Record<string, string> };

export function createErrorHandler(formats: Readonly<Record<string, ErrorFormat>> = {}): ErrorRequestHandler {
  return (error, req, res, next) => handleError(error, req, res, next, req.errorFormat ? formats[req.errorFormat] : undefined);
}

const handleError = (...[error, req, res, , format]: [...Parameters<ErrorRequestHandler>, ErrorFormat | undefined]) => {
  const known = toApiError(error, req);
  if (res.headersSent) {
    // A stream was already under way; it cannot carry an envelope any more.
    req.log.error({ err: error }, 'error after the response started');
    res.destroy();
    return;
  }
  let apiError = known;
  if (!apiError) {
    req.log.error({ err: error }, 'unhandled error');
    apiError = new ApiError('internal_error');
  } else if (apiError.code === 'service_unavailable') {
    // Refusals while the server stops, or for a part that is not configured, are expected: no stack trace,
    // and no error-level line per refused request during every deployment.
    req.log.warn({ code: apiError.code }, apiError.message);
  } else if (apiError.status >= 500) {
    req.log.error({ err: error }, apiError.message);
  }
  for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
  if (format) {
    const rendered = format(apiError, req);
    for (const [name, value] of Object.entries(rendered.headers ?? {})) res.setHeader(name, value);
    res.status(rendered.status).json(rendered.body);
    return;
  }
  res.status(apiError.status).json(envelope(apiError, req.id, req));
};

export const errorHandler: ErrorRequestHandler = createErrorHandler();

declare module 'express-serve-static-core' {
  interface Request {
    /** The `x-error-format` of the operation this request reached, if it has one. */
    errorFormat?: string;
  }
}
