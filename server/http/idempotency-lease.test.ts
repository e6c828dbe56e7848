// A claim on an Idempotency-Key left by a process that died mid-request (kill -9) is released: the
// claim is a lease its process renews while it works, so a claim nobody renews is taken over by the
// next request with the key once the lease runs out, within a minute rather than the hour it used to be.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { CLAIM_LEASE_MS, createIdempotencyStore, type KeyScope } from './idempotency.ts';

for (const engine of await availableEngines()) {
  describe(`idempotency claims of a dead process on ${engine}`, () => {
    let database: TestDatabase;
    let now = Date.UTC(2026, 10, 24, 6);
    let scope: KeyScope;

    beforeAll(async () => {
      database = await createTestDatabase(engine);
      const { user } = await findOrCreateUser(database.db, 'lease@example.com');
      scope = { userId: user.id, operationId: 'createAgent', key: 'k1' };
    });
    afterAll(async () => {
      await database?.drop();
    });

    it('lets a retry take over a claim nobody renews, and not one that is renewed', async () => {
      const store = createIdempotencyStore(database.db, { clock: () => now, ttlSeconds: 86_400 });
      expect(await store.claim(scope, 'f', 'req_dead')).toEqual({ outcome: 'claimed' });
      // The process holding it is alive and renews its lease: a retry still waits.
      now += CLAIM_LEASE_MS - 1000;
      await store.renew(scope, 'req_dead');
      now += CLAIM_LEASE_MS - 1000;
      expect(await store.claim(scope, 'f', 'req_retry')).toEqual({ outcome: 'in_progress' });
      // The process was killed: nobody renews; after the lease the retry runs.
      now += 2000;
      expect(await store.claim(scope, 'f', 'req_retry')).toEqual({ outcome: 'claimed' });
      // The dead request can no longer answer for the key.
      await store.complete(scope, 'req_dead', { status: 201, headers: {}, body: { from: 'dead' } });
      await store.complete(scope, 'req_retry', { status: 201, headers: {}, body: { from: 'retry' } });
      expect(await store.claim(scope, 'f', 'req_third')).toEqual({ outcome: 'replay', response: { status: 201, headers: {}, body: { from: 'retry' } } });
    });
  });
}
