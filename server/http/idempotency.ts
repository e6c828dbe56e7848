// Idempotency-Key on the operations that create something (`x-idempotent` in the contract), so that a
// client can retry after a lost connection without doing the work twice. The first request with a key
// claims it; what its handler answers is kept and replayed to every retry with the same request, a
// different request with that key is refused (422), and a retry while the first still runs gets 409.
// The glue drives it from the route table, so every marked operation behaves the same.
import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { RouteSpec, SseFrame } from '../../generated/server.gen.ts';
import type { Db, SqlValue } from '../store/db.ts';
import { ApiError } from '../errors.ts';
import { envelope } from './errors.ts';
import type { UploadedFile } from './uploads.ts';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** What a handler answered, in the shape the glue writes. */
export interface HandlerOutcome {
  status: number;
  headers?: Readonly<Record<string, string | number>>;
  body?: unknown;
  contentType?: string;
  stream?: AsyncIterable<SseFrame<unknown>>;
}

/** A kept answer: a JSON or text body, nothing (204), or the frames of an event stream. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
  contentType?: string;
  frames?: SseFrame<unknown>[];
}

export interface KeyScope {
  userId: string;
  operationId: string;
  key: string;
}

export type ClaimResult =
  | { outcome: 'claimed' }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' };

export interface IdempotencyStore {
  /** Takes the key for this request, or says why not: it was answered, it is being answered, or it was used for another request. */
  claim(scope: KeyScope, fingerprint: string, requestId: string): Promise<ClaimResult>;
  /** Keeps the answer of the request that holds the claim. */
  complete(scope: KeyScope, requestId: string, response: StoredResponse): Promise<void>;
  /** Gives the claim up without an answer, so that a retry runs again. */
  release(scope: KeyScope, requestId: string): Promise<void>;
  /** Extends the lease of a claim this request still holds: its process is alive and working on it. */
  renew(scope: KeyScope, requestId: string): Promise<void>;
  /** Deletes expired keys and abandoned claims; answers how many went. */
  prune(): Promise<number>;
}

export interface IdempotencyOptions {
  clock: () => number;
  /** How long an answered key is kept. */
  ttlSeconds: number;
}

// A claim is a lease that the request holding it renews while it runs (every CLAIM_RENEW_MS). A claim
// not renewed for CLAIM_LEASE_MS belongs to a process that is gone (killed, crashed, cut off from the
// database), and the next request with its key takes it over and runs again, as the README promises. A
// fixed lease long enough for the longest run kept such keys answering 409 for an hour after a crash.
export const CLAIM_LEASE_MS = 60 * 1000;
const CLAIM_RENEW_MS = 15 * 1000;
const PRUNE_EVERY_MS = 10 * 60 * 1000;
// A claim released between our failed insert and our read leaves nothing to read; the key is free again.
const CLAIM_ATTEMPTS = 3;

interface KeyRow {
  fingerprint: string;
  response: string | null;
}

export function createIdempotencyStore(db: Db, options: IdempotencyOptions): IdempotencyStore {
  const { clock } = options;
  let lastPrune = -Infinity;

  const scopeParams = (scope: KeyScope): SqlValue[] => [scope.userId, scope.operationId, scope.key];

  async function prune(): Promise<number> {
    const now = new Date(clock());
    lastPrune = now.getTime();
    const rows = await db.query(
      `DELETE FROM idempotency_keys
        WHERE expires_at <= $1 AND (response IS NOT NULL OR locked_until <= $1)
        RETURNING 1`,
      [now],
    );
    return rows.length;
  }

  return {
    async claim(scope, fingerprint, requestId) {
      const now = clock();
      if (now - lastPrune >= PRUNE_EVERY_MS) await prune();
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        // One statement, so that of two requests racing for a key exactly one gets it: a new key, an
        // answered key past its expiry, or a claim past its lease.
        const claimed = await db.query(
          `INSERT INTO idempotency_keys
             (user_id, operation_id, idempotency_key, fingerprint, request_id, created_at, locked_until, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (user_id, operation_id, idempotency_key) DO UPDATE SET
             fingerprint = excluded.fingerprint, request_id = excluded.request_id, status = NULL, response = NULL,
             created_at = excluded.created_at, locked_until = excluded.locked_until, expires_at = excluded.expires_at
           WHERE (idempotency_keys.response IS NOT NULL AND idempotency_keys.expires_at <= $6)
              OR (idempotency_keys.response IS NULL AND idempotency_keys.locked_until <= $6)
           RETURNING 1`,
          [
            ...scopeParams(scope),
            fingerprint,
            requestId,
            new Date(now),
            new Date(now + CLAIM_LEASE_MS),
            new Date(now + options.ttlSeconds * 1000),
          ],
        );
        if (claimed.length > 0) return { outcome: 'claimed' };
        const [held] = await db.query<KeyRow>(
          `SELECT fingerprint, response FROM idempotency_keys
            WHERE user_id = $1 AND operation_id = $2 AND idempotency_key = $3`,
          scopeParams(scope),
        );
        if (!held) continue;
        if (held.fingerprint !== fingerprint) return { outcome: 'mismatch' };
        if (held.response === null) return { outcome: 'in_progress' };
        return { outcome: 'replay', response: JSON.parse(held.response) as StoredResponse };
      }
      return { outcome: 'in_progress' };
    },

    async complete(scope, requestId, response) {
      await db.query(
        `UPDATE idempotency_keys SET status = $5, response = $6
          WHERE user_id = $1 AND operation_id = $2 AND idempotency_key = $3 AND request_id = $4 AND response IS NULL`,
        [...scopeParams(scope), requestId, response.status, JSON.stringify(response)],
      );
    },

    async renew(scope, requestId) {
      await db.query(
        `UPDATE idempotency_keys SET locked_until = $5
          WHERE user_id = $1 AND operation_id = $2 AND idempotency_key = $3 AND request_id = $4 AND response IS NULL`,
        [...scopeParams(scope), requestId, new Date(clock() + CLAIM_LEASE_MS)],
      );
    },

    async release(scope, requestId) {
      await db.query(
        `DELETE FROM idempotency_keys
          WHERE user_id = $1 AND operation_id = $2 AND idempotency_key = $3 AND request_id = $4 AND response IS NULL`,
        [...scopeParams(scope), requestId],
      );
    },

    prune,
  };
}

