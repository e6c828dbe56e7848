// SIGTERM under load, on PGlite (DATA_DIR) and PostgreSQL: every open event stream (agent chats and
// replays of their runs) ends with a final event before its connection closes, the request in flight is
// answered, requests that arrive meanwhile are refused with 503 (or find the port closed), the process
// exits 0, and after a restart every acknowledged write, every event the clients saw, and the usage of
// what was answered are there.
import { describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import { availableEngines } from '../../server/testing/database.ts';
import { startFakeOpenAI } from '../../server/testing/fake-openai.ts';
import { startTestServer } from '../../server/testing/harness.ts';
import { unlimitedPlanEnv } from '../../server/testing/plans.ts';
import { teardownAfterAll } from './server-process.ts';
import {
  createAgent,
  createWorld,
  headersFor,
  LINGER,
  missingWrites,
  openSlowRun,
  replay,
  startWriters,
  storedEvents,
  type RunEvent,
  type World,
} from './workload.ts';

const RUNS = 3;
const WRITERS = 8;

function isFinal(event: RunEvent | undefined): boolean {
  return (
    (event?.type === 'RunError' && event.error.code === 'service_unavailable') ||
    (event?.type === 'RunCompleted' && event.status === 'completed')
  );
}

describe.each(await availableEngines())('graceful shutdown on %s', (engine) => {
  const teardown = teardownAfterAll();

  it('ends open streams with a final event, refuses new work, exits 0 and keeps what it acknowledged', async () => {
    const world: World = await createWorld(engine, `oaa-shutdown-${engine}`);
    teardown.add(() => world.cleanup());
    const { apiKey, upstream } = world;

    const first = await teardown.startServer(world.env);
    const agentId = await createAgent(first.url, apiKey);
    const runs = await Promise.all(Array.from({ length: RUNS }, () => openSlowRun(first.url, apiKey, agentId)));
    const replays = await Promise.all(runs.slice(0, 2).map((run) => replay(first.url, apiKey, run.runId, 0)));
    const writers = startWriters(first.url, apiKey, agentId, WRITERS);
    await writers.acknowledgedAtLeast(30);

    // A plain model call whose answer takes a while keeps the drain open while the writers go on.
    const lingering = fetch(`${first.url}/v1/chat/completions`, {
      method: 'POST',
      headers: headersFor(apiKey),
      body: JSON.stringify({ model: 'lingering', messages: [{ role: 'user', content: LINGER }] }),
    });
    while (!upstream.requests.some((request) => JSON.stringify(request.body ?? {}).includes(LINGER))) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }

    const exited = first.kill('SIGTERM');
    const answer = await lingering;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ choices: [{ message: { content: 'Thanks for waiting.' } }] });
    expect(await exited).toBe(0);
    expect(first.logs.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
    expect(first.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
    await writers.stop();

    for (const stream of [...runs, ...replays]) {
      expect(await stream.closed, `the stream of ${stream.runId} was cut`).toEqual({ clean: true });
      expect(isFinal(stream.events.at(-1)), JSON.stringify(stream.events.at(-1))).toBe(true);
    }
    expect(writers.unexpected).toEqual([]);
    expect(writers.refused).toBeGreaterThan(0);

    const second = await teardown.startServer(world.env);
    expect(await missingWrites(second.url, apiKey, writers.acknowledged)).toEqual([]);
    for (const run of runs) {
      const response = await fetch(`${second.url}/v1/runs/${run.runId}`, { headers: headersFor(apiKey) });
      const stored = await storedEvents(second.url, apiKey, run.runId);
      // Everything the client saw was stored, up to the final event.
      expect(stored.map((event) => event.sequence_number)).toEqual(run.events.map((event) => event.sequence_number));
      expect(((await response.json()) as { status: string }).status).toBe(stored.at(-1)?.type === 'RunError' ? 'failed' : 'completed');
      const next = await fetch(`${second.url}/v1/agents/${agentId}/chat`, {
        method: 'POST',
        headers: headersFor(apiKey),
        body: JSON.stringify({ session_id: run.sessionId, messages: [{ role: 'user', content: 'are you back?' }] }),
      });
      expect(next.status, await next.clone().text()).toBe(200);
    }
    // Usage is written in batches, the last one as the server stops: every answered call was metered.
    const usage = await fetch(`${second.url}/v1/account/usage`, { headers: headersFor(apiKey) });
    const models = ((await usage.json()) as { models: { model: string; requests: number }[] }).models;
    expect(models.find((entry) => entry.model === 'scripted')?.requests).toBeGreaterThanOrEqual(writers.acknowledged.chats.length);
    expect(models.find((entry) => entry.model === 'lingering')).toMatchObject({ requests: 1, completion_tokens: 3 });
    expect(await second.kill('SIGTERM')).toBe(0);
  });

  it.runIf(engine === 'postgres')('ends replays of runs executing on another instance at once, leaving the runs alone', async () => {
    const world: World = await createWorld(engine, 'oaa-shutdown-pair');
    teardown.add(() => world.cleanup());
    const { apiKey } = world;
    // A long drain limit: waiting on the replay would show as a warning in the log, not as a slow test.
    const env = { ...world.env, SHUTDOWN_TIMEOUT_MS: '60000' };
    const staying = await teardown.startServer(env);
    const leaving = await teardown.startServer(env);

    const agentId = await createAgent(staying.url, apiKey);
    const run = await openSlowRun(staying.url, apiKey, agentId);
    const watched = await replay(leaving.url, apiKey, run.runId, 0);
    expect(await leaving.kill('SIGTERM')).toBe(0);
    expect(await watched.closed).toEqual({ clean: true });
    expect(leaving.logs.filter((line) => line.includes('still in flight'))).toEqual([]);

    // The run goes on where it executes; a client resumes from the last event it saw.
    const lastSeen = watched.events.at(-1)!.sequence_number;
    const resumed = await replay(staying.url, apiKey, run.runId, lastSeen);
    expect(resumed.events[0]).toMatchObject({ type: 'RunResponse', sequence_number: lastSeen + 1 });
    expect(await staying.kill('SIGTERM')).toBe(0);
    expect(await resumed.closed).toEqual({ clean: true });
    expect(resumed.events.at(-1)).toMatchObject({ type: 'RunError', error: { code: 'service_unavailable' } });
  });
});

describe('a turn whose request got in just before shutdown', () => {
  it('ends at once with a final RunError, not when its model answers', async () => {
    const upstream = await startFakeOpenAI({ models: ['scripted'], respond: () => ({ hang: true }) });
    const server = await startTestServer({ env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } });
    try {
      const { apiKey, client } = await server.signUp();
      const agent = (await client.POST('/v1/agents', { body: { name: 'Late', model: 'scripted' } })).data!;
      // The run engine stops as shutdown begins; this request is past the door that refuses new ones.
      await server.services.engine.stop();
      const response = await fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
        method: 'POST',
        headers: headersFor(apiKey, { Accept: 'text/event-stream' }),
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
      });
      const events: RunEvent[] = [];
      for await (const frame of readEventStream<RunEvent>(response.body!)) events.push(frame.data);
      expect(events.map((event) => event.type)).toEqual(['RunStarted', 'RunError']);
      expect(events[1]).toMatchObject({ status: 'failed', error: { code: 'service_unavailable' } });
    } finally {
      await server.close();
      await upstream.close();
    }
  });
});
