// The playground's one way to the API: the project's typed client (openapi-fetch over the generated
// `paths`), a credential kept in this browser, and every failure turned into the envelope's message.
import { createOpenAgentClient, OpenAgentError, type OpenAgentClient, type Schemas } from '../../client/index.ts';

export type { Schemas } from '../../client/index.ts';
export type { RunEvent } from '../../client/index.ts';

/** The server's root: the page lives at `<root>/playground/`, so a path prefix in front of it is kept. */
export function apiRoot(): string {
  const path = location.pathname;
  const at = path.lastIndexOf('/playground');
  return location.origin + (at >= 0 ? path.slice(0, at) : '');
}

export interface Credential {
  /** An API key (`oaa_…`) or a session access token from a sign-in. */
  token: string;
  kind: 'api_key' | 'session';
  /** When a session token expires (ISO time); API keys are checked by the server. */
  expiresAt?: string;
}

const STORAGE_KEY = 'open-agent-api.playground.credential';

export function loadCredential(): Credential | null {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null') as Credential | null;
    if (!stored?.token) return null;
    if (stored.expiresAt && Date.parse(stored.expiresAt) <= Date.now()) return null;
    return stored;
  } catch {
    return null;
  }
}

export function storeCredential(credential: Credential | null): void {
  if (credential) localStorage.setItem(STORAGE_KEY, JSON.stringify(credential));
  else localStorage.removeItem(STORAGE_KEY);
}

export function clientFor(credential: Credential | null): OpenAgentClient {
  return createOpenAgentClient({ baseUrl: apiRoot(), ...(credential ? { apiKey: credential.token } : {}) });
}

/** A failed call, with the message of the API's error envelope (or of the network failure). */
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string | undefined;
  /** The envelope's `details`: which request fields were wrong. */
  readonly details: { field: string; message: string }[];

  constructor(message: string, status: number, code?: string, details: { field: string; message: string }[] = []) {
    super(message);
    this.name = 'ApiFailure';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

type Envelope = Schemas['Error'];

function isEnvelope(value: unknown): value is Envelope {
  return typeof (value as Envelope | undefined)?.error?.message === 'string';
}

function detailsOf(envelope: Envelope): { field: string; message: string }[] {
  return (envelope.error.details ?? []).map((detail) => ({ field: detail.path ?? '', message: detail.message }));
}

/** Whatever went wrong, as an ApiFailure whose message a person can read. */
export function failureOf(error: unknown): ApiFailure {
  if (error instanceof ApiFailure) return error;
  if (error instanceof OpenAgentError) {
    return error.body && isEnvelope(error.body)
      ? new ApiFailure(error.body.error.message, error.status, error.body.error.code, detailsOf(error.body))
      : new ApiFailure(error.status ? `The server answered HTTP ${error.status}.` : 'The stream ended before the run did.', error.status);
  }
  if (error instanceof TypeError) return new ApiFailure(`Could not reach the server (${error.message}).`, 0);
  return new ApiFailure(error instanceof Error ? error.message : String(error), 0);
}

/** Listeners told when the server refuses the credential, so that the page can sign out. */
const unauthorizedListeners = new Set<() => void>();

export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function raise(failure: ApiFailure): never {
  if (failure.status === 401) for (const listener of unauthorizedListeners) listener();
  throw failure;
}

/**
 * The data of an openapi-fetch call, or an ApiFailure carrying the envelope's message. Fetch errors
 * (the server is down) become failures too, so that every caller handles one kind of error.
 */
export async function data<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (error) {
    raise(failureOf(error));
  }
  if (result.response.ok) return result.data as T;
  if (isEnvelope(result.error)) {
    raise(new ApiFailure(result.error.error.message, result.response.status, result.error.error.code, detailsOf(result.error)));
  }
  raise(new ApiFailure(`The server answered HTTP ${result.response.status}.`, result.response.status));
}

/** Every item of a cursor-paginated list, following `next_cursor` (the playground's lists are short). */
export async function allPages<T>(
  page: (after: string | undefined) => Promise<{ data?: { data: T[]; has_more: boolean; next_cursor: string | null }; error?: unknown; response: Response }>,
  max = 1000,
): Promise<T[]> {
  const items: T[] = [];
  let after: string | undefined;
  for (;;) {
    const list = await data(page(after));
    items.push(...list.data);
    if (!list.has_more || !list.next_cursor || items.length >= max) return items;
    after = list.next_cursor;
  }
}

/** The events of a stream, with any failure (the request's or the stream's) raised as an ApiFailure. */
export async function* guardStream<T>(stream: AsyncGenerator<T>): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (error) {
    raise(failureOf(error));
  }
}
