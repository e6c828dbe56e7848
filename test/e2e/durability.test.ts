// A write that was acknowledged survives `kill -9` of the server: on PGlite (DATA_DIR) and PostgreSQL.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { availableEngines, createTestDatabase, type TestDatabase } from '../../server/testing/database.ts';
import { runScript, teardownAfterAll } from './server-process.ts';

describe.each(await availableEngines())('durability on %s', (engine) => {
  const teardown = teardownAfterAll();

  it('keeps every acknowledged write after SIGKILL and a restart', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-durability-'));
    teardown.add(() => rmSync(dataDir, { recursive: true, force: true }));
    const env: Record<string, string> = { DATA_DIR: dataDir };
    if (engine === 'postgres') {
      const database: TestDatabase = await createTestDatabase('postgres');
      teardown.add(() => database.drop());
      env.DATABASE_URL = database.url!;
    }
    const apiKey = await runScript('scripts/create-key.ts', ['--email', 'durable@example.com'], env);
    expect(apiKey).toMatch(/^oaa_/);

    const first = await teardown.startServer(env);
    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const acknowledged = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await fetch(`${first.url}/v1/api-keys`, { method: 'POST', headers, body: JSON.stringify({ name: `k${i}` }) });
        expect(response.status).toBe(201);
        return ((await response.json()) as { id: string }).id;
      }),
    );
    await first.kill('SIGKILL');

    const second = await teardown.startServer(env);
    for (const id of acknowledged) {
      const response = await fetch(`${second.url}/v1/api-keys/${id}`, { headers });
      expect(response.status, id).toBe(200);
    }
    await second.kill('SIGTERM');
  });
});
