// A `fetch` for the provider SDKs over node:http(s) keep-alive agents. The SDK stays the provider client;
// only its transport changes. Node's built-in fetch builds WHATWG request objects, header lists and a web
// stream per body around each exchange: on the gateway, which relays every call, that was the largest
// single cost, about a quarter of the server's CPU per request under load. This one keeps what the SDKs
// rely on: a WHATWG Response, a streamed body for event streams, the abort signal (which aborts the
// upstream request and its body alike, with the signal's reason), redirects, compressed bodies, and
// fetch's errors (`TypeError: fetch failed` with the cause). JSON bodies, which the SDKs read whole
// anyway, are read before the Response is made, so that they cost no stream. Anything it does not handle
// (a Request object, a streamed or multipart body, another redirect mode) goes to the built-in fetch.
import http from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';

export interface HttpFetchOptions {
  /** The agents to send with; by default keep-alive agents shared by every provider. */
  httpAgent?: http.Agent;
  httpsAgent?: https.Agent;
  /** What handles the calls this one does not; the built-in fetch by default. */
  fallback?: typeof fetch;
}

// Idle connections close after 4 s (undici's default, which the built-in fetch used), or sooner when
// the upstream's Keep-Alive header says so.
const defaultHttpAgent = new http.Agent({ keepAlive: true, timeout: 4_000 });
const defaultHttpsAgent = new https.Agent({ keepAlive: true, timeout: 4_000 });

const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);
/** Headers that do not follow a redirect to another origin, as fetch drops them. */
const CROSS_ORIGIN_DROPPED = ['authorization', 'proxy-authorization', 'cookie'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

type Body = string | Uint8Array | undefined;

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function handles(input: string | URL | Request, init: RequestInit): input is string | URL {
  if (typeof input !== 'string' && !(input instanceof URL)) return false;
  const { body } = init;
  if (body !== undefined && body !== null && typeof body !== 'string' && !(body instanceof Uint8Array)) return false;
  // `manual` answers the redirect itself, as Node's fetch does (the MCP SDK follows within one origin).
  return init.redirect === undefined || init.redirect === 'follow' || init.redirect === 'manual';
}

function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const headers = Object.create(null) as Record<string, string>;
  if (init === undefined) return headers;
  const entries = init instanceof Headers || Array.isArray(init) ? init : Object.entries(init);
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
  }
  return headers;
}

/** Decoders for a Content-Encoding, in the order to apply them; undefined when one is unknown (the body then passes as it is, as fetch does). */
function decodersFor(contentEncoding: string | undefined): (() => NodeJS.ReadWriteStream)[] | undefined {
  if (!contentEncoding) return [];
  const decoders: (() => NodeJS.ReadWriteStream)[] = [];
  for (const coding of contentEncoding.toLowerCase().split(',').reverse()) {
    switch (coding.trim()) {
      case 'gzip':
      case 'x-gzip':
        decoders.push(() => zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
        break;
      case 'deflate':
        // zlib-wrapped, as the standard has it (fetch also takes raw deflate, which servers rarely send).
        decoders.push(() => zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
        break;
      case 'br':
        decoders.push(() => zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }));
        break;
      case 'identity':
      case '':
        break;
      default:
        return undefined;
    }
  }
  return decoders;
}

export function decodedBody(response: http.IncomingMessage): Readable {
  const decoders = decodersFor(response.headers['content-encoding']);
  if (!decoders || decoders.length === 0) return response;
  // Errors travel down the pipeline to its last stream, which is what is read.
  return pipeline([response, ...decoders.map((make) => make())], () => {}) as unknown as Readable;
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const media = contentType.split(';')[0]!.trim().toLowerCase();
  return media === 'application/json' || media.endsWith('+json');
}

/** Reads a whole body. */
function collect(source: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    source.on('data', (chunk: Buffer) => chunks.push(chunk));
    source.once('end', () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    source.once('error', reject);
    source.once('close', () => {
      if (!ended) reject(new Error('the connection closed before the body ended'));
    });
  });
}

/** A body as a web stream that pauses the socket while its reader is behind, and cancels it when the reader stops. */
function streamOf(source: Readable, response: http.IncomingMessage, failure: (error: unknown) => unknown, done: () => void): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        done();
        controller.error(failure(error));
      };
      source.on('data', (chunk: Buffer) => {
        if (settled) return;
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 1) <= 0) source.pause();
      });
      source.once('end', () => {
        if (settled) return;
        settled = true;
        done();
        controller.close();
      });
      source.once('error', fail);
      source.once('close', () => fail(new Error('the connection closed before the body ended')));
    },
    pull() {
      source.resume();
    },
    cancel() {
      settled = true;
      done();
      response.destroy();
      source.destroy();
    },
  });
}

