// Two servers on one PostgreSQL, as two instances of one deployment: a client follows a run on the server
// that does not execute it, cancels it there, and the runs of a server that died are failed exactly once.
// Live events reach the other server through LISTEN/NOTIFY: a follower waits for a notification, and only
// looks at the store again after 15 s without one, so a follow that finishes within the test's timeout
// proves the notifications arrive.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { createLogger } from '../logger.ts';
import { newId } from '../store/ids.ts';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { FAIL_ORPHANS_JOB } from './engine.ts';
import { EventSink, RunRecorder } from './recorder.ts';
import type { RunEvent } from './events.ts';

type Agent = components['schemas']['Agent'];

const engines = await availableEngines();

describe.runIf(engines.includes('postgres'))('two servers on one PostgreSQL', () => {
  let upstream: FakeOpenAI;
  let a: TestServer;
  let b: TestServer;
  let user: TestUser;
  let agent: Agent;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ apiKey: 'sk-upstream', models: ['scripted'], chunkGapMs: 25 });
    const env = { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-upstream' };
    a = await startTestServer({ engine: 'postgres', env });
    b = await startTestServer({ env, shareDatabaseWith: a });
    user = await a.signUp();
    agent = (await user.client.POST('/v1/agents', { body: { name: 'Slow', model: 'scripted' } })).data!;
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await upstream?.close();
  });

  /** Starts a streamed chat on server A and answers the stream, positioned after RunStarted, and the run id. */
  async function startOnA(body: Record<string, unknown>) {
    const response = await fetch(`${a.url}/v1/agents/${agent.id}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    const stream = readEventStream<RunEvent>(response.body!)[Symbol.asyncIterator]();
    const first = (await stream.next()).value!.data;
    expect(first.type).toBe('RunStarted');
    const rest = async () => {
      const events: RunEvent[] = [first];
      for (;;) {
        const next = await stream.next();
        if (next.done) return events;
        events.push(next.value.data);
      }
    };
    return { runId: first.run_id, rest };
  }

  const followOn = (server: TestServer, runId: string, after = 0) =>
    fetch(`${server.url}/v1/runs/${runId}/events`, {
      headers: { Authorization: `Bearer ${user.apiKey}`, Accept: 'text/event-stream', ...(after ? { 'Last-Event-ID': String(after) } : {}) },
    });

  it('streams a run executing on one server to a client of the other as it happens, gapless', async () => {
    const words = Array.from({ length: 40 }, (_, index) => `w${index}`).join(' ');
    upstream.enqueue({ text: words });
    const { runId, rest } = await startOnA({ messages: [{ role: 'user', content: 'talk' }], stream: true });
    const owner = rest();
    const followed: RunEvent[] = [];
    let seenWhileLive = 0;
    for await (const event of readEventStream<RunEvent>((await followOn(b, runId)).body!)) {
      followed.push(event.data);
      if (a.services.engine.isLive(runId)) seenWhileLive += 1;
    }
    const direct = await owner;
    expect(b.services.engine.isLive(runId)).toBe(false);
    // The follower got events while the run was still executing on A, not only a replay after its end.
    expect(seenWhileLive).toBeGreaterThan(1);
    expect(followed.map((event) => event.sequence_number)).toEqual(followed.map((_, index) => index + 1));
    expect(followed).toEqual(direct);
    expect(followed.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed' });
  });

  it('cancels a run at the server that does not execute it, and the answer shows it cancelled', async () => {
    upstream.enqueue({ hang: true });
    const { runId, rest } = await startOnA({ messages: [{ role: 'user', content: 'wait' }], stream: true });
    const owner = rest();
    const cancelled = await b.client(user.apiKey).POST('/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(cancelled.data).toMatchObject({ id: runId, status: 'canceled' });
    const events = await owner;
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'canceled' });
    expect(events.filter((event) => event.type === 'RunCompleted' || event.type === 'RunError')).toHaveLength(1);
  });

  /** A run of a server that is gone (nothing holds its liveness lock), with three events its clients saw. */
  async function orphan(owner = newId('inst')) {
    const { runs, chatSessions } = a.services;
    const session = await chatSessions.create(user.userId, { agentId: agent.id, teamId: null }, []);
    const run = await runs.create({ userId: user.userId, sessionId: session.id, agentId: agent.id, teamId: null, parentRunId: null, model: 'scripted', owner });
    const said = ['one', 'two', 'three'].map(
      (delta, index) =>
        ({ type: 'RunResponse', message_id: 'msg_1', delta, run_id: run.id, sequence_number: index + 1, created_at: new Date().toISOString() }) as RunEvent,
    );
    await runs.appendEvents(said);
    return run;
  }

  it('fails a dead server run once, with one terminal event right after what its clients saw', async () => {
    const run = await orphan();
    // A client resumes on B after the third event while the run is not yet failed.
    const follower = (async () => {
      const events: RunEvent[] = [];
      for await (const event of readEventStream<RunEvent>((await followOn(b, run.id, 3)).body!)) events.push(event.data);
      return events;
    })();
    await vi.waitFor(async () => {
      const [row] = await a.services.db.query<{ count: number }>("SELECT count(*)::int AS count FROM pg_stat_activity WHERE query LIKE 'LISTEN%'");
      expect(row?.count).toBeGreaterThan(0);
    });
    // Both servers find it at once; their conditional updates let exactly one end it.
    // (The dead-server job may get there first: then no sweep ends it, and the job did, once.)
    const counts = await Promise.all([a.services.engine.sweep(), b.services.engine.sweep(), a.services.engine.sweep()]);
    expect(counts.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(1);
    const stored = await a.services.runs.events(run.id, 0, 100);
    expect(stored.map((event) => [event.sequence_number, event.type])).toEqual([
      [1, 'RunResponse'],
      [2, 'RunResponse'],
      [3, 'RunResponse'],
      [4, 'RunError'],
    ]);
    expect(await follower).toEqual([stored[3]]);
    expect((await a.services.runs.get(user.userId, run.id)).status).toBe('failed');
  });

  it('fails the runs of a server that died through a durable job, without anyone calling the sweep', async () => {
    const run = await orphan();
    await vi.waitFor(async () => expect((await a.services.runs.get(user.userId, run.id)).status).toBe('failed'), { timeout: 15_000, interval: 200 });
    const jobs = await a.services.db.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE name = $1 AND data->>'owner' = $2`, [FAIL_ORPHANS_JOB, await ownerOf(run.id)]);
    expect(jobs.length).toBeGreaterThan(0);
    const stored = await a.services.runs.events(run.id, 0, 100);
    expect(stored.filter((event) => event.type === 'RunError')).toHaveLength(1);
  });

  const ownerOf = async (runId: string) => (await a.services.db.query<{ owner: string }>('SELECT owner FROM runs WHERE id = $1', [runId]))[0]!.owner;

  it("stores every other run's events when one run's events cannot be stored", async () => {
    const { runs } = a.services;
    // Runs of a live server (A), so that nothing fails them meanwhile.
    const broken = await orphan(a.services.engine.instanceId);
    const healthy = await orphan(a.services.engine.instanceId);
    const sink = new EventSink(runs, createLogger('silent'));
    // The broken run's recorder believes nothing is stored yet: its numbers collide with stored ones.
    const brokenRecorder = new RunRecorder(sink, broken.id, 0, Date.now);
    const healthyRecorder = new RunRecorder(sink, healthy.id, 3, Date.now);
    const heard: RunEvent[] = [];
    healthyRecorder.subscribe((event) => heard.push(event));
    brokenRecorder.emit({ type: 'RunResponse', message_id: 'msg_2', delta: 'x' } as never);
    healthyRecorder.emit({ type: 'RunResponse', message_id: 'msg_2', delta: 'four' } as never);
    healthyRecorder.emit({ type: 'RunResponse', message_id: 'msg_3', delta: 'five' } as never);
    await sink.flush();
    expect(brokenRecorder.lost).toBe(true);
    expect(healthyRecorder.lost).toBe(false);
    const stored = await runs.events(healthy.id, 0, 100);
    expect(stored.map((event) => event.sequence_number)).toEqual([1, 2, 3, 4, 5]);
    expect(heard.map((event) => event.sequence_number)).toEqual([4, 5]);
    expect((await runs.events(broken.id, 0, 100)).map((event) => event.sequence_number)).toEqual([1, 2, 3]);
  });
});
