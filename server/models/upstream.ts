// What the providers of remote upstreams share: turning an upstream's HTTP failure into an UpstreamError the
// gateway can act on, without letting the provider's credential travel along in a message or a cause.
import { countTokens } from './local.ts';
import { textOf, UpstreamError, type ChatCompletionChunk, type CompletionUsage, type ProviderChatRequest } from './types.ts';

/** Seconds from `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, rounded up; undefined when absent. */
export function retryAfterSeconds(headers: Pick<Headers, 'get'> | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return Math.ceil(ms / 1000);
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** Replaces every occurrence of a secret, so upstream messages that echo a credential cannot leak it. */
export function scrubber(secrets: (string | undefined)[]): (text: string) => string {
  const present = secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length >= 4);
  return (text) => present.reduce((out, secret) => out.replaceAll(secret, '[redacted]'), text);
}

/**
 * The failure an upstream HTTP status means. The upstream rejecting this server's own credentials is a
 * server-side fault (502, and another provider may do), not the caller's.
 */
export function failureOfStatus(status: number, message: string, retryAfter: number | undefined): UpstreamError {
  if (status === 429) return new UpstreamError('rate_limited', message, { status, ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }) });
  if (status === 408) return new UpstreamError('timeout', message, { status });
  if (status >= 500) return new UpstreamError('server', message, { status });
  if (status === 401 || status === 403) return new UpstreamError('server', `the provider rejected this server's credentials: ${message}`, { status });
  if (status === 404) return new UpstreamError('not_found', message, { status });
  return new UpstreamError('refused', message, { status });
}

/** The usage an upstream would have reported, estimated with the local token count, for streams without it. */
export function estimatedUsage(request: ProviderChatRequest, completionText: string): CompletionUsage {
  let prompt = 0;
  for (const message of request.messages) prompt += 1 + countTokens(textOf('content' in message ? message.content : ''));
  const completion = countTokens(completionText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The text and tool-call arguments a chunk adds, for usage estimates. */
export function chunkText(chunk: ChatCompletionChunk): string {
  let text = '';
  for (const choice of chunk.choices) {
    text += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? []) text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  }
  return text;
}

/** The abort reason as an error to rethrow: the SDKs end an aborted stream quietly, the gateway must not. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}
