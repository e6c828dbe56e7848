// What the crash and shutdown suites throw at a server process: an OpenAI upstream on loopback whose
// answers are slow when asked to be (so that runs are mid-stream when the server dies or stops),
// streamed agent chats, and writers that keep creating agents, API keys and sessions, remembering
// every write the server acknowledged so that it can be looked for after a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { createTestDatabase, type Engine } from '../../server/testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../server/testing/fake-openai.ts';
import { unlimitedPlanEnv } from '../../server/testing/plans.ts';
import { runScript } from './server-process.ts';

export type RunEvent = components['schemas']['RunEvent'];

/** A user message containing this gets a long answer, streamed a word at a time. */
export const SLOW = 'please answer slowly';
/** A user message containing this is answered after a pause. */
export const LINGER = 'take your time';
const SLOW_ANSWER = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');

export interface World {
  env: Record<string, string>;
  upstream: FakeOpenAI;
  apiKey: string;
  cleanup(): Promise<void>;
}

/** A data directory (and, for PostgreSQL, a fresh database), the upstream, and an API key. */
export async function createWorld(engine: Engine, prefix: string): Promise<World> {
  const dataDir = mkdtempSync(path.join(tmpdir(), prefix));
  const upstream = await startFakeOpenAI({
    models: ['scripted', 'lingering'],
    respond: (request) => {
      const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
      const last = messages.findLast((message) => message.role === 'user');
      if (typeof last?.content !== 'string') return undefined;
      if (last.content.includes(SLOW)) return { text: SLOW_ANSWER, tokensPerSecond: 20 };
      return last.content.includes(LINGER) ? { text: 'Thanks for waiting.', latencyMs: 1500 } : undefined;
    },
  });
  const env: Record<string, string> = { DATA_DIR: dataDir, OPENAI_BASE_URL: upstream.url, ...unlimitedPlanEnv() };
  const database = engine === 'postgres' ? await createTestDatabase('postgres') : undefined;
  if (database) env.DATABASE_URL = database.url!;
  // With PGlite the key must be made while no server holds the data directory.
  const apiKey = await runScript('scripts/create-key.ts', ['--email', `${prefix}@example.com`], env);
  return {
    env,
    upstream,
    apiKey,
    async cleanup() {
      await upstream.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function headersFor(apiKey: string, extra: Record<string, string> = {}): Record<string, string> {
  return { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...extra };
}

export async function createAgent(url: string, apiKey: string): Promise<string> {
  const response = await fetch(`${url}/v1/agents`, { method: 'POST', headers: headersFor(apiKey), body: JSON.stringify({ name: 'Worker', model: 'scripted' }) });
  if (response.status !== 201) throw new Error(`creating the agent answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

export interface OpenStream {
  runId: string;
  sessionId: string;
  /** Every event received so far. */
  events: RunEvent[];
  /** Resolves when the connection ends: cleanly (the server ended the stream) or with the error that cut it. */
  closed: Promise<{ clean: boolean }>;
}

/** Reads an event stream in the background; resolves once `ready` holds for the events so far. */
export async function follow(response: Response, ready: (events: RunEvent[]) => boolean): Promise<Omit<OpenStream, 'runId' | 'sessionId'>> {
  if (response.status !== 200) throw new Error(`the stream answered ${response.status}: ${await response.text()}`);
  const events: RunEvent[] = [];
  let signal: () => void = () => undefined;
  const readyNow = new Promise<void>((resolve) => (signal = resolve));
  const closed = (async () => {
    try {
      for await (const frame of readEventStream<RunEvent>(response.body!)) {
        events.push(frame.data);
        if (ready(events)) signal();
      }
      return { clean: true };
    } catch {
      return { clean: false };
    } finally {
      signal();
    }
  })();
  await readyNow;
  return { events, closed };
}

const deltas = (events: RunEvent[]) => events.filter((event) => event.type === 'RunResponse').length;

/** Starts a streamed chat whose answer is slow, and waits until its text is flowing. */
export async function openSlowRun(url: string, apiKey: string, agentId: string): Promise<OpenStream> {
  const response = await fetch(`${url}/v1/agents/${agentId}/chat`, {
    method: 'POST',
    headers: headersFor(apiKey, { Accept: 'text/event-stream' }),
    body: JSON.stringify({ messages: [{ role: 'user', content: SLOW }] }),
  });
  const stream = await follow(response, (events) => deltas(events) >= 3);
  const started = stream.events[0];
  if (started?.type !== 'RunStarted') throw new Error(`the stream began with ${started?.type}`);
  return { ...stream, runId: started.run_id, sessionId: started.session_id };
}

/** Replays a run's events as a stream, from `after`, and waits until one event beyond it arrived. */
export async function replay(url: string, apiKey: string, runId: string, after: number): Promise<Omit<OpenStream, 'sessionId'>> {
  const response = await fetch(`${url}/v1/runs/${runId}/events`, {
    headers: headersFor(apiKey, { Accept: 'text/event-stream', 'Last-Event-ID': String(after) }),
  });
  return { ...(await follow(response, (events) => events.length > 0)), runId };
}

export interface Acknowledged {
  agents: string[];
  apiKeys: string[];
  /** JSON chats answered 200: what the turn said, to be found in its session. */
  chats: { runId: string; sessionId: string; reply: string }[];
}

export interface Writers {
  acknowledged: Acknowledged;
  /** Answers that were neither a success nor an accepted refusal, with what the request was. */
  unexpected: string[];
  /** Answers 503 service_unavailable (during a shutdown). */
  refused: number;
  /** Requests whose connection failed before an answer (refused, reset, cut by the server's death). */
  connectionErrors: number;
  /** Resolves once `count` writes in all have been acknowledged. */
  acknowledgedAtLeast(count: number): Promise<void>;
  /** Lets each worker finish its request in flight, then stop. */
  stop(): Promise<void>;
}

/** `workers` concurrent loops, each creating an agent, an API key, or a session by a JSON chat in turn. */
/** A 503 that says nothing was done: the server's own (shutting down), or a load balancer's with no server to send to. */
function refusal(text: string): boolean {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code === 'service_unavailable';
  } catch {
    return /503 Service Unavailable/i.test(text);
  }
}

export function startWriters(url: string, apiKey: string, agentId: string, workers: number): Writers {
  const acknowledged: Acknowledged = { agents: [], apiKeys: [], chats: [] };
  const unexpected: string[] = [];
  let refused = 0;
  let connectionErrors = 0;
  let stopping = false;
  const total = () => acknowledged.agents.length + acknowledged.apiKeys.length + acknowledged.chats.length;
  const waiters = new Set<{ count: number; resolve: () => void }>();
  const notify = () => {
    for (const waiter of waiters) if (total() >= waiter.count) waiter.resolve();
  };

  const write = async (kind: number, n: number) => {
    const headers = headersFor(apiKey);
    if (kind === 0) {
      const response = await fetch(`${url}/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ name: `agent ${n}`, model: 'scripted' }) });
      return { response, expected: 201, keep: (body: { id: string }) => acknowledged.agents.push(body.id) };
    }
    if (kind === 1) {
      const response = await fetch(`${url}/v1/api-keys`, { method: 'POST', headers, body: JSON.stringify({ name: `key ${n}` }) });
      return { response, expected: 201, keep: (body: { id: string }) => acknowledged.apiKeys.push(body.id) };
    }
    const response = await fetch(`${url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ messages: [{ role: 'user', content: `note ${n}` }] }),
    });
    return {
      response,
      expected: 200,
      keep: (body: { run_id: string; session_id: string; message: { content: string } }) =>
        acknowledged.chats.push({ runId: body.run_id, sessionId: body.session_id, reply: body.message.content }),
    };
  };

  let counter = 0;
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let kind = worker % 3; !stopping; kind = (kind + 1) % 3) {
      const n = counter++;
      let outcome: Awaited<ReturnType<typeof write>>;
      try {
        outcome = await write(kind, n);
      } catch {
        connectionErrors += 1;
        // The server is gone or going; a new connection will be refused until it is back.
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const { response, expected, keep } = outcome;
      let text: string;
      try {
        text = await response.text();
      } catch {
        // The answer was cut short: not acknowledged.
        connectionErrors += 1;
        continue;
      }
      if (response.status === expected) {
        keep(JSON.parse(text) as never);
        notify();
      } else if (response.status === 503 && refusal(text)) {
        refused += 1;
      } else if (response.status === 502 && !response.headers.get('content-type')?.includes('application/json')) {
        // A load balancer's own 502: the server it chose died with this request in flight. No server
        // answered it, so it is a cut connection, not an answer (and not acknowledged).
        connectionErrors += 1;
      } else {
        unexpected.push(`write ${kind} answered ${response.status}: ${text}`);
      }
    }
  });

  return {
    acknowledged,
    unexpected,
    get refused() {
      return refused;
    },
    get connectionErrors() {
      return connectionErrors;
    },
    acknowledgedAtLeast(count) {
      if (total() >= count) return Promise.resolve();
      return new Promise((resolve) => {
        const waiter = {
          count,
          resolve: () => {
            waiters.delete(waiter);
            resolve();
          },
        };
        waiters.add(waiter);
      });
    },
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** Problems with acknowledged writes after a restart: each one missing, or not as it was answered. */
export async function missingWrites(url: string, apiKey: string, acknowledged: Acknowledged): Promise<string[]> {
  const problems: string[] = [];
  const headers = headersFor(apiKey);
  const get = async (path: string) => {
    const response = await fetch(`${url}${path}`, { headers });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  for (const id of acknowledged.agents) {
    const { status } = await get(`/v1/agents/${id}`);
    if (status !== 200) problems.push(`agent ${id}: ${status}`);
  }
  for (const id of acknowledged.apiKeys) {
    const { status } = await get(`/v1/api-keys/${id}`);
    if (status !== 200) problems.push(`API key ${id}: ${status}`);
  }
  for (const chat of acknowledged.chats) {
    const run = await get(`/v1/runs/${chat.runId}`);
    if (run.status !== 200 || run.body.status !== 'completed') problems.push(`run ${chat.runId}: ${run.status} ${String(run.body.status)}`);
    const session = await get(`/v1/sessions/${chat.sessionId}`);
    const messages = (session.body.messages ?? []) as { role: string; content: unknown }[];
    if (session.status !== 200 || !messages.some((message) => message.role === 'assistant' && message.content === chat.reply)) {
      problems.push(`session ${chat.sessionId}: ${session.status}, ${messages.length} messages without the acknowledged reply`);
    }
  }
  return problems;
}

/** Every stored event of a run, in order. */
export async function storedEvents(url: string, apiKey: string, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  let after = 0;
  for (;;) {
    const response = await fetch(`${url}/v1/runs/${runId}/events?limit=100&after=${after}`, { headers: headersFor(apiKey, { Accept: 'application/json' }) });
    if (response.status !== 200) throw new Error(`events of ${runId} answered ${response.status}`);
    const page = (await response.json()) as { data: RunEvent[]; has_more: boolean; next_cursor: string | null };
    events.push(...page.data);
    if (!page.has_more || page.next_cursor === null) return events;
    after = Number(page.next_cursor);
  }
}