export function createHttpFetch(options: HttpFetchOptions = {}): typeof fetch {
  const httpAgent = options.httpAgent ?? defaultHttpAgent;
  const httpsAgent = options.httpsAgent ?? defaultHttpsAgent;
  const fallback = options.fallback ?? ((input, init) => fetch(input, init));

  /** Sends one request; resolves with the response head. */
  function send(url: URL, method: string, headers: Record<string, string>, body: Body, signal: AbortSignal | undefined) {
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const https_ = url.protocol === 'https:';
      const request = (https_ ? https : http).request(url, { method, headers, agent: https_ ? httpsAgent : httpAgent });
      const onAbort = () => {
        reject(abortReason(signal!));
        request.destroy();
      };
      request.once('response', (response) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(response);
      });
      request.on('error', (error) => {
        signal?.removeEventListener('abort', onAbort);
        reject(signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: error }));
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      request.end(body);
    });
  }

  async function toResponse(response: http.IncomingMessage, url: URL, method: string, redirected: boolean, signal: AbortSignal | undefined): Promise<Response> {
    const status = response.statusCode ?? 0;
    const init: ResponseInit = { status, statusText: response.statusMessage ?? '', headers: pairsOf(response.rawHeaders) };
    let body: BodyInit | null = null;
    if (NULL_BODY.has(status) || method === 'HEAD') {
      response.resume();
    } else {
      const onAbort = () => response.destroy(abortReason(signal!) as Error);
      const done = () => signal?.removeEventListener('abort', onAbort);
      signal?.addEventListener('abort', onAbort, { once: true });
      const source = decodedBody(response);
      if (isJson(response.headers['content-type'])) {
        try {
          // Socket data lives in ArrayBuffers, never shared ones.
          body = (await collect(source)) as Uint8Array<ArrayBuffer>;
        } catch (error) {
          throw signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: error });
        } finally {
          done();
        }
      } else {
        body = streamOf(source, response, (error) => (signal?.aborted ? abortReason(signal) : new TypeError('terminated', { cause: error })), done);
      }
    }
    let answer: Response;
    try {
      answer = new Response(body, init);
    } catch (error) {
      // A status a Response cannot carry (below 200, say).
      response.destroy();
      throw new TypeError('fetch failed', { cause: error });
    }
    Object.defineProperties(answer, { url: { value: url.href }, redirected: { value: redirected } });
    return answer;
  }

  return async function httpFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    if (!handles(input, init)) return fallback(input, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortReason(signal);
    let url = new URL(input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return fallback(input, init);
    let method = (init.method ?? 'GET').toUpperCase();
    let body = (init.body ?? undefined) as Body;
    const headers = headerRecord(init.headers);
    // What fetch adds to a request that does not say otherwise.
    headers.accept ??= '*/*';
    headers['accept-encoding'] ??= url.protocol === 'https:' ? 'br, gzip, deflate' : 'gzip, deflate';
    headers['user-agent'] ??= 'node';
    if (typeof body === 'string') headers['content-type'] ??= 'text/plain;charset=UTF-8';
    for (let redirects = 0; ; redirects++) {
      if (body !== undefined) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
      const response = await send(url, method, headers, body, signal);
      const location = response.headers.location;
      const status = response.statusCode ?? 0;
      if (!REDIRECTS.has(status) || location === undefined || init.redirect === 'manual') return toResponse(response, url, method, redirects > 0, signal);
      response.resume();
      let next: URL;
      try {
        next = new URL(location, url);
      } catch (error) {
        throw new TypeError('fetch failed', { cause: error });
      }
      if (redirects >= MAX_REDIRECTS) throw new TypeError('fetch failed', { cause: new Error('redirect count exceeded') });
      if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error('URL scheme must be a HTTP(S) scheme') });
      if ((status === 303 && method !== 'GET' && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        for (const name of BODY_HEADERS) delete headers[name];
      }
      if (next.origin !== url.origin) for (const name of CROSS_ORIGIN_DROPPED) delete headers[name];
      url = next;
    }
  };
}

function pairsOf(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}
