// A2A's errors and how its two bindings render them. A2A names nine errors of its own (-32001 to -32009
// in JSON-RPC; over HTTP+JSON an HTTP status and a `google.rpc.ErrorInfo` whose `reason` names the error);
// every other error of ours keeps its catalog status and becomes the nearest JSON-RPC code or
// `google.rpc.Status`.
import { ApiError, type ErrorCode } from '../errors.ts';

export const A2A_DOMAIN = 'a2a-protocol.org';
const OUR_DOMAIN = 'open-agent-api';

/**
 * A2A's errors: JSON-RPC code, the catalog code that gives the HTTP status, and the gRPC status name, as the
 * specification's table of error code mappings (section 5.4) has them.
 */
export const A2A_ERRORS = {
  TaskNotFound: { rpc: -32001, code: 'not_found', grpc: 'NOT_FOUND', reason: 'TASK_NOT_FOUND' },
  TaskNotCancelable: { rpc: -32002, code: 'conflict', grpc: 'FAILED_PRECONDITION', reason: 'TASK_NOT_CANCELABLE' },
  PushNotificationNotSupported: { rpc: -32003, code: 'invalid_request', grpc: 'UNIMPLEMENTED', reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' },
  UnsupportedOperation: { rpc: -32004, code: 'invalid_request', grpc: 'UNIMPLEMENTED', reason: 'UNSUPPORTED_OPERATION' },
  ContentTypeNotSupported: { rpc: -32005, code: 'unsupported_media_type', grpc: 'INVALID_ARGUMENT', reason: 'CONTENT_TYPE_NOT_SUPPORTED' },
  InvalidAgentResponse: { rpc: -32006, code: 'upstream_error', grpc: 'INTERNAL', reason: 'INVALID_AGENT_RESPONSE' },
  ExtendedAgentCardNotConfigured: { rpc: -32007, code: 'invalid_request', grpc: 'FAILED_PRECONDITION', reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' },
  ExtensionSupportRequired: { rpc: -32008, code: 'invalid_request', grpc: 'FAILED_PRECONDITION', reason: 'EXTENSION_SUPPORT_REQUIRED' },
  VersionNotSupported: { rpc: -32009, code: 'invalid_request', grpc: 'UNIMPLEMENTED', reason: 'VERSION_NOT_SUPPORTED' },
} as const satisfies Record<string, { rpc: number; code: ErrorCode; grpc: string; reason: string }>;

export type A2aErrorKind = keyof typeof A2A_ERRORS;

/** One of A2A's own errors. An ApiError, so that the HTTP layer gives it its status and logs it as any other. */
export class A2aError extends ApiError {
  readonly kind: A2aErrorKind;
  readonly metadata: Record<string, string>;

  constructor(kind: A2aErrorKind, message: string, metadata: Record<string, string> = {}) {
    super(A2A_ERRORS[kind].code, message);
    this.kind = kind;
    this.metadata = metadata;
  }
}

export const taskNotFound = (taskId: string) => new A2aError('TaskNotFound', `No task ${taskId}.`, { taskId });

/** gRPC status names by HTTP status, for errors that are not A2A's own. */
const GRPC_BY_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'RESOURCE_EXHAUSTED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  409: 'ABORTED',
  413: 'OUT_OF_RANGE',
  415: 'INVALID_ARGUMENT',
  422: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** The `google.rpc` details of an error: its ErrorInfo, and for invalid input a BadRequest naming the fields. */
function detailsOf(error: ApiError): Record<string, unknown>[] {
  const info =
    error instanceof A2aError
      ? { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: A2A_ERRORS[error.kind].reason, domain: A2A_DOMAIN, metadata: error.metadata }
      : { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: error.code.toUpperCase(), domain: OUR_DOMAIN };
  const violations = (error.details ?? []).filter((problem) => problem.field).map((problem) => ({ field: problem.field, description: problem.message }));
  return violations.length ? [info, { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations }] : [info];
}

/** An error as `google.rpc.Status`, A2A's HTTP+JSON error body. */
export function restError(error: ApiError): { status: number; body: { error: { code: number; status: string; message: string; details: Record<string, unknown>[] } } } {
  const grpc = error instanceof A2aError ? A2A_ERRORS[error.kind].grpc : (GRPC_BY_STATUS[error.status] ?? 'UNKNOWN');
  return { status: error.status, body: { error: { code: error.status, status: grpc, message: error.message, details: detailsOf(error) } } };
}

/** The JSON-RPC methods this server answers: 1.0's, and 0.3's for requests without `A2A-Version`. */
export const JSON_RPC_METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
] as const;

/** The JSON-RPC code of an error that is not A2A's own. */
function rpcCodeOf(error: ApiError, body: unknown): number {
  if (error.code === 'invalid_json') return -32700;
  if (error.code === 'validation_error') {
    const request = (body ?? {}) as { jsonrpc?: unknown; method?: unknown };
    if (request.jsonrpc !== '2.0' || typeof request.method !== 'string') return -32600;
    // A method this server does not know, or one of another version than the request says it speaks.
    if (!(JSON_RPC_METHODS as readonly string[]).includes(request.method) || error.details?.some((problem) => problem.field === 'method')) return -32601;
    return -32602;
  }
  if (error.code === 'invalid_request') return -32602;
  if (error.status >= 500) return -32603;
  return -32600;
}

export interface JsonRpcErrorBody {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string; data: Record<string, unknown>[] };
}

export function jsonRpcIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * An error as A2A 0.3's HTTP+JSON binding has it: JSON-RPC's error object as the body, under the error's
 * HTTP status; input off the contract is invalid params there, as there is no JSON-RPC envelope to blame.
 */
export function v03RestError(error: ApiError): { status: number; body: JsonRpcErrorBody['error'] } {
  const code =
    error instanceof A2aError ? A2A_ERRORS[error.kind].rpc
    : error.code === 'invalid_json' ? -32700
    : error.code === 'validation_error' || error.code === 'invalid_request' ? -32602
    : error.status >= 500 ? -32603
    : -32600;
  return { status: error.status, body: { code, message: error.message, data: detailsOf(error) } };
}

/** An error as a JSON-RPC error response. */
export function jsonRpcError(error: ApiError, id: string | number | null, body?: unknown): { status: number; body: JsonRpcErrorBody } {
  const code = error instanceof A2aError ? A2A_ERRORS[error.kind].rpc : rpcCodeOf(error, body);
  return {
    // A2A's own errors are answers of the method, over a request that worked: 200. Any other error is the
    // request's (off the contract, no credential, no such agent, a limit) and keeps its HTTP status.
    status: error instanceof A2aError ? 200 : error.status,
    body: { jsonrpc: '2.0', id, error: { code, message: error.message, data: detailsOf(error) } },
  };
}
