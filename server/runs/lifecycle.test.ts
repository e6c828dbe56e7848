// The run lifecycle on both engines: a terminal event is published only once the run's end is stored
// (a client that read it finds the run finished and its session free), of two servers ending one run
// exactly one does, with exactly one terminal event, and one run's events that cannot be stored lose no
// other run's.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { createSessionStore } from '../sessions/store.ts';
import { findOrCreateUser } from '../identity/users.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import type { RunEvent } from './events.ts';
import { createRunLifecycle } from './lifecycle.ts';
import { EventSink, RunRecorder } from './recorder.ts';
import { createRunStore } from './store.ts';

type Schemas = components['schemas'];
const silent = pino({ level: 'silent' });

describe.each(await availableEngines())('the run lifecycle on %s', (engine) => {
  describe('through the API', () => {
    let server: TestServer;
    let user: TestUser;
    beforeAll(async () => {
      server = await startTestServer({ engine, env: unlimitedPlanEnv() });
      user = await server.signUp();
    });
    afterAll(() => server?.close());

    it('publishes a terminal event only once the run has ended in the store', async () => {
      const agent = (await user.client.POST('/v1/agents', { body: { name: 'Quick' } })).data!;
      const turns = await Promise.all(
        Array.from({ length: 24 }, async (_, index) => {
          const response = await fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
            body: JSON.stringify({ messages: [{ role: 'user', content: `turn ${index}` }] }),
          });
          for await (const { data } of readEventStream<Schemas['RunEvent']>(response.body!)) {
            if (data.type !== 'RunCompleted') continue;
            // Asked the moment the terminal event is read: the run and its session are done.
            const [run, next] = await Promise.all([
              user.client.GET('/v1/runs/{runId}', { params: { path: { runId: data.run_id } } }),
              user.client.GET('/v1/runs/{runId}/events', { params: { path: { runId: data.run_id }, query: { after: String(data.sequence_number - 1) } }, headers: { Accept: 'application/json' } }),
            ]);
            return { status: run.data?.status, stored: next.data?.data.map((event) => event.type), runId: data.run_id };
          }
          return { status: 'no terminal event', stored: [], runId: '' };
        }),
      );
      expect(turns.map((turn) => turn.status)).toEqual(turns.map(() => 'completed'));
      expect(turns.every((turn) => turn.stored?.join() === 'RunCompleted')).toBe(true);
      // Nothing is left executing once every stream has ended.
      expect(server.services.engine.liveRuns()).toBe(0);
    });

    it('frees the session for the next turn as soon as the terminal event is read', async () => {
      const agent = (await user.client.POST('/v1/agents', { body: { name: 'Chatty' } })).data!;
      let sessionId: string | undefined;
      for (let turn = 0; turn < 8; turn++) {
        const response = await fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
          body: JSON.stringify({ ...(sessionId ? { session_id: sessionId } : {}), messages: [{ role: 'user', content: `turn ${turn}` }] }),
        });
        expect(response.status).toBe(200);
        for await (const { data } of readEventStream<Schemas['RunEvent']>(response.body!)) if (data.type === 'RunStarted') sessionId = data.session_id;
      }
      const session = await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: sessionId! } } });
      expect(session.data?.messages).toHaveLength(16);
    });
  });

  describe('in the store', () => {
    let database: TestDatabase;
    let userId: string;
    beforeAll(async () => {
      database = await createTestDatabase(engine);
      userId = (await findOrCreateUser(database.db, `lifecycle-${engine}@example.com`)).user.id;
    });
    afterAll(() => database?.drop());

    const lifecycleFor = (owner: string) => {
      const runs = createRunStore(database.db);
      return { runs, lifecycle: createRunLifecycle({ runs, sink: new EventSink(runs, silent), clock: Date.now, logger: silent, owner }) };
    };

    const openRun = async (owner: string) => {
      const { lifecycle } = lifecycleFor(owner);
      const session = await createSessionStore(database.db).create(userId, { agentId: null, teamId: null }, []);
      const open = await lifecycle.open({ userId, sessionId: session.id, agentId: null, teamId: null, model: 'local' });
      open.recorder.emit({ type: 'RunResponse', message_id: 'msg_1', delta: 'partial' });
      await open.recorder.flush();
      return open;
    };

    it('lets exactly one of two servers fail a dead server’s run, with exactly one terminal event', async () => {
      const open = await openRun('inst_dead');
      const row = await lifecycleFor('inst_a').runs.get(userId, open.row.id);
      const error = { code: 'internal_error' as const, message: 'gone' };
      const results = await Promise.all(
        ['inst_a', 'inst_b'].map((survivor) => lifecycleFor(survivor).lifecycle.endStored(row, { status: 'failed', error }, { from: ['in_progress'], owner: 'inst_dead' })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const events = await lifecycleFor('inst_a').runs.events(open.row.id, 0, 100);
      expect(events.map((event) => `${event.sequence_number}:${event.type}`)).toEqual(['1:RunStarted', '2:RunResponse', '3:RunError']);
      // The server that held the run cannot end it any more: it was ended for it.
      expect(await lifecycleFor('inst_dead').lifecycle.end(open, { status: 'completed', message: null, finishReason: 'stop' }, open.row.usage)).toBeUndefined();
      expect((await lifecycleFor('inst_a').runs.events(open.row.id, 0, 100)).map((event) => event.type)).toEqual(['RunStarted', 'RunResponse', 'RunError']);
    });

    it('stores the other runs’ events when one run’s cannot be stored, and keeps the failing run’s numbering gapless', async () => {
      const healthy = await openRun('inst_c');
      const taken = await openRun('inst_e');
      const runs = createRunStore(database.db);
      const sink = new EventSink(runs, silent);
      // A second recorder of a run whose events 1 and 2 are stored (as when two servers each think they
      // hold it): its next number is taken, which breaks the batch it is written in.
      const bad = new RunRecorder(sink, taken.row.id, 0, Date.now);
      const goodOnSink = new RunRecorder(sink, healthy.row.id, 2, Date.now);
      const heard: RunEvent[] = [];
      goodOnSink.subscribe((event) => heard.push(event));
      let lost: unknown;
      bad.onLost((error) => (lost = error));
      goodOnSink.emit({ type: 'RunResponse', message_id: 'msg_2', delta: 'a' });
      bad.emit({ type: 'RunResponse', message_id: 'msg_x', delta: 'b' });
      goodOnSink.emit({ type: 'RunResponse', message_id: 'msg_2', message: { role: 'assistant', content: 'a' } });
      await Promise.all([goodOnSink.flush(), bad.flush()]);
      expect(heard.map((event) => event.sequence_number)).toEqual([3, 4]);
      expect((await runs.events(healthy.row.id, 2, 10)).map((event) => event.sequence_number)).toEqual([3, 4]);
      expect(lost).toBeDefined();
      expect(bad.lost).toBe(true);
      expect(bad.lastSequence).toBe(0);
      expect(bad.stamp({ type: 'RunError', status: 'failed', error: { code: 'service_unavailable', message: 'x' } }).sequence_number).toBe(1);
    });

    it('joins the text deltas of one message said while the store is busy into one event', async () => {
      const open = await openRun('inst_d');
      const heard: RunEvent[] = [];
      open.recorder.subscribe((event) => heard.push(event));
      for (const word of ['one', ' two', ' three']) open.recorder.emit({ type: 'RunResponse', message_id: 'msg_3', delta: word });
      open.recorder.emit({ type: 'RunResponse', message_id: 'msg_4', delta: 'other' });
      open.recorder.emit({ type: 'RunResponse', message_id: 'msg_3', message: { role: 'assistant', content: 'one two three' } });
      await open.recorder.flush();
      expect(heard.map((event) => (event.type === 'RunResponse' ? `${event.sequence_number}:${event.delta ?? event.message?.content}` : event.type))).toEqual([
        '3:one two three',
        '4:other',
        '5:one two three',
      ]);
      const stored = await createRunStore(database.db).events(open.row.id, 2, 10);
      expect(stored).toEqual(heard);
    });
  });
});
