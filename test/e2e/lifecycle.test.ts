// The server process as an operator runs it: starts on the embedded default, stops cleanly on SIGTERM.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from './server-process.ts';

describe('server process', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-lifecycle-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('serves with no configuration but a data directory, and exits 0 on SIGTERM', async () => {
    const server = await startServerProcess({ DATA_DIR: dataDir });
    const ready = await fetch(`${server.url}/ready`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok' } });
    expect(await server.kill('SIGTERM')).toBe(0);
    expect(server.logs.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  it('refuses a second server on the same PGlite data directory', async () => {
    const first = await startServerProcess({ DATA_DIR: dataDir });
    await expect(startServerProcess({ DATA_DIR: dataDir })).rejects.toThrow(/in use by process/);
    expect(await first.kill('SIGTERM')).toBe(0);
  });

  it('fails fast with a clear message on a bad setting', async () => {
    await expect(startServerProcess({ DATA_DIR: dataDir, PORT: 'eighty' })).rejects.toThrow(/PORT must be an integer/);
  });
});