/** JSON with object keys sorted at every level, so that equal values have one text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** What makes two requests the same: method, path, query, body, and any uploaded files' contents. */
export function requestFingerprint(req: Request): string {
  const files = ((req.files as UploadedFile[] | undefined) ?? []).map((file) => ({
    field: file.fieldname,
    name: file.originalname,
    type: file.mimetype,
    sha256: sha256(file.buffer),
  }));
  return sha256(canonicalJson({ method: req.method, path: req.path, query: req.query, body: req.body ?? null, files }));
}

/** The handler's answer as it is kept. */
function storedOf(outcome: HandlerOutcome, frames?: SseFrame<unknown>[]): StoredResponse {
  const headers = Object.fromEntries(Object.entries(outcome.headers ?? {}).map(([name, value]) => [name, String(value)]));
  if (frames) return { status: outcome.status, headers, frames };
  if (outcome.contentType !== undefined) return { status: outcome.status, headers, contentType: outcome.contentType, body: outcome.body };
  return { status: outcome.status, headers, ...('body' in outcome ? { body: outcome.body } : {}) };
}

/** A kept answer in the shape the glue writes, a stream again for kept frames. */
export function outcomeOf(stored: StoredResponse): HandlerOutcome {
  const { status, headers } = stored;
  if (stored.frames) {
    const frames = stored.frames;
    return { status, headers, stream: (async function* () { yield* frames; })() };
  }
  if (stored.contentType !== undefined) return { status, headers, contentType: stored.contentType, body: stored.body };
  return { status, headers, ...('body' in stored ? { body: stored.body } : {}) };
}

/** The claim a request holds while its operation runs. */
export interface IdempotencyClaim {
  /** The handler starts: from now on what it answers decides what is kept. */
  begin(): void;
  readonly started: boolean;
  /** The handler answered: keeps the answer (a stream once it ends) and returns it to be written. */
  settle(outcome: HandlerOutcome): Promise<HandlerOutcome>;
  /** The handler threw: a 4xx is the answer and is kept; anything else is forgotten, so a retry runs again. */
  fail(error: unknown): Promise<void>;
  /** Gives the claim up: the request was refused before the handler ran. */
  release(): Promise<void>;
}

/**
 * Follows a handler's stream as it is written, keeping its frames. When the stream ends the frames are
 * kept; when the handler's stream fails, the claim is given up. When the client goes away midway, the
 * stream is followed to its end anyway (a run goes on without its client), so that a retry gets all of it.
 */
async function* captured(
  source: AsyncIterable<SseFrame<unknown>>,
  onEnd: (frames: SseFrame<unknown>[]) => Promise<void>,
  onFailure: () => Promise<void>,
): AsyncGenerator<SseFrame<unknown>> {
  // Iterated by hand: a `for await` would close the source when our consumer stops early.
  const iterator = source[Symbol.asyncIterator]();
  const frames: SseFrame<unknown>[] = [];
  let state = 'open' as 'open' | 'ended' | 'failed';
  try {
    for (;;) {
      let next: IteratorResult<SseFrame<unknown>>;
      try {
        next = await iterator.next();
      } catch (error) {
        state = 'failed';
        throw error;
      }
      if (next.done) {
        state = 'ended';
        break;
      }
      frames.push(next.value);
      yield next.value;
    }
  } finally {
    if (state === 'ended') await onEnd(frames);
    else if (state === 'failed') await onFailure();
    else void drain(iterator, frames).then(onEnd, onFailure);
  }
}

