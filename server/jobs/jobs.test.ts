// The job queue on each engine: jobs run with their payload, a key keeps one pending job per key, a job
// enqueued in a transaction exists only if it commits, a failed attempt is retried and a delayed job runs
// once due (found by the due check: idle workers poll only once a minute), and a kind runs as many jobs at
// once as its concurrency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { createJobs, type JobContext, type Jobs } from './jobs.ts';

const logger = createLogger('silent');

/** Resolves with what the next `count` calls of a handler received. */
function recorder<P>() {
  const seen: { payload: P; job: JobContext }[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];
  return {
    seen,
    record(payload: P, job: JobContext) {
      seen.push({ payload, job });
      waiters = waiters.filter((waiter) => (seen.length >= waiter.count ? (waiter.resolve(), false) : true));
    },
    until(count: number): Promise<void> {
      if (seen.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

async function settled(jobs: Jobs, name: string): Promise<void> {
  while ((await jobs.pending(name)) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe.each(await availableEngines())('jobs on %s', (engine) => {
  let database: TestDatabase;
  let jobs: Jobs;

  beforeAll(async () => {
    database = await createTestDatabase(engine);
    jobs = createJobs({ db: database.db, logger, instanceId: 'inst_test' });
    await jobs.start();
  });
  afterAll(async () => {
    await jobs?.stop();
    await database?.drop();
  });

  it('runs a job with its payload', async () => {
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>('test.echo', async (payload, job) => calls.record(payload, job));
    const id = await jobs.enqueue('test.echo', { n: 7 });
    expect(id).toEqual(expect.any(String));
    await calls.until(1);
    expect(calls.seen[0]).toMatchObject({ payload: { n: 7 }, job: { id, attempt: 0 } });
    await settled(jobs, 'test.echo');
  });

  it('keeps one pending job per key', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>('test.keyed', async (payload, job) => {
      calls.record(payload, job);
      await gate;
    });
    expect(await jobs.enqueue('test.keyed', { n: 1 }, { key: 'doc_1' })).toEqual(expect.any(String));
    await calls.until(1);
    // Running: the same key is refused, another key is not.
    expect(await jobs.enqueue('test.keyed', { n: 2 }, { key: 'doc_1' })).toBeNull();
    expect(await jobs.enqueue('test.keyed', { n: 3 }, { key: 'doc_2' })).toEqual(expect.any(String));
    release();
    await calls.until(2);
    await settled(jobs, 'test.keyed');
    expect(calls.seen.map((call) => call.payload.n).sort()).toEqual([1, 3]);
    // Done: the key is free again.
    expect(await jobs.enqueue('test.keyed', { n: 4 }, { key: 'doc_1' })).toEqual(expect.any(String));
    await calls.until(3);
  });

  it('enqueues with a transaction: a job exists only if the transaction commits', async () => {
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>('test.tx', async (payload, job) => calls.record(payload, job));
    await expect(
      database.db.transaction(async (tx) => {
        await jobs.enqueue('test.tx', { n: 1 }, { tx });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await database.db.transaction((tx) => jobs.enqueue('test.tx', { n: 2 }, { tx }));
    await calls.until(1);
    await settled(jobs, 'test.tx');
    expect(calls.seen.map((call) => call.payload.n)).toEqual([2]);
  });

  it('retries a failed attempt', async () => {
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>(
      'test.flaky',
      async (payload, job) => {
        calls.record(payload, job);
        if (job.attempt === 0) throw new Error('the first attempt fails');
      },
      { retryDelaySeconds: 1 },
    );
    await jobs.enqueue('test.flaky', { n: 1 });
    await calls.until(2);
    await settled(jobs, 'test.flaky');
    expect(calls.seen.map((call) => call.job.attempt)).toEqual([0, 1]);
  });

  it('runs a delayed job once it is due', async () => {
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>('test.delayed', async (payload, job) => calls.record(payload, job));
    await jobs.enqueue('test.delayed', { n: 1 }, { delaySeconds: 1 });
    // Not before its time.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(calls.seen).toEqual([]);
    await calls.until(1);
    await settled(jobs, 'test.delayed');
  });

  it('runs as many jobs at once as its concurrency, and the rest as those end', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls = recorder<{ n: number }>();
    await jobs.register<{ n: number }>(
      'test.concurrent',
      async (payload, job) => {
        calls.record(payload, job);
        await gate;
      },
      { concurrency: 3 },
    );
    for (let n = 1; n <= 5; n++) await jobs.enqueue('test.concurrent', { n });
    await calls.until(3);
    // Three are running and hold their workers; the other two wait.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(calls.seen).toHaveLength(3);
    release();
    await calls.until(5);
    await settled(jobs, 'test.concurrent');
    expect(calls.seen.map((call) => call.payload.n).sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('refuses kinds it does not know', async () => {
    await expect(jobs.enqueue('test.unknown', {})).rejects.toThrow('not registered');
  });
});
