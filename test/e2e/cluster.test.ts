// Three server processes on one PostgreSQL and Redis behind HAProxy (scripts/cluster.ts), used as an
// operator's users would: through the load balancer for keys, agents, chats and streams; a run followed
// and cancelled at a server that does not execute it; request limits shared by all servers; a revoked
// key refused everywhere once API_KEY_CACHE_SECONDS have passed; and kill -9 of the server executing 100
// slow runs: the others fail each of them once, clients resuming through the load balancer get gapless,
// duplicate-free events ending in the terminal one, no acknowledged write is lost, and every knowledge
// job is done once. What it measures (cross-server event lag, cancel latency, kill -9 → every run
// terminal) is printed, not asserted: the machine's load decides those numbers.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import { startCluster, type Cluster } from '../../scripts/cluster.ts';
import { INGEST_JOB } from '../../server/knowledge/service.ts';
import { createTestDatabase } from '../../server/testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../server/testing/fake-openai.ts';
import { NO_LIMITS } from '../../server/testing/plans.ts';
import { runScript } from './server-process.ts';
import { follow, headersFor, missingWrites, startWriters, type RunEvent } from './workload.ts';

const SLOW = 'please answer slowly';
const SLOW_ANSWER = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');
const REQUESTS_PER_MINUTE = 300;
const KEY_CACHE_SECONDS = 2;
const RUNS = 100;
const FOLLOWERS = 10;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

