// The server process as an operator runs it: starts on the embedded default, stops cleanly on SIGTERM.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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

  // A supervisor or a shell pipeline that reads the log can go away first: every later line then fails
  // with EPIPE. The server must still stop on SIGTERM instead of retrying the write of its last lines forever.
  it('exits 0 on SIGTERM after whoever read its log has gone', async () => {
    const server = await startServerProcess({ DATA_DIR: dataDir });
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const stdout = server.child.stdout!;
    // The pipe closes while the server shuts down, so its next lines ("stopped") are the first to fail.
    const closed = new Promise<void>((resolve) =>
      stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('"msg":"shutting down"')) {
          stdout.destroy();
          resolve();
        }
      }),
    );
    const exited = server.kill('SIGTERM');
    await Promise.race([closed, exited]);
    expect(stdout.destroyed).toBe(true);
    const deadline = new AbortController();
    const hung = sleep(30_000, 'still running 30 s after SIGTERM', { signal: deadline.signal }).catch(() => 'cancelled');
    const outcome = await Promise.race([exited, hung]);
    deadline.abort();
    if (typeof outcome === 'string') await server.kill('SIGKILL');
    expect(outcome).toBe(0);
  });

  // main.ts turns on Node's compile cache, in the temporary directory unless NODE_COMPILE_CACHE says
  // otherwise, and writes it once listening, so that even a killed server leaves it for the next start.
  it('leaves its compiled modules in the compile cache once listening, even when killed', async () => {
    const cacheFiles = (dir: string) => (existsSync(path.join(dir, 'node-compile-cache')) ? readdirSync(path.join(dir, 'node-compile-cache'), { recursive: true }).length : 0);
    const temp = mkdtempSync(path.join(tmpdir(), 'oaa-compile-cache-'));
    const disabledTemp = mkdtempSync(path.join(tmpdir(), 'oaa-compile-cache-off-'));
    try {
      const server = await startServerProcess({ DATA_DIR: dataDir, TMPDIR: temp });
      // Served only once the listening callback, which writes the cache, has returned.
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      await server.kill('SIGKILL');
      expect(cacheFiles(temp)).toBeGreaterThan(100);

      const disabled = await startServerProcess({ DATA_DIR: dataDir, TMPDIR: disabledTemp, NODE_DISABLE_COMPILE_CACHE: '1' });
      expect((await fetch(`${disabled.url}/health`)).status).toBe(200);
      expect(await disabled.kill('SIGTERM')).toBe(0);
      expect(cacheFiles(disabledTemp)).toBe(0);
    } finally {
      rmSync(temp, { recursive: true, force: true });
      rmSync(disabledTemp, { recursive: true, force: true });
    }
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
