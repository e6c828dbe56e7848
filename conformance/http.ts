// Talks HTTP to the server under test, one operation of the contract at a time, and judges every answer
// by the contract: the status is declared, the content type is declared for it, the body (or each
// server-sent event) matches its schema, and errors use the one envelope with a matching request id.
import { createParser } from 'eventsource-parser';
import type { Contract, OperationId, OperationSpec, ResponseSpec } from './contract.ts';
import type { Recorder } from './report.ts';

/** Stops the check that made the request; what went wrong is already recorded. */
export class Halt extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Halt';
  }
}

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
  /** `data` parsed, or undefined for a terminator such as `[DONE]`. */
  json: unknown;
}

export interface Exchange {
  operationId: OperationId;
  status: number;
  headers: Headers;
  /** The media type without parameters, lower case, e.g. `application/json`. */
  mediaType: string | undefined;
  text: string;
  /** The JSON body, when there is one. */
  json: unknown;
  /** The events, for a `text/event-stream` answer. */
  events: SseEvent[] | undefined;
  /** Whether the answer matched the contract. */
  valid: boolean;
}

export type Caller = 'primary' | 'secondary' | 'none' | { bearer: string } | { apiKey: string };

export interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, string | number>;
  body?: unknown;
  /** Sent as is, as application/json, instead of `body`: for malformed JSON. */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Whose credential goes with the request; the primary key for secured operations by default. */
  as?: Caller;
  accept?: string;
  /** The statuses the check expects; anything else is recorded against the operation. */
  expect: number | readonly number[];
  /** Keep going when the status is unexpected (default: stop the check). */
  halt?: boolean;
  redirect?: 'manual';
  /** Cleanup requests: judged, but nothing is recorded. */
  quiet?: boolean;
  /**
   * A side check (credentials): judged, but an expected answer does not by itself make the operation
   * pass. Probes are refused before any lookup, so a 404 to one means the route is missing.
   */
  probe?: boolean;
}

export interface ClientOptions {
  baseUrl: string;
  contract: Contract;
  recorder: Recorder;
  primaryKey: string;
  secondaryKey: string | undefined;
  timeoutMs: number;
  /** How often a 429 is retried after waiting its Retry-After. */
  maxRetries: number;
  /** The longest Retry-After the kit waits, in seconds. */
  maxRetryAfterSeconds: number;
  sleep: (ms: number) => Promise<void>;
}

interface ErrorEnvelope {
  error: { code: string; message: string; details?: unknown[]; request_id: string };
}

function isEnvelope(value: unknown): value is ErrorEnvelope {
  const error = (value as ErrorEnvelope | undefined)?.error;
  return typeof error === 'object' && error !== null && typeof error.code === 'string';
}

function describeError(exchange: Exchange): string {
  return isEnvelope(exchange.json) ? ` ${exchange.json.error.code}: ${exchange.json.error.message}` : '';
}

function mediaTypeOf(headers: Headers): string | undefined {
  return headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() || undefined;
}

function declaredMedia(spec: ResponseSpec, mediaType: string): string | undefined {
  for (const declared of spec.content.keys()) {
    if (declared === mediaType || declared === '*/*') return declared;
    if (declared.endsWith('/*') && mediaType.startsWith(declared.slice(0, -1))) return declared;
  }
  return undefined;
}

function parseEventStream(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({
    onEvent(event) {
      events.push({ id: event.id, event: event.event, data: event.data, json: undefined });
    },
  });
  parser.feed(text);
  return events;
}

/** fetch's own message ("fetch failed") with the cause that says why (ECONNREFUSED, a timeout, …). */
export function networkError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message;
  return `${(error as Error).message}${why ? ` (${why})` : ''}`;
}

