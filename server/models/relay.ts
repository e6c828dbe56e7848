// A lean keep-alive relay to an OpenAI-compatible upstream, in place of an SDK on the gateway's hot path.
// It sends the request body as the gateway built it, reads a JSON answer whole or an event stream chunk by
// chunk as the chunks arrive, and turns every way an upstream can fail into an UpstreamError the gateway
// can act on: a status (with its Retry-After), a transport failure, and an answer that is not what was
// asked for (HTML, an empty body, an event stream to a plain call, an error event inside a stream).
// Nothing here reads the environment, retries or times out: the gateway owns fallbacks and deadlines and
// aborts the signal it passes, which ends the upstream request and its body alike.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { decodedBody } from './http-fetch.ts';
import { failureOfStatus, retryAfterSeconds, scrubber } from './upstream.ts';
import { UpstreamError } from './types.ts';

export interface RelayOptions {
  /** The provider's name, for messages. */
  name: string;
  /** The API's base, such as `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Sent as a bearer token when set; local servers (Ollama, vLLM, llama.cpp) need none. */
  apiKey?: string;
  httpAgent?: http.Agent;
  httpsAgent?: https.Agent;
}

// Idle upstream connections close after 4 s (what the built-in fetch's pool does), sooner when the
// upstream's Keep-Alive header says so.
const sharedHttpAgent = new http.Agent({ keepAlive: true, timeout: 4_000 });
const sharedHttpsAgent = new https.Agent({ keepAlive: true, timeout: 4_000 });

/** How much of an error body is read for its message. */
const ERROR_BODY_LIMIT = 64 * 1024;

export interface Relay {
  /** Sends a request and resolves with the JSON value of a successful answer. */
  json(method: 'GET' | 'POST', path: string, body: string | undefined, signal: AbortSignal | undefined): Promise<unknown>;
  /**
   * Sends a request for an event stream and yields the JSON value of each event's data as it arrives,
   * until `[DONE]` or the end of the stream. An error event fails the iteration.
   */
  events(path: string, body: string, signal: AbortSignal | undefined): AsyncGenerator<unknown>;
  /**
   * The same stream as `events`, each event's data as the text the upstream sent, unparsed, until
   * `[DONE]` or the end of the stream; an event named `error` fails the iteration. The caller checks the
   * data (see openai.ts), so that events are forwarded as they came rather than parsed and written again.
   */
  rawEvents(path: string, body: string, signal: AbortSignal | undefined): AsyncGenerator<string>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Reads a body whole, or its first `limit` bytes. */
function collect(source: Readable, limit = Number.POSITIVE_INFINITY): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    const finish = () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    source.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        finish();
        source.destroy();
      }
    });
    source.once('end', () => {
      if (!ended) finish();
    });
    source.once('error', (error) => {
      if (!ended) reject(error);
    });
    source.once('close', () => {
      if (!ended) reject(new Error('the connection closed before the body ended'));
    });
  });
}

/** What an error body says: OpenAI's `{"error": {"message"}}`, another JSON message, or the start of the text. */
function messageOf(text: string): string {
  try {
    const value = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = value?.error;
    if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
    if (typeof error === 'string') return error;
    if (typeof value?.message === 'string') return value.message;
    if (typeof value?.detail === 'string') return value.detail;
  } catch {
    // Not JSON: the text itself says what it says.
  }
  const trimmed = text.trim().replace(/\s+/g, ' ');
  return trimmed ? trimmed.slice(0, 200) : 'no message';
}

/** A short description of an answer that is not what was asked for, without echoing it whole. */
function describe(contentType: string | undefined, size: number): string {
  if (size === 0) return 'an empty body';
  const media = mediaType(contentType);
  return `${size} bytes of ${media || 'an unnamed type'}`;
}

/**
 * The JSON value of an event's data; data that is not JSON, or an error in place of an answer, is the
 * upstream failing.
 */
export function parseEvent(name: string, scrub: (text: string) => string, data: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new UpstreamError('server', `${name} sent an event that is not JSON`);
  }
  const error = value && typeof value === 'object' ? (value as { error?: unknown }).error : undefined;
  if (error !== undefined && error !== null) throw new UpstreamError('server', `${name} failed during the stream: ${scrub(messageOf(data))}`);
  return value;
}

