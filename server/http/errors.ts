// Renders an ApiError as the one envelope: the domain's field names become JSON pointers into the request,
// and the first of them becomes OpenAI's `param`.
import type { components } from '../../generated/openapi.gen.ts';
import { errorCatalog, type ApiError, type FieldLocation, type Problem } from '../errors.ts';

export type ErrorDetail = components['schemas']['ErrorDetail'];
export type ErrorEnvelope = components['schemas']['Error'];

/** The parts of a request a field may be in, to tell where a field the domain names came from. */
export interface RequestParts {
  query?: unknown;
  params?: unknown;
}

function has(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && Object.prototype.hasOwnProperty.call(value, key);
}

/** `messages[3].tool_call_id` → `messages/3/tool_call_id`, escaped as RFC 6901 asks. */
function segments(field: string): string[] {
  return field
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .filter(Boolean);
}

function locate(problem: Problem & { field: string }, request: RequestParts | undefined): FieldLocation {
  if (problem.in) return problem.in;
  const first = segments(problem.field)[0] ?? '';
  if (has(request?.query, first)) return 'query';
  if (has(request?.params, first)) return 'path';
  return 'body';
}

export function pointerOf(problem: Problem & { field: string }, request?: RequestParts): string {
  const escaped = segments(problem.field).map((segment) => segment.replaceAll('~', '~0').replaceAll('/', '~1'));
  return `/${[locate(problem, request), ...escaped].join('/')}`;
}

function detailOf(problem: Problem, request: RequestParts | undefined): ErrorDetail {
  const { field, in: _where, ...rest } = problem;
  return field ? { ...rest, path: pointerOf({ ...problem, field }, request) } : rest;
}

export function envelope(error: ApiError, requestId: string, request?: RequestParts): ErrorEnvelope {
  const details = error.details?.map((problem) => detailOf(problem, request));
  return {
    error: {
      code: error.code,
      type: errorCatalog[error.code].type,
      message: error.message,
      param: error.details?.find((problem) => problem.field)?.field ?? null,
      ...(details?.length ? { details } : {}),
      request_id: requestId,
    },
  };
}
