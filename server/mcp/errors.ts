// How /mcp answers errors: as JSON-RPC error responses, the shape MCP clients read, with the HTTP status
// the Streamable HTTP transport gives them. An answer the SDK's transport made itself (405 for GET and
// DELETE, 406 without the right Accept, a bad `_meta` envelope) goes out as the SDK wrote it; our own
// refusals (a request off the contract, no credential, a rate limit) get the code JSON-RPC or the SDK uses
// for them, with our catalog code and the request id in `data`.
import { jsonRpcIdOf } from '../a2a/errors.ts';
import { ApiError, type ErrorCode } from '../errors.ts';

/** Our codes for the statuses the SDK's transport answers. */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** An error answer of the SDK's transport, passed on with its status, body and `Allow`. */
export class McpTransportError extends ApiError {
  readonly body: unknown;

  constructor(status: number, body: unknown, headers: Record<string, string>) {
    const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
    super(CODE_BY_STATUS[status] ?? 'internal_error', typeof message === 'string' ? message : undefined, { headers });
    this.body = body;
  }
}

/** The SDK's code for errors of the transport rather than of a method. */
const TRANSPORT_ERROR = -32000;

function rpcCodeOf(error: ApiError): number {
  if (error.code === 'invalid_json') return -32700;
  if (error.code === 'validation_error' || error.code === 'invalid_request') return -32600;
  if (error.status >= 500) return -32603;
  return TRANSPORT_ERROR;
}

export interface McpErrorAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * An error as /mcp answers it. A 401 challenges with the protected resource metadata (RFC 9728), as an MCP
 * client expects to find its authorization server there.
 */
export function mcpJsonRpcError(error: ApiError, request: { body: unknown; id: string }, metadataUrl: string): McpErrorAnswer {
  const headers: Record<string, string> = {};
  if (error.status === 401) {
    const sent = /invalid_token/.test(error.headers['WWW-Authenticate'] ?? '');
    headers['WWW-Authenticate'] = `Bearer resource_metadata="${metadataUrl}"${sent ? ', error="invalid_token"' : ''}`;
  }
  if (error instanceof McpTransportError && error.body) return { status: error.status, body: error.body, headers };
  const details = error.details?.map((problem) => ({ message: problem.message, ...(problem.field ? { field: problem.field } : {}) }));
  return {
    status: error.status,
    headers,
    body: {
      jsonrpc: '2.0',
      id: jsonRpcIdOf(request.body),
      error: { code: rpcCodeOf(error), message: error.message, data: { code: error.code, request_id: request.id, ...(details?.length ? { details } : {}) } },
    },
  };
}