export function createRelay(options: RelayOptions): Relay {
  const base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  const secure = base.protocol === 'https:';
  if (!secure && base.protocol !== 'http:') throw new Error(`${options.name}: the base URL must be http or https`);
  const transport = secure ? https : http;
  const agent = secure ? (options.httpsAgent ?? sharedHttpsAgent) : (options.httpAgent ?? sharedHttpAgent);
  const scrub = scrubber([options.apiKey]);
  const authorization = options.apiKey ? `Bearer ${options.apiKey}` : undefined;
  const name = options.name;

  /** Sends one request; resolves with the answer's head once it arrives. */
  function send(method: string, path: string, body: string | undefined, accept: string, signal: AbortSignal | undefined): Promise<http.IncomingMessage> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { accept };
      if (authorization) headers.authorization = authorization;
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      const request = transport.request({
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        path: base.pathname + path + base.search,
        method,
        headers,
        agent,
      });
      const onAbort = () => request.destroy(abortReason(signal!) as Error);
      signal?.addEventListener('abort', onAbort, { once: true });
      request.once('response', (response) => {
        // From here the body's reader owns the abort; see `guard`.
        signal?.removeEventListener('abort', onAbort);
        resolve(response);
      });
      request.once('error', (error) => {
        signal?.removeEventListener('abort', onAbort);
        reject(signal?.aborted ? abortReason(signal) : new UpstreamError('network', `${name}: ${scrub(error.message)}`, { cause: error }));
      });
      request.end(body);
    });
  }

  /** Makes the signal end the body too; the returned function undoes it. */
  function guard(response: http.IncomingMessage, signal: AbortSignal | undefined): () => void {
    if (!signal) return () => {};
    const onAbort = () => response.destroy(abortReason(signal) as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }

  /** A failed transfer: the caller's abort as it is, anything else as the network failing. */
  const transferFailure = (error: unknown, signal: AbortSignal | undefined): unknown =>
    signal?.aborted ? abortReason(signal) : new UpstreamError('network', `${name}: the answer broke off (${scrub(error instanceof Error ? error.message : String(error))})`, { cause: error });

  /** Reads a failed answer's message and turns its status into an UpstreamError. */
  async function statusFailure(response: http.IncomingMessage, source: Readable): Promise<UpstreamError> {
    const status = response.statusCode ?? 0;
    let text = '';
    try {
      text = (await collect(source, ERROR_BODY_LIMIT)).toString('utf8');
    } catch {
      // The status alone says enough.
    }
    const headers = { get: (header: string) => [response.headers[header]].flat()[0] ?? null };
    return failureOfStatus(status, `${name}: ${scrub(messageOf(text))}`, retryAfterSeconds(headers));
  }

  async function* rawEvents(path: string, body: string, signal: AbortSignal | undefined): AsyncGenerator<string> {
    const response = await send('POST', path, body, 'text/event-stream', signal);
    const release = guard(response, signal);
    let complete = false;
    try {
      const source = decodedBody(response);
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) throw await statusFailure(response, source);
      if (mediaType(response.headers['content-type']) !== 'text/event-stream') {
        // A JSON error in place of a stream says what went wrong; anything else is not an answer.
        const raw = await collect(source, ERROR_BODY_LIMIT).catch(() => Buffer.alloc(0));
        const text = raw.toString('utf8');
        const said = text.includes('"error"') ? `: ${scrub(messageOf(text))}` : '';
        throw new UpstreamError('server', `${name} answered a stream request with ${describe(response.headers['content-type'], raw.length)}${said}`, { status });
      }
      const pending: string[] = [];
      let failure: UpstreamError | undefined;
      let done = false;
      const parser = createParser({
        onEvent(event) {
          if (done || failure) return;
          if (event.data === '[DONE]') {
            done = true;
            return;
          }
          if (event.event === 'error') {
            failure = new UpstreamError('server', `${name} failed during the stream: ${scrub(messageOf(event.data))}`);
            return;
          }
          pending.push(event.data);
        },
      });
      try {
        source.setEncoding('utf8');
        for await (const text of source as AsyncIterable<string>) {
          parser.feed(text);
          while (pending.length > 0) yield pending.shift()!;
          if (failure) throw failure;
        }
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        throw transferFailure(error, signal);
      }
      if (signal?.aborted) throw abortReason(signal);
      complete = true;
    } finally {
      release();
      // A consumer that stopped early, or a failure: the connection cannot be reused mid-body.
      if (!complete) response.destroy();
    }
  }

  return {
    async json(method, path, body, signal) {
      const response = await send(method, path, body, 'application/json', signal);
      const release = guard(response, signal);
      try {
        const source = decodedBody(response);
        const status = response.statusCode ?? 0;
        if (status < 200 || status >= 300) throw await statusFailure(response, source);
        let raw: Buffer;
        try {
          raw = await collect(source);
        } catch (error) {
          throw transferFailure(error, signal);
        }
        // Whatever the Content-Type says (some servers send JSON as text/plain): the body must parse.
        try {
          return JSON.parse(raw.toString('utf8'));
        } catch {
          throw new UpstreamError('server', `${name} answered ${status} with ${describe(response.headers['content-type'], raw.length)}, not JSON`, { status });
        }
      } finally {
        release();
      }
    },

    async *events(path, body, signal) {
      for await (const data of rawEvents(path, body, signal)) yield parseEvent(name, scrub, data);
    },

    rawEvents,
  };
}
