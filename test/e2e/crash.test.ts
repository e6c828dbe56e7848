// SIGKILL in the middle of concurrent writes and streaming runs, then a restart, on PGlite (DATA_DIR) and
// PostgreSQL: every write the server acknowledged is there, every run it was executing is failed with a
// final RunError stored (which a client resuming from the last event it saw still receives), and the
// runs' sessions take new turns.
import { describe, expect, it } from 'vitest';
import { availableEngines } from '../../server/testing/database.ts';
import { teardownAfterAll } from './server-process.ts';
import { createAgent, createWorld, headersFor, missingWrites, openSlowRun, replay, startWriters, storedEvents, type World } from './workload.ts';

const RUNS = 4;
const WRITERS = 8;

describe.each(await availableEngines())('crash safety on %s', (engine) => {
  const teardown = teardownAfterAll();

  it('keeps every acknowledged write and fails every interrupted run after SIGKILL', async () => {
    const world: World = await createWorld(engine, `oaa-crash-${engine}`);
    teardown.add(() => world.cleanup());
    const { apiKey } = world;

    const first = await teardown.startServer(world.env);
    const agentId = await createAgent(first.url, apiKey);
    const runs = await Promise.all(Array.from({ length: RUNS }, () => openSlowRun(first.url, apiKey, agentId)));
    const writers = startWriters(first.url, apiKey, agentId, WRITERS);
    await writers.acknowledgedAtLeast(60);

    // Writes and runs are in flight now: the server dies without a chance to finish anything.
    expect(await first.kill('SIGKILL')).toBeNull();
    await writers.stop();
    for (const run of runs) expect((await run.closed).clean, `the stream of ${run.runId} ended as if complete`).toBe(false);
    expect(writers.unexpected).toEqual([]);
    expect(writers.acknowledged.agents.length).toBeGreaterThan(0);
    expect(writers.acknowledged.apiKeys.length).toBeGreaterThan(0);
    expect(writers.acknowledged.chats.length).toBeGreaterThan(0);

    const second = await teardown.startServer(world.env);
    expect(await missingWrites(second.url, apiKey, writers.acknowledged)).toEqual([]);

    for (const run of runs) {
      // On PostgreSQL the run is failed once its dead server's advisory lock is gone: at start-up or at
      // the next sweep.
      let status: string | undefined;
      for (let attempt = 0; attempt < 150; attempt++) {
        const response = await fetch(`${second.url}/v1/runs/${run.runId}`, { headers: headersFor(apiKey) });
        status = ((await response.json()) as { status: string }).status;
        if (status !== 'in_progress') break;
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      expect(status, run.runId).toBe('failed');

      const stored = await storedEvents(second.url, apiKey, run.runId);
      expect(stored[0]?.type).toBe('RunStarted');
      expect(stored.at(-1)).toMatchObject({ type: 'RunError', status: 'failed', error: { code: 'internal_error' } });
      const numbers = stored.map((event) => event.sequence_number);
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
      expect(new Set(numbers).size).toBe(numbers.length);

      // The client saw events live that may not have been stored before the crash; resuming from the
      // last one it saw still ends with the run's final event.
      const lastSeen = run.events.at(-1)!.sequence_number;
      const resumed = await replay(second.url, apiKey, run.runId, lastSeen);
      expect(await resumed.closed).toEqual({ clean: true });
      expect(resumed.events.at(-1)?.type).toBe('RunError');
      for (const event of resumed.events) expect(event.sequence_number).toBeGreaterThan(lastSeen);

      // The session is not left claimed by the dead run.
      const next = await fetch(`${second.url}/v1/agents/${agentId}/chat`, {
        method: 'POST',
        headers: headersFor(apiKey),
        body: JSON.stringify({ session_id: run.sessionId, messages: [{ role: 'user', content: 'are you back?' }] }),
      });
      expect(next.status, await next.clone().text()).toBe(200);
      expect(await next.json()).toMatchObject({ session_id: run.sessionId, status: 'completed' });
    }
    expect(await second.kill('SIGTERM')).toBe(0);
  });
});
