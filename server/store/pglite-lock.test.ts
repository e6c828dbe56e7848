// The PGlite lock file after kill -9: it names the dead server's pid, which may belong to an unrelated
// live process by the next start. The lock also names the holder's start time, so such a lock is stale
// and the start goes on; a lock of a live server still keeps a second one out, and says what to do.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, processStartTime } from './pglite.ts';

describe.runIf(process.platform === 'linux')('the PGlite data directory lock', () => {
  let unrelated: ChildProcess;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-lock-'));
  const lockFile = path.join(dataDir, 'open-agent-api.lock');

  beforeAll(() => {
    // A live process that is not a server: the pid a dead server's lock names after reuse.
    unrelated = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  });
  afterAll(() => {
    unrelated.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts over a lock whose pid now belongs to another live process', { timeout: 60_000 }, async () => {
    const started = processStartTime(unrelated.pid!);
    expect(started).toMatch(/^\d+$/);
    writeFileSync(lockFile, `${unrelated.pid} ${Number(started) - 1000}`);
    const db = await openPglite({ dataDir });
    await db.close();
  });

  it('refuses a lock held by a live process, naming the file to delete if it is stale', { timeout: 60_000 }, async () => {
    writeFileSync(lockFile, `${unrelated.pid} ${processStartTime(unrelated.pid!)}`);
    await expect(openPglite({ dataDir })).rejects.toThrow(/in use by process .*delete .*open-agent-api\.lock/);
  });
});