describe('a cluster of three servers behind HAProxy', () => {
  let upstream: FakeOpenAI;
  let cluster: Cluster;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: pg.Client;
  let env: Record<string, string>;
  const measured: string[] = [];

  const newKey = (email: string) => runScript('scripts/create-key.ts', ['--email', email], env);

  beforeAll(async () => {
    upstream = await startFakeOpenAI({
      models: ['scripted'],
      keepRequests: false,
      respond: (request) => {
        const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
        const last = messages.findLast((message) => message.role === 'user');
        return typeof last?.content === 'string' && last.content.includes(SLOW) ? { text: SLOW_ANSWER, tokensPerSecond: 20 } : undefined;
      },
    });
    database = await createTestDatabase('postgres');
    const plans = path.join(mkdtempSync(path.join(tmpdir(), 'oaa-cluster-plans-')), 'plans.yaml');
    writeFileSync(plans, `plans:\n  - id: limited\n    name: Limited\n${NO_LIMITS.replace('requests_per_minute: null', `requests_per_minute: ${REQUESTS_PER_MINUTE}`)}`);
    env = {
      NODE_ENV: 'test',
      PLANS_FILE: plans,
      OPENAI_BASE_URL: upstream.url,
      API_KEY_CACHE_SECONDS: String(KEY_CACHE_SECONDS),
      REDIS_KEY_PREFIX: `oaa-cluster-${process.pid}-${Date.now()}`,
      KNOWLEDGE_INLINE_MAX_BYTES: '1',
      DATABASE_URL: database.url!,
    };
    cluster = await startCluster({ servers: 3, databaseUrl: database.url!, redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', env });
    sql = new pg.Client({ connectionString: database.url! });
    await sql.connect();
  });
  afterAll(async () => {
    if (measured.length > 0) console.log(`cluster measurements:\n  ${measured.join('\n  ')}`);
    await sql?.end();
    await cluster?.close();
    await database?.drop();
    await upstream?.close();
  });

  async function agentFor(url: string, apiKey: string): Promise<string> {
    const response = await fetch(`${url}/v1/agents`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ name: 'Clustered', model: 'scripted' }) });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  const slowRun = (url: string, apiKey: string, agentId: string) =>
    fetch(`${url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: headersFor(apiKey, { Accept: 'text/event-stream' }),
      body: JSON.stringify({ messages: [{ role: 'user', content: SLOW }] }),
    });

  it('serves keys, agents, chats and streams through the load balancer', async () => {
    const apiKey = await newKey('lb@example.com');
    const agentId = await agentFor(cluster.url, apiKey);
    const key = await fetch(`${cluster.url}/v1/api-keys`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ name: 'second' }) });
    expect(key.status).toBe(201);
    const second = ((await key.json()) as { secret: string }).secret;
    // Requests go round-robin: several in a row reach every server, and each knows the agent and the key.
    for (let i = 0; i < 6; i++) expect((await fetch(`${cluster.url}/v1/agents/${agentId}`, { headers: headersFor(second) })).status).toBe(200);
    const chat = await fetch(`${cluster.url}/v1/agents/${agentId}/chat`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }] }) });
    expect(chat.status).toBe(200);
    const turn = (await chat.json()) as { run_id: string; status: string };
    expect(turn.status).toBe('completed');
    const stream = await fetch(`${cluster.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: headersFor(apiKey, { Accept: 'text/event-stream' }),
      body: JSON.stringify({ messages: [{ role: 'user', content: 'stream please' }] }),
    });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const events: RunEvent[] = [];
    for await (const frame of readEventStream<RunEvent>(stream.body!)) events.push(frame.data);
    expect(events[0]?.type).toBe('RunStarted');
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed' });
    const replayed: RunEvent[] = [];
    const replay = await fetch(`${cluster.url}/v1/runs/${events[0]!.run_id}/events`, { headers: headersFor(apiKey, { Accept: 'text/event-stream' }) });
    for await (const frame of readEventStream<RunEvent>(replay.body!)) replayed.push(frame.data);
    expect(replayed).toEqual(events);
  });

  it('serves the Responses API and A2A through the load balancer, every server answering alike', async () => {
    const apiKey = await newKey('protocols@example.com');
    const created = await fetch(`${cluster.url}/v1/agents`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ name: 'Echo' }) });
    expect(created.status).toBe(201);
    const agentId = ((await created.json()) as { id: string }).id;

    // Responses: created on one server, read, chained and replayed through the others.
    const openai = new OpenAI({ apiKey, baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    const first = await openai.responses.create({ model: `agent:${agentId}`, input: 'first words' });
    expect(first.status).toBe('completed');
    expect(first.output_text).not.toBe('');
    for (let i = 0; i < 3; i++) expect(await openai.responses.retrieve(first.id)).toMatchObject({ id: first.id, status: 'completed', output: first.output });
    const second = await openai.responses.create({ model: `agent:${agentId}`, input: 'second words', previous_response_id: first.id });
    expect(second.status).toBe('completed');
    const items = await openai.responses.inputItems.list(second.id);
    expect(JSON.stringify(items.data)).toContain('second words');
    const streamed: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.create({ model: `agent:${agentId}`, input: 'streamed words', stream: true })) streamed.push(event);
    expect(streamed.at(-1)?.type).toBe('response.completed');
    const id = (streamed[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    for (let i = 0; i < 3; i++) {
      const replayed: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await openai.responses.retrieve(id, { stream: true })) replayed.push(event);
      expect(replayed.map((event) => [event.type, event.sequence_number])).toEqual(streamed.map((event) => [event.type, event.sequence_number]));
    }

    // A2A: the card names the load balancer; a task sent through it reads the same on every server.
    const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), Authorization: `Bearer ${apiKey}` } });
    const a2a = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })] }).createFromUrl(`${cluster.url}/a2a/${agentId}/`);
    const task = (await a2a.sendMessage({
      message: { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: 'over a2a' }, metadata: undefined, filename: '', mediaType: '' }], metadata: undefined, extensions: [], referenceTaskIds: [] },
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    })) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    for (let i = 0; i < 3; i++) {
      const read = await a2a.getTask({ id: task.id, historyLength: 0, tenant: '' });
      expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(read.artifacts).toEqual(task.artifacts);
    }
  });

  it('streams a run to a client of another server as it happens, and cancels it from there', async () => {
    const apiKey = await newKey('follow@example.com');
    const [owner, other] = cluster.servers;
    const agentId = await agentFor(owner!.url, apiKey);
    const started = performance.now();
    const response = await slowRun(owner!.url, apiKey, agentId);
    expect(response.status).toBe(200);
    // Each event's arrival at the owner's own client (stored, then published) and at a client of another server.
    const direct: RunEvent[] = [];
    const times = new Map<number, number>();
    const directFrames = readEventStream<RunEvent>(response.body!)[Symbol.asyncIterator]();
    const first = (await directFrames.next()).value!.data;
    direct.push(first);
    const runId = first.run_id;
    const directDone = (async () => {
      for (;;) {
        const next = await directFrames.next();
        if (next.done) return;
        direct.push(next.value.data);
        times.set(next.value.data.sequence_number, performance.now());
      }
    })();
    const followedAt = performance.now();
    const followed = await fetch(`${other!.url}/v1/runs/${runId}/events`, { headers: headersFor(apiKey, { Accept: 'text/event-stream' }) });
    const seen: RunEvent[] = [];
    const arrivals = new Map<number, number>();
    for await (const frame of readEventStream<RunEvent>(followed.body!)) {
      seen.push(frame.data);
      arrivals.set(frame.data.sequence_number, performance.now());
      if (seen.length >= 40) break;
    }
    const lags: number[] = [];
    for (const [sequence, at] of arrivals) {
      const there = times.get(sequence);
      // Events stored before the follower came are a replay, not live: they say nothing of the lag.
      if (there !== undefined && there > followedAt) lags.push(Math.max(0, at - there));
    }
    expect(seen.map((event) => event.sequence_number)).toEqual(seen.map((_, index) => index + 1));
    expect(lags.length).toBeGreaterThan(10);
    measured.push(`cross-server event lag over ${lags.length} events: p50 ${percentile(lags, 50).toFixed(1)} ms, p99 ${percentile(lags, 99).toFixed(1)} ms`);

    const cancelAt = performance.now();
    const cancelled = await fetch(`${other!.url}/v1/runs/${runId}/cancel`, { method: 'POST', headers: headersFor(apiKey) });
    const cancelMs = performance.now() - cancelAt;
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ id: runId, status: 'canceled' });
    await directDone;
    expect(direct.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'canceled' });
    measured.push(`cancel at another server, answered with the run cancelled: ${cancelMs.toFixed(0)} ms (run started ${((cancelAt - started) / 1000).toFixed(1)} s before)`);
  });

  it('holds request limits across the servers', async () => {
    const apiKey = await newKey('limits@example.com');
    const statuses: number[] = [];
    const attempts = Math.round(REQUESTS_PER_MINUTE * 1.25);
    let next = 0;
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        while (next < attempts) {
          next += 1;
          const response = await fetch(`${cluster.url}/v1/agents?limit=1`, { headers: headersFor(apiKey) });
          await response.arrayBuffer();
          statuses.push(response.status);
        }
      }),
    );
    const admitted = statuses.filter((status) => status === 200).length;
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(admitted).toBeGreaterThanOrEqual(REQUESTS_PER_MINUTE);
    expect(admitted).toBeLessThanOrEqual(REQUESTS_PER_MINUTE * 1.1);
    measured.push(`request limit ${REQUESTS_PER_MINUTE}/min, ${attempts} requests over 3 servers: ${admitted} admitted`);
  });

  it('refuses a revoked key on every server once the key cache has expired', async () => {
    const apiKey = await newKey('revoke@example.com');
    const made = await fetch(`${cluster.url}/v1/api-keys`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ name: 'doomed' }) });
    const doomed = (await made.json()) as { id: string; secret: string };
    // Every server has the key in its cache.
    for (const server of cluster.servers) expect((await fetch(`${server.url}/v1/account`, { headers: headersFor(doomed.secret) })).status).toBe(200);
    expect((await fetch(`${cluster.url}/v1/api-keys/${doomed.id}`, { method: 'DELETE', headers: headersFor(apiKey) })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, (KEY_CACHE_SECONDS + 0.5) * 1000));
    for (const server of cluster.servers) expect((await fetch(`${server.url}/v1/account`, { headers: headersFor(doomed.secret) })).status).toBe(401);
  });

  it('after kill -9 of the server executing 100 runs, the others end every run once and clients resume gaplessly', async () => {
    const runsKey = await newKey('kill-runs@example.com');
    const writersKey = await newKey('kill-writers@example.com');
    const [victim] = cluster.servers;
    const agentId = await agentFor(cluster.url, runsKey);
    const writerAgent = await agentFor(cluster.url, writersKey);

    // Knowledge documents, each processed by a job that any server may hold when the victim dies.
    const documents: string[] = [];
    for (let i = 0; i < 12; i++) {
      const text = Array.from({ length: 400 }, (_, j) => `Paragraph ${j} of document ${i} about lighthouses and keepers.`).join('\n\n');
      const posted = await fetch(`${cluster.url}/v1/knowledge/documents`, { method: 'POST', headers: headersFor(writersKey), body: JSON.stringify({ text, title: `doc ${i}` }) });
      expect(posted.status).toBe(202);
      documents.push(((await posted.json()) as { id: string }).id);
    }

    const runs = await Promise.all(
      Array.from({ length: RUNS }, async () => {
        const stream = await follow(await slowRun(victim!.url, runsKey, agentId), (events) => events.length > 0);
        return { runId: stream.events[0]!.run_id, stream };
      }),
    );
    // Some clients follow their run through the load balancer, which may send them to any server.
    const followers = await Promise.all(
      runs.slice(0, FOLLOWERS).map(async ({ runId }) => {
        const response = await fetch(`${cluster.url}/v1/runs/${runId}/events`, { headers: headersFor(runsKey, { Accept: 'text/event-stream' }) });
        return { runId, stream: await follow(response, (events) => events.length >= 2) };
      }),
    );
    // Background responses on the victim, each followed until its text has begun.
    const responsesKey = await newKey('kill-responses@example.com');
    const onVictim = new OpenAI({ apiKey: responsesKey, baseURL: `${victim!.url}/v1`, maxRetries: 0 });
    const throughLb = new OpenAI({ apiKey: responsesKey, baseURL: `${cluster.url}/v1`, maxRetries: 0 });
    const background = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const created = await onVictim.responses.create({ model: 'scripted', input: SLOW, background: true });
        const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
        for await (const event of await throughLb.responses.retrieve(created.id, { stream: true })) {
          seen.push(event);
          if (event.type === 'response.output_text.delta') break;
        }
        return { id: created.id, seen };
      }),
    );
    const writers = startWriters(cluster.url, writersKey, writerAgent, 2);
    await writers.acknowledgedAtLeast(20);

    const killedAt = performance.now();
    expect(await victim!.kill('SIGKILL')).toBeNull();
    // Writes go on through the load balancer for a moment, then stop (they share the plan's request limit).
    // At most 2 s or 30 more acknowledged writes: checking each one afterwards must stay within the plan's
    // request limit, however fast the machine writes.
    const ackedAtKill = writers.acknowledged.agents.length + writers.acknowledged.apiKeys.length + writers.acknowledged.chats.length;
    const stopWriters = Promise.race([new Promise((resolve) => setTimeout(resolve, 2_000)), writers.acknowledgedAtLeast(ackedAtKill + 30)]).then(() => writers.stop());
    const ids = runs.map((run) => run.runId);
    let allTerminalMs = NaN;
    for (let attempt = 0; attempt < 600; attempt++) {
      const { rows } = await sql.query<{ open: number }>(`SELECT count(*)::int AS open FROM runs WHERE id = ANY($1) AND status IN ('queued', 'in_progress')`, [ids]);
      if (rows[0]!.open === 0) {
        allTerminalMs = performance.now() - killedAt;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(Number.isNaN(allTerminalMs)).toBe(false);
    measured.push(`kill -9 of the server executing ${RUNS} runs → every run terminal on the others: ${(allTerminalMs / 1000).toFixed(2)} s`);
    await stopWriters;

    // Each run ended once: one terminal event, numbered right after the last stored one.
    const { rows: terminals } = await sql.query<{ run_id: string; count: number; last: number; events: number }>(
      `SELECT run_id, count(*) FILTER (WHERE type IN ('RunCompleted', 'RunError'))::int AS count, max(sequence_number) AS last, count(*)::int AS events
       FROM run_events WHERE run_id = ANY($1) GROUP BY run_id`,
      [ids],
    );
    expect(terminals).toHaveLength(RUNS);
    for (const row of terminals) {
      expect(row.count, row.run_id).toBe(1);
      expect(row.last, row.run_id).toBe(row.events);
    }

    // Every client, cut or not, resumes through the load balancer from the last event it saw.
    for (const { runId, stream } of [...followers, ...runs.slice(FOLLOWERS, FOLLOWERS + 10)]) {
      await stream.closed;
      const lastSeen = stream.events.at(-1)!.sequence_number;
      const rest: RunEvent[] = [];
      if (!['RunCompleted', 'RunError'].includes(stream.events.at(-1)!.type)) {
        const resumed = await fetch(`${cluster.url}/v1/runs/${runId}/events`, { headers: headersFor(runsKey, { Accept: 'text/event-stream', 'Last-Event-ID': String(lastSeen) }) });
        for await (const frame of readEventStream<RunEvent>(resumed.body!)) rest.push(frame.data);
      }
      const all = [...stream.events, ...rest];
      expect(all.map((event) => event.sequence_number), runId).toEqual(all.map((_, index) => index + 1));
      expect(['RunCompleted', 'RunError']).toContain(all.at(-1)!.type);
      // What the client saw is what the store holds.
      const { rows } = await sql.query<{ payload: RunEvent }>('SELECT payload FROM run_events WHERE run_id = $1 ORDER BY sequence_number', [runId]);
      expect(rows.map((row) => row.payload)).toEqual(all);
    }

    expect(writers.unexpected).toEqual([]);
    expect(await missingWrites(cluster.url, writersKey, writers.acknowledged)).toEqual([]);

    // The victim's background responses are failed on the others; their streams resume through the load
    // balancer after the last event seen, without a gap, to response.failed.
    for (const { id, seen } of background) {
      const last = seen.at(-1)!.sequence_number;
      const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of await throughLb.responses.retrieve(id, { stream: true, starting_after: last })) rest.push(event);
      expect(rest.map((event) => event.sequence_number), id).toEqual(rest.map((_, index) => last + 1 + index));
      expect(rest.at(-1)?.type, id).toBe('response.failed');
      expect((await throughLb.responses.retrieve(id)).status).toBe('failed');
    }

    // Every document's job was done, once in effect: ready, with each chunk stored once.
    for (let attempt = 0; attempt < 1200; attempt++) {
      const { rows } = await sql.query<{ waiting: number }>(`SELECT count(*)::int AS waiting FROM knowledge_documents WHERE id = ANY($1) AND status <> 'ready'`, [documents]);
      if (rows[0]!.waiting === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { rows: docs } = await sql.query<{ id: string; status: string; chunk_count: number; stored: number; positions: number }>(
      `SELECT d.id, d.status, d.chunk_count, count(c.id)::int AS stored, count(DISTINCT c.position)::int AS positions
       FROM knowledge_documents d LEFT JOIN knowledge_chunks c ON c.document_id = d.id WHERE d.id = ANY($1) GROUP BY d.id`,
      [documents],
    );
    for (const doc of docs) expect(doc, doc.id).toMatchObject({ status: 'ready', stored: doc.chunk_count, positions: doc.chunk_count });
    const { rows: jobs } = await sql.query<{ key: string; jobs: number }>(
      `SELECT data->>'documentId' AS key, count(*)::int AS jobs FROM pgboss.job WHERE name = $1 AND data->>'documentId' = ANY($2) GROUP BY 1`,
      [INGEST_JOB, documents],
    );
    expect(jobs.map((job) => job.jobs)).toEqual(documents.map(() => 1));
  });
});
