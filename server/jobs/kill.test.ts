// A job survives kill -9 of the process that held it: another process takes it once pg-boss sees the
// holder's heartbeat stop, and the job's effect happens once.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logger.ts';
import { availableEngines, createTestDatabase } from '../testing/database.ts';
import { spawnNode } from '../testing/processes.ts';
import { createJobs, JOBS_SCHEMA, type Jobs } from './jobs.ts';

const KIND = 'test.held';

describe.runIf((await availableEngines()).includes('postgres'))('a job whose process is killed', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let jobs: Jobs;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    await database.db.exec('CREATE TABLE held_effects (key text PRIMARY KEY, attempt integer NOT NULL)');
    jobs = createJobs({ db: database.db, logger: createLogger('silent'), instanceId: 'survivor' });
    await jobs.start();
  });
  afterAll(async () => {
    await jobs?.stop(1000);
    await database?.drop();
  });

  it('is done by another process, once, after kill -9 of its holder', async () => {
    let held: (id: string) => void = () => undefined;
    const holding = new Promise<string>((resolve) => (held = resolve));
    const holder = spawnNode(['server/jobs/testdata/holder.ts', database.url!, KIND], {}, (line) => {
      const match = /^holding (\S+)/.exec(line);
      if (match) held(match[1]!);
    });
    const jobId = await holding;
    expect(await holder.kill('SIGKILL')).toBeNull();

    const runs: number[] = [];
    await jobs.register<{ work: string }>(KIND, async (_payload, job) => {
      runs.push(job.attempt);
      // The effect, idempotent: a second run would change nothing.
      await database.db.query('INSERT INTO held_effects (key, attempt) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [job.id, job.attempt]);
    });
    await vi.waitFor(async () => expect(await jobs.pending(KIND)).toBe(0), { timeout: 60_000, interval: 250 });

    expect(runs).toHaveLength(1);
    expect(runs[0]).toBeGreaterThanOrEqual(1);
    const effects = await database.db.query<{ key: string }>('SELECT key FROM held_effects');
    expect(effects).toEqual([{ key: jobId }]);
    const [row] = await database.db.query<{ state: string }>(`SELECT state FROM ${JOBS_SCHEMA}.job WHERE id = $1`, [jobId]);
    expect(row?.state).toBe('completed');
  });
});
