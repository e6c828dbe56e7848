// The API key cache that keeps authentication off the store on the hot path: revocation through the store
// takes effect at once in this process; expiry is checked on every use; other instances' revocations
// reach a cached key within its TTL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { createApiKeyStore } from './api-keys.ts';
import { findOrCreateUser } from './users.ts';

describe('API key cache', () => {
  let database: TestDatabase;
  let now = Date.UTC(2026, 10, 20, 12);
  beforeAll(async () => {
    database = await createTestDatabase('pglite');
  });
  afterAll(() => database?.drop());

  it('trusts a key from memory until it is revoked here, expires, or its TTL passes', async () => {
    const { user } = await findOrCreateUser(database.db, 'cache@example.com');
    const store = createApiKeyStore(database.db, { clock: () => now, cacheTtlMs: 60_000 });
    const uncached = createApiKeyStore(database.db, { clock: () => now });

    const revokedElsewhere = await store.create(user.id, { name: 'a' });
    expect(await store.authenticate(revokedElsewhere.secret)).toMatchObject({ userId: user.id, credential: { id: revokedElsewhere.id } });
    // Another instance revokes it: this one still trusts its cached entry; an uncached one does not.
    await uncached.remove(user.id, revokedElsewhere.id);
    expect(await store.authenticate(revokedElsewhere.secret)).not.toBeNull();
    expect(await uncached.authenticate(revokedElsewhere.secret)).toBeNull();

    const revokedHere = await store.create(user.id, { name: 'b' });
    expect(await store.authenticate(revokedHere.secret)).not.toBeNull();
    await store.remove(user.id, revokedHere.id);
    expect(await store.authenticate(revokedHere.secret)).toBeNull();

    const expiring = await store.create(user.id, { name: 'c', expires_at: new Date(now + 1000).toISOString() });
    expect(await store.authenticate(expiring.secret)).not.toBeNull();
    now += 2000;
    expect(await store.authenticate(expiring.secret)).toBeNull();
  });
});