async function drain(iterator: AsyncIterator<SseFrame<unknown>>, frames: SseFrame<unknown>[]): Promise<SseFrame<unknown>[]> {
  for (;;) {
    const next = await iterator.next();
    if (next.done) return frames;
    frames.push(next.value);
  }
}

function createClaim(store: IdempotencyStore, scope: KeyScope, requestId: string, log: Logger, shuttingDown: AbortSignal): IdempotencyClaim {
  // The lease is renewed for as long as this process works on the request; it stops with the answer.
  const renewal = setInterval(() => {
    store.renew(scope, requestId).catch((error: unknown) => log.warn({ err: error, idempotencyKey: scope.key }, 'could not renew an idempotency claim'));
  }, CLAIM_RENEW_MS);
  renewal.unref();
  // A failure to write the answer leaves the claim held until its lease ends: retries then get 409 for
  // that while, where forgetting it at once would let a retry do the work twice.
  const keep = async (response: StoredResponse) => {
    clearInterval(renewal);
    try {
      await store.complete(scope, requestId, response);
    } catch (error) {
      log.error({ err: error, idempotencyKey: scope.key }, 'could not keep the answer for an idempotency key');
    }
  };
  const forget = async () => {
    clearInterval(renewal);
    try {
      await store.release(scope, requestId);
    } catch (error) {
      log.warn({ err: error, idempotencyKey: scope.key }, 'could not release an idempotency key');
    }
  };
  // `started` is a data property, not a getter: V8 keeps an object literal's accessors in old space, where
  // they hold their closures (and all this claim's state) past every young collection (see
  // HandlerRequest in server/http/operations.ts).
  const claim: IdempotencyClaim & { started: boolean } = {
    started: false,
    begin() {
      claim.started = true;
    },
    async settle(outcome) {
      if (outcome.status >= 500) {
        await forget();
        return outcome;
      }
      if (!outcome.stream) {
        await keep(storedOf(outcome));
        return outcome;
      }
      // A stream cut short by shutdown did not finish its work; another instance should redo it.
      const onEnd = (frames: SseFrame<unknown>[]) => (shuttingDown.aborted ? forget() : keep(storedOf(outcome, frames)));
      return { ...outcome, stream: captured(outcome.stream, onEnd, forget) };
    },
    async fail(error) {
      if (error instanceof ApiError && error.status < 500) {
        await keep({ status: error.status, headers: { ...error.headers }, body: envelope(error, requestId) });
      } else {
        await forget();
      }
    },
    release: forget,
  };
  return claim;
}

export interface IdempotencyStepOptions {
  store: IdempotencyStore;
  shuttingDown: AbortSignal;
  /** Writes a kept answer the way the glue writes a handler's. */
  replay(req: Request, res: Response, outcome: HandlerOutcome): Promise<void>;
}

/**
 * Claims the request's Idempotency-Key, after the body is parsed and validated (the fingerprint needs
 * it) and before the operation's guards and handler: a replay is answered here and costs no quota.
 */
export function claimIdempotencyKey(route: RouteSpec, options: IdempotencyStepOptions): RequestHandler {
  return async (req, res, next) => {
    const key = req.headers[IDEMPOTENCY_KEY_HEADER];
    if (typeof key !== 'string' || !req.principal) {
      next();
      return;
    }
    const scope: KeyScope = { userId: req.principal.userId, operationId: route.operationId, key };
    const result = await options.store.claim(scope, requestFingerprint(req), req.id);
    if (result.outcome === 'replay') {
      res.setHeader(REPLAYED_HEADER, 'true');
      await options.replay(req, res, outcomeOf(result.response));
      return;
    }
    if (result.outcome === 'in_progress') {
      throw new ApiError('request_in_progress', 'A request with this Idempotency-Key is still in progress; retry when it has finished.');
    }
    if (result.outcome === 'mismatch') {
      throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
    }
    const claim = createClaim(options.store, scope, req.id, req.log, options.shuttingDown);
    req.idempotency = claim;
    // Refused before the handler ran (rate limit, quota): nothing was done, so nothing is kept.
    res.once('close', () => {
      if (!claim.started) void claim.release();
    });
    next();
  };
}

declare module 'express-serve-static-core' {
  interface Request {
    idempotency?: IdempotencyClaim;
  }
}
