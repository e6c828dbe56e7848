// Idempotency-Key on the operations that create something, through the real app on both engines:
// replays, reuse with another request, requests in flight, expiry, scoping, and what is not kept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { availableEngines, type Engine } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { planEnv, unlimitedPlanEnv } from '../testing/plans.ts';
import { ApiError } from '../errors.ts';
import { canonicalJson } from './idempotency.ts';

type PortalSession = components['schemas']['PortalSession'];

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: () => Record<string, unknown>;
}

async function call(server: TestServer, user: TestUser, method: string, url: string, init: { key?: string; body?: unknown; form?: FormData; accept?: string; signal?: AbortSignal } = {}): Promise<Answer> {
  const headers: Record<string, string> = { Authorization: `Bearer ${user.apiKey}` };
  if (init.key !== undefined) headers['Idempotency-Key'] = init.key;
  if (init.accept) headers.Accept = init.accept;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers,
    body: init.form ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function count(server: TestServer, table: string, userId: string): Promise<number> {
  const [row] = await server.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1`, [userId]);
  return row!.n;
}

/** Retries while the key is still claimed: a stream's answer is kept a moment after its run ends. */
async function untilSettled(request: () => Promise<Answer>): Promise<Answer> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const answer = await request();
    if (answer.status !== 409) return answer;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('The idempotency key stayed in progress.');
}

/** A handler for createPortalSession that does what each test scripts, one step per call. */
function scriptedPortal() {
  const steps: (() => Promise<PortalSession>)[] = [];
  let calls = 0;
  return {
    steps,
    get calls() {
      return calls;
    },
    async createPortalSession() {
      calls += 1;
      const step = steps.shift();
      if (!step) throw new Error('No step scripted for this call.');
      return { status: 201 as const, body: await step() };
    },
  };
}

describe('canonicalJson', () => {
  it('writes equal values the same whatever the key order, and different values differently', () => {
    expect(canonicalJson({ b: [1, { d: 2, c: null }], a: 'x' })).toBe(canonicalJson({ a: 'x', b: [1, { c: null, d: 2 }] }));
    expect(canonicalJson({ a: 1, skipped: undefined })).toBe('{"a":1}');
    expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }));
  });
});

describe.each(await availableEngines())('Idempotency-Key on %s', (engine: Engine) => {
  let upstream: FakeOpenAI;
  let server: TestServer;
  let user: TestUser;
  let now = Date.parse('2026-11-20T10:00:00Z');
  const portal = scriptedPortal();

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    server = await startTestServer({
      engine,
      env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-upstream' },
      clock: () => now,
      handlers: { createPortalSession: portal.createPortalSession },
    });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  it('replays the first response to a retry with the same key and body, and creates nothing twice', async () => {
    const body = { name: 'Once', model: 'local', metadata: { b: '2', a: '1' } };
    const first = await call(server, user, 'POST', '/v1/agents', { key: 'create-once', body });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The same body with its keys in another order is the same request.
    const retry = await call(server, user, 'POST', '/v1/agents', { key: 'create-once', body: { metadata: { a: '1', b: '2' }, model: 'local', name: 'Once' } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    const agents = await server.services.db.query<{ id: string }>('SELECT id FROM agents WHERE user_id = $1 AND name = $2', [user.userId, 'Once']);
    expect(agents.map((agent) => agent.id)).toEqual([first.json().id]);
  });

  it('refuses the same key with another body or path (422), and leaves the first answer kept', async () => {
    const first = await call(server, user, 'POST', '/v1/agents', { key: 'reused', body: { name: 'First', model: 'local' } });
    expect(first.status).toBe(201);
    const other = await call(server, user, 'POST', '/v1/agents', { key: 'reused', body: { name: 'Second', model: 'local' } });
    expect(other.status).toBe(422);
    expect(other.json().error).toMatchObject({ code: 'idempotency_key_reused', request_id: other.headers.get('x-request-id') });
    expect(await count(server, 'agents', user.userId)).toBeGreaterThan(0);
    expect((await server.services.db.query('SELECT 1 FROM agents WHERE name = $1', ['Second'])).length).toBe(0);

    const agentId = String(first.json().id);
    const chat = { messages: [{ role: 'user', content: 'hello' }] };
    expect((await call(server, user, 'POST', `/v1/agents/${agentId}/chat`, { key: 'chat-path', body: chat })).status).toBe(200);
    const other2 = await call(server, user, 'POST', '/v1/agents', { key: 'other-path', body: { name: 'Other', model: 'local' } });
    const elsewhere = await call(server, user, 'POST', `/v1/agents/${String(other2.json().id)}/chat`, { key: 'chat-path', body: chat });
    expect(elsewhere.status).toBe(422);

    expect((await call(server, user, 'POST', '/v1/agents', { key: 'reused', body: { name: 'First', model: 'local' } })).text).toBe(first.text);
  });

  it('answers 409 to a retry while the first request is in flight, then replays its answer', async () => {
    let finish!: (session: PortalSession) => void;
    portal.steps.push(() => new Promise<PortalSession>((resolve) => (finish = resolve)));
    const body = { return_url: `${server.url}/billing` };
    const first = call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-slow', body });
    while (portal.calls === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    const during = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-slow', body });
    expect(during.status).toBe(409);
    expect(during.json().error).toMatchObject({ code: 'request_in_progress' });
    // Another body with the key in flight is a reuse all the same.
    expect((await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-slow', body: {} })).status).toBe(422);

    finish({ object: 'portal_session', url: 'https://billing.example.com/p/session_1' });
    const answered = await first;
    expect(answered.status).toBe(201);
    const replay = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-slow', body });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json()).toEqual({ object: 'portal_session', url: 'https://billing.example.com/p/session_1' });
    expect(portal.calls).toBe(1);
  });

  it('lets one of two concurrent identical requests run, and answers the other 409 or the replay', async () => {
    const body = { name: 'Racer', model: 'local' };
    const answers = await Promise.all([0, 1, 2].map(() => call(server, user, 'POST', '/v1/agents', { key: 'race', body })));
    const created = answers.filter((answer) => answer.status === 201);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(created.filter((answer) => answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(new Set(created.map((answer) => answer.json().id)).size).toBe(1);
    expect((await server.services.db.query('SELECT 1 FROM agents WHERE user_id = $1 AND name = $2', [user.userId, 'Racer'])).length).toBe(1);
  });

  it('keeps a 4xx the handler answered, but not a 5xx: a retry after a server error runs again', async () => {
    portal.steps.push(() => Promise.reject(new ApiError('conflict', 'Scripted conflict.')));
    const refused = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-4xx', body: {} });
    expect(refused.status).toBe(409);
    const replayed = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-4xx', body: {} });
    expect(replayed.status).toBe(409);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.text).toBe(refused.text);

    const callsBefore = portal.calls;
    portal.steps.push(
      () => Promise.reject(new Error('Scripted crash.')),
      () => Promise.resolve({ object: 'portal_session' as const, url: 'https://billing.example.com/p/session_2' }),
    );
    const crashed = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-5xx', body: {} });
    expect(crashed.status).toBe(500);
    const again = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-5xx', body: {} });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    const replay = await call(server, user, 'POST', '/v1/billing/portal', { key: 'portal-5xx', body: {} });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(again.text);
    expect(portal.calls - callsBefore).toBe(2);
  });

  it('scopes keys per user and per operation', async () => {
    const other = await server.signUp();
    const body = { name: 'Scoped', model: 'local' };
    const mine = await call(server, user, 'POST', '/v1/agents', { key: 'shared-key', body });
    const theirs = await call(server, other, 'POST', '/v1/agents', { key: 'shared-key', body });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.json().id).not.toBe(mine.json().id);
    const key = await call(server, user, 'POST', '/v1/api-keys', { key: 'shared-key', body: { name: 'scoped' } });
    expect(key.status).toBe(201);
    expect(key.headers.get('idempotent-replayed')).toBeNull();
    expect(await count(server, 'agents', other.userId)).toBe(1);
  });

  it('forgets answers after the TTL, so the key creates again, and prunes expired keys', async () => {
    const fresh = await server.signUp();
    const body = { name: 'Expiring', model: 'local' };
    const first = await call(server, fresh, 'POST', '/v1/agents', { key: 'expiring', body });
    expect(await count(server, 'idempotency_keys', user.userId)).toBeGreaterThan(0);
    now += 23 * 3600 * 1000;
    expect((await call(server, fresh, 'POST', '/v1/agents', { key: 'expiring', body })).headers.get('idempotent-replayed')).toBe('true');
    now += 2 * 3600 * 1000;
    const later = await call(server, fresh, 'POST', '/v1/agents', { key: 'expiring', body });
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.json().id).not.toBe(first.json().id);
    expect(await count(server, 'agents', fresh.userId)).toBe(2);
    // Claiming a key prunes what has expired, now and then: the other user's keys of a day ago are gone.
    expect(await count(server, 'idempotency_keys', user.userId)).toBe(0);

    now += 25 * 3600 * 1000;
    expect(await count(server, 'idempotency_keys', fresh.userId)).toBe(1);
    expect(await server.services.idempotency.prune()).toBe(1);
    expect(await count(server, 'idempotency_keys', fresh.userId)).toBe(0);
  });

  it('checks the key against the contract and ignores it on operations that create nothing', async () => {
    const long = await call(server, user, 'POST', '/v1/agents', { key: 'k'.repeat(256), body: { name: 'Long', model: 'local' } });
    expect(long.status).toBe(400);
    expect(long.json().error).toMatchObject({ code: 'validation_error' });
    expect((await call(server, user, 'POST', '/v1/agents', { key: 'has space', body: { name: 'Spaced', model: 'local' } })).status).toBe(400);
    const search = { query: 'anything' };
    expect((await call(server, user, 'POST', '/v1/knowledge/search', { key: 'ignored', body: search })).status).toBe(200);
    expect((await call(server, user, 'POST', '/v1/knowledge/search', { key: 'ignored', body: search })).headers.get('idempotent-replayed')).toBeNull();
  });

  it('replays a streamed chat as the same events, from the one run it started', async () => {
    const agent = (await call(server, user, 'POST', '/v1/agents', { body: { name: 'Streamer', model: 'local' } })).json();
    const body = { messages: [{ role: 'user', content: 'one two three' }], stream: true };
    const url = `/v1/agents/${String(agent.id)}/chat`;
    const first = await call(server, user, 'POST', url, { key: 'stream-once', body });
    expect(first.status).toBe(200);
    expect(first.text).toContain('event: RunCompleted');
    const retry = await call(server, user, 'POST', url, { key: 'stream-once', body });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(retry.text).toBe(first.text);
    const runs = await server.services.db.query('SELECT 1 FROM runs WHERE agent_id = $1', [String(agent.id)]);
    expect(runs).toHaveLength(1);
  });

  it('follows a stream whose client went away to its end, so that the retry gets it whole', async () => {
    const agent = (await call(server, user, 'POST', '/v1/agents', { body: { name: 'Slow', model: 'scripted' } })).json();
    upstream.enqueue({ text: 'a slow answer in many words', chunkGapMs: 30 });
    const body = { messages: [{ role: 'user', content: 'go' }], stream: true };
    const url = `/v1/agents/${String(agent.id)}/chat`;
    const client = new AbortController();
    const response = await fetch(`${server.url}${url}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'stream-left' },
      body: JSON.stringify(body),
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('RunStarted');
    client.abort();

    const retry = await untilSettled(() => call(server, user, 'POST', url, { key: 'stream-left', body }));
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toContain('event: RunStarted');
    expect(retry.text).toContain('event: RunCompleted');
    expect(retry.text).toContain('many');
    expect(await server.services.db.query('SELECT 1 FROM runs WHERE agent_id = $1', [String(agent.id)])).toHaveLength(1);
  });

  it('replays an uploaded document, and tells another file under the same key apart', async () => {
    const form = (text: string) => {
      const data = new FormData();
      data.append('file', new Blob([text], { type: 'text/plain' }), 'notes.txt');
      data.append('collection', 'idempotent');
      return data;
    };
    const first = await call(server, user, 'POST', '/v1/knowledge/documents', { key: 'upload', form: form('Returns within 30 days.') });
    expect(first.status).toBe(201);
    const retry = await call(server, user, 'POST', '/v1/knowledge/documents', { key: 'upload', form: form('Returns within 30 days.') });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    const other = await call(server, user, 'POST', '/v1/knowledge/documents', { key: 'upload', form: form('Returns within 60 days.') });
    expect(other.status).toBe(422);
  });
});

describe('Idempotency-Key and plan quotas', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ env: planEnv({ agents: 1 }) });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('replays a create that filled the quota, and keeps nothing for a request the quota refused', async () => {
    const body = { name: 'Only', model: 'local' };
    const first = await call(server, user, 'POST', '/v1/agents', { key: 'fills-quota', body });
    expect(first.status).toBe(201);
    const refused = await call(server, user, 'POST', '/v1/agents', { key: 'over-quota', body: { name: 'Second', model: 'local' } });
    expect(refused.status).toBe(402);

    const retry = await call(server, user, 'POST', '/v1/agents', { key: 'fills-quota', body });
    expect(retry.status).toBe(201);
    expect(retry.text).toBe(first.text);

    expect((await call(server, user, 'DELETE', `/v1/agents/${String(first.json().id)}`)).status).toBe(204);
    const later = await call(server, user, 'POST', '/v1/agents', { key: 'over-quota', body: { name: 'Second', model: 'local' } });
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
  });
});