const truncate = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}…` : text);

export class Client {
  readonly options: ClientOptions;
  /** Whether the latest answer matched the contract; a check that then crashes is blamed on it. */
  lastAnswerValid = true;

  constructor(options: ClientOptions) {
    this.options = options;
  }

  get contract(): Contract {
    return this.options.contract;
  }

  /** A URL for `operation` with its path parameters filled in. */
  url(operation: OperationSpec, params: Record<string, string> = {}, query: Record<string, string | number> = {}): string {
    const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined) throw new Error(`${operation.operationId} needs the path parameter ${name}.`);
      return encodeURIComponent(value);
    });
    const search = new URLSearchParams(Object.entries(query).map(([key, value]) => [key, String(value)]));
    return `${this.options.baseUrl}${path}${search.size ? `?${search}` : ''}`;
  }

  #credentialHeaders(operation: OperationSpec, caller: Caller | undefined): Record<string, string> {
    const who = caller ?? (operation.secured ? 'primary' : 'none');
    if (who === 'none') return {};
    if (who === 'primary') return { Authorization: `Bearer ${this.options.primaryKey}` };
    if (who === 'secondary') {
      if (!this.options.secondaryKey) throw new Error('No second API key was given.');
      return { Authorization: `Bearer ${this.options.secondaryKey}` };
    }
    if ('bearer' in who) return { Authorization: `Bearer ${who.bearer}` };
    return { 'X-API-Key': who.apiKey };
  }

  #defaultAccept(operation: OperationSpec): string {
    const types = new Set<string>();
    for (const [status, spec] of operation.responses) {
      if (!status.startsWith('2')) continue;
      for (const type of spec.content.keys()) if (type !== 'text/event-stream') types.add(type);
    }
    return types.size ? [...types].join(', ') : '*/*';
  }

  async call(operationId: OperationId, options: CallOptions): Promise<Exchange> {
    const operation = this.contract.operation(operationId);
    const expected = typeof options.expect === 'number' ? [options.expect] : options.expect;
    const headers: Record<string, string> = {
      Accept: options.accept ?? this.#defaultAccept(operation),
      ...this.#credentialHeaders(operation, options.as),
      ...options.headers,
    };
    let body: string | undefined;
    if (options.rawBody !== undefined) {
      body = options.rawBody;
      headers['Content-Type'] = 'application/json';
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] = 'application/json';
    }
    const url = this.url(operation, options.params, options.query);
    const label = `${operation.method} ${url.slice(this.options.baseUrl.length)}`;

    const { response, text } = await this.#send(operation, options, { url, label, headers, body, expected });
    const exchange = this.#judge(operation, response, text, options.quiet === true);
    const answered = expected.includes(exchange.status);
    if (options.quiet) return exchange;
    this.options.recorder.request(operationId, answered && !options.probe);
    if (answered) return exchange;

    const recorder = this.options.recorder;
    const envelope = isEnvelope(exchange.json) ? exchange.json.error : undefined;
    // A 404 where the contract declares none, or from an operation a probe found missing, is a missing route;
    // otherwise it is a resource the server lost, which is a failure.
    const routeMissing =
      exchange.status === 404 && (options.probe === true || !operation.responses.has('404') || recorder.isNotImplemented(operationId));
    if (exchange.status === 501) {
      recorder.notImplemented(operationId, `${label} answered 501${describeError(exchange)}`);
    } else if (routeMissing) {
      recorder.notImplemented(operationId, `${label} answered 404: the route does not exist`);
    } else if (exchange.status === 402 && envelope?.code === 'quota_exceeded') {
      recorder.skip(operationId, `${label} answered 402 quota_exceeded: the account's plan is used up (${envelope.message})`);
    } else if (exchange.status === 429 && envelope?.code === 'rate_limited') {
      recorder.skip(operationId, `${label} was still rate limited after ${this.options.maxRetries} retries`);
    } else {
      recorder.fail(
        operationId,
        `${label} answered ${exchange.status}${describeError(exchange)}; expected ${expected.join(' or ')}`,
      );
    }
    if (options.halt === false) return exchange;
    throw new Halt(`${label} answered ${exchange.status}`);
  }

  /** Sends the request; a 429 is judged, then retried after its Retry-After, a bounded number of times. */
  async #send(
    operation: OperationSpec,
    options: CallOptions,
    request: { url: string; label: string; headers: Record<string, string>; body: string | undefined; expected: readonly number[] },
  ): Promise<{ response: Response; text: string }> {
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      let text: string;
      try {
        response = await fetch(request.url, {
          method: operation.method,
          headers: request.headers,
          body: request.body,
          redirect: options.redirect ?? 'follow',
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        text = await response.text();
      } catch (error) {
        const reason = `${request.label} failed: ${networkError(error)}`;
        if (!options.quiet) {
          this.options.recorder.request(operation.operationId, false);
          this.options.recorder.fail(operation.operationId, reason);
        }
        throw new Halt(reason);
      }
      if (response.status !== 429 || request.expected.includes(429) || attempt >= this.options.maxRetries) return { response, text };
      if (!this.#judge(operation, response, text, options.quiet === true).valid) return { response, text };
      const wait = Math.min(Number(response.headers.get('retry-after') ?? '1') || 1, this.options.maxRetryAfterSeconds);
      await this.options.sleep(wait * 1000);
    }
  }

  /** Judges one answer by the contract and records what does not match. */
  #judge(operation: OperationSpec, response: Response, text: string, quiet: boolean): Exchange {
    const problems: string[] = [];
    const status = response.status;
    const mediaType = mediaTypeOf(response.headers);
    let json: unknown;
    let events: SseEvent[] | undefined;
    const requestId = response.headers.get('x-request-id');
    if (!requestId) problems.push(`answered ${status} without an X-Request-Id header`);

    const declared = this.contract.responseFor(operation, status);
    if (!declared) {
      problems.push(`answered ${status}, a status the contract does not declare for ${operation.operationId}`);
    } else {
      const { key, spec } = declared;
      for (const name of ['www-authenticate', 'retry-after']) {
        if (spec.headers.has(name) && !response.headers.has(name)) problems.push(`answered ${status} without the ${name} header`);
      }
      for (const [name, validate] of spec.headers) {
        const value = response.headers.get(name);
        const problem = value === null ? undefined : validate(value);
        if (problem) problems.push(`header ${name}: ${problem}`);
      }
      if (spec.content.size === 0) {
        if (text.length > 0 && (status < 300 || status >= 400)) {
          problems.push(`answered ${status} with a body, but the contract declares none for ${key}`);
        }
      } else if (!mediaType) {
        problems.push(`answered ${status} without a Content-Type; declared: ${[...spec.content.keys()].join(', ')}`);
      } else {
        const declaredType = declaredMedia(spec, mediaType);
        const media = declaredType ? spec.content.get(declaredType) : undefined;
        if (!media) {
          problems.push(`answered ${status} as ${mediaType}; declared: ${[...spec.content.keys()].join(', ')}`);
        } else if (mediaType === 'text/event-stream') {
          events = parseEventStream(text);
          events.forEach((event, index) => {
            if (media.terminator !== undefined && event.data === media.terminator) {
              if (index !== events!.length - 1) problems.push(`data: ${media.terminator} is not the last event`);
              return;
            }
            try {
              event.json = JSON.parse(event.data);
            } catch {
              problems.push(`event ${index + 1}'s data is not JSON: ${truncate(event.data, 120)}`);
              return;
            }
            const problem = media.validate(event.json);
            if (problem) problems.push(`event ${index + 1} (${truncate(event.data, 160)}) is off the contract: ${problem}`);
          });
          if (media.terminator !== undefined && events.at(-1)?.data !== media.terminator) {
            problems.push(`the stream does not end with data: ${media.terminator}`);
          }
        } else if (mediaType === 'application/json' || mediaType.endsWith('+json')) {
          try {
            json = JSON.parse(text);
          } catch {
            problems.push(`the ${status} body is not JSON: ${truncate(text, 120)}`);
          }
          if (json !== undefined) {
            const problem = media.validate(json);
            if (problem) problems.push(`the ${status} body is off the contract: ${problem} (body: ${truncate(text, 160)})`);
          }
        } else {
          const problem = media.validate(text);
          if (problem) problems.push(`the ${status} body is off the contract: ${problem}`);
        }
      }
    }
    if (status >= 400 && isEnvelope(json)) {
      if (requestId && json.error.request_id !== requestId) {
        problems.push(`error.request_id ${json.error.request_id} differs from X-Request-Id ${requestId}`);
      }
      const statusOfCode = this.contract.statusOfCode.get(json.error.code);
      if (statusOfCode !== undefined && statusOfCode !== status) {
        problems.push(`error code ${json.error.code} belongs with ${statusOfCode}, but the status is ${status}`);
      }
    }
    if (!quiet) {
      this.lastAnswerValid = problems.length === 0;
      const label = `${operation.method} ${new URL(response.url || this.options.baseUrl).pathname}`;
      for (const problem of problems) this.options.recorder.fail(operation.operationId, `${label} ${problem}`);
    }
    return { operationId: operation.operationId, status, headers: response.headers, mediaType, text, json, events, valid: problems.length === 0 };
  }

  /** A request to no operation of the contract, for the checks of unknown routes and methods. */
  async raw(method: string, path: string): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
    const response = await fetch(`${this.options.baseUrl}${path}`, {
      method,
      headers: { Accept: 'application/json', Authorization: `Bearer ${this.options.primaryKey}` },
      signal: AbortSignal.timeout(this.options.timeoutMs),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  }
}
