import type { components } from '../../generated/openapi.gen.ts';
import { notFound } from '../errors.ts';
import type { Principal } from './principal.ts';
import { one, type Queryable } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';
import { hashSecret, randomSecret } from './secrets.ts';

export type ApiKey = components['schemas']['ApiKey'];
export type ApiKeyWithSecret = components['schemas']['ApiKeyWithSecret'];

export const API_KEY_PREFIX = 'oaa';

interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
}

const COLUMNS = 'id, name, prefix, created_at, last_used_at, expires_at';

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    object: 'api_key',
    name: row.name,
    prefix: row.prefix,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
  };
}

export function isApiKey(credential: string): boolean {
  return credential.startsWith(`${API_KEY_PREFIX}_`);
}

export interface ApiKeyStoreOptions {
  clock: () => number;
  /** How often at most `last_used_at` is written for one key, so that authenticating stays a read. */
  lastUsedResolutionMs?: number;
  /**
   * How long a key that authenticated may be trusted from memory, in milliseconds (0: always read). Keys
   * are looked up on every request; a revoked key stops working at once in the process that revoked it
   * and within this time in the others.
   */
  cacheTtlMs?: number;
}

interface KeyRow {
  id: string;
  user_id: string;
  expires_at: Date | null;
}

export function createApiKeyStore(db: Queryable, options: ApiKeyStoreOptions) {
  const resolution = options.lastUsedResolutionMs ?? 60_000;
  const cacheTtlMs = options.cacheTtlMs ?? 0;
  const lastWritten = new Map<string, number>();
  /** Keys that authenticated, by secret hash; the secrets themselves are never kept. */
  const cache = new Map<string, { row: KeyRow; expiresAt: number }>();

  async function lookUp(hash: string): Promise<KeyRow | undefined> {
    const hit = cache.get(hash);
    if (hit && hit.expiresAt > performance.now()) return hit.row;
    const row = await one<KeyRow>(db, 'SELECT id, user_id, expires_at FROM api_keys WHERE secret_hash = $1', [hash]);
    cache.delete(hash);
    if (row && cacheTtlMs > 0) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      if (cache.size >= 10_000) cache.delete(cache.keys().next().value!);
      cache.set(hash, { row, expiresAt: performance.now() + cacheTtlMs });
    }
    return row;
  }

  return {
    async create(userId: string, input: { name: string; expires_at?: string }): Promise<ApiKeyWithSecret> {
      const secret = randomSecret(API_KEY_PREFIX);
      const row = await one<ApiKeyRow>(
        db,
        `INSERT INTO api_keys (id, user_id, name, prefix, secret_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
        [newId('key'), userId, input.name, secret.slice(0, 10), hashSecret(secret), input.expires_at ?? null],
      );
      return { ...toApiKey(row!), secret };
    },

    async list(userId: string, request: PageRequest): Promise<Page<ApiKey>> {
      const limit = limitOf(request);
      const rows = await db.query<ApiKeyRow>(
        `SELECT ${COLUMNS} FROM api_keys WHERE user_id = $1 AND ($2::text IS NULL OR id < $2)
         ORDER BY id DESC LIMIT $3`,
        [userId, cursorOf(request, 'key'), limit + 1],
      );
      return toPage(rows, limit, toApiKey);
    },

    async get(userId: string, keyId: string): Promise<ApiKey> {
      const row = await one<ApiKeyRow>(db, `SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND user_id = $2`, [keyId, userId]);
      if (!row) throw notFound('API key', keyId);
      return toApiKey(row);
    },

    async remove(userId: string, keyId: string): Promise<void> {
      const rows = await db.query('DELETE FROM api_keys WHERE id = $1 AND user_id = $2 RETURNING id', [keyId, userId]);
      if (rows.length === 0) throw notFound('API key', keyId);
      lastWritten.delete(keyId);
      for (const [hash, entry] of cache) if (entry.row.id === keyId) cache.delete(hash);
    },

    async authenticate(secret: string): Promise<Principal | null> {
      const row = await lookUp(hashSecret(secret));
      const now = options.clock();
      if (!row || (row.expires_at && row.expires_at.getTime() <= now)) return null;
      if (now - (lastWritten.get(row.id) ?? 0) >= resolution) {
        lastWritten.set(row.id, now);
        await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = $1', [row.id, new Date(now)]);
      }
      return { userId: row.user_id, credential: { kind: 'api_key', id: row.id } };
    },
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;
