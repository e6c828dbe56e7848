// PostgreSQL going away under a running server, as a failover or a restart does: every connection of
// the server is terminated (pg_terminate_backend, error 57P01), busy or idle. The process survives,
// answers 503 service_unavailable while the database refuses connections, and recovers by itself.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines, postgresUrl } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

const engines = await availableEngines();

describe.runIf(engines.includes('postgres'))('losing the PostgreSQL connection', () => {
  let server: TestServer;
  let user: TestUser;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    server = await startTestServer({ engine: 'postgres', env: unlimitedPlanEnv() });
    user = await server.signUp();
    admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    const native = server.services.db.native as { connectionString: string };
    database = new URL(native.connectionString).pathname.slice(1);
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin?.end();
    await server?.close();
  });

  const terminateAll = () =>
    admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  const listAgents = () => fetch(`${server.url}/v1/agents`, { headers: { Authorization: `Bearer ${user.apiKey}` } });

  it('survives connections terminated while idle and while held in a transaction', async () => {
    expect((await listAgents()).status).toBe(200);
    // A transaction that holds its connection while the database drops it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transaction = server.services.db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await held;
      await tx.query('SELECT 1');
    });
    const outcome = transaction.then(
      () => 'committed',
      (error: unknown) => (error as { code?: string }).code ?? 'failed',
    );
    await sleep(50);
    await terminateAll();
    await sleep(100);
    release();
    expect(await outcome).toBe('service_unavailable');
    // The pool replaces what it lost; the next requests work.
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await listAgents()).status;
      expect([200, 503]).toContain(status);
    }
    expect(status).toBe(200);
  });

  it('answers 503 while the database refuses connections, and recovers when it is back', async () => {
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await terminateAll();
    const away = await listAgents();
    const body = (await away.json()) as { error: { code: string } };
    expect(away.status).toBe(503);
    expect(body.error.code).toBe('service_unavailable');
    expect((await fetch(`${server.url}/ready`)).status).toBe(503);
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    expect((await listAgents()).status).toBe(200);
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);
  });
});
