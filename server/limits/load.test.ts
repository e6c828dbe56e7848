// Load shedding and live-run accounting under many streams (#14 items 11 and 12). Overload is driven two
// ways: the real monitor, by blocking the event loop for longer than its threshold; and the app's guard,
// by the server's own monitor saying it is overloaded. Nothing here measures time.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { createLoadMonitor } from './load.ts';

describe('the event loop monitor', () => {
  it('says overloaded once the loop stayed blocked past its threshold for two windows, and never with a threshold of 0', async () => {
    const monitor = createLoadMonitor(100);
    const never = createLoadMonitor(0);
    const block = async () => {
      const until = performance.now() + 600;
      while (performance.now() < until) {
        // The loop is blocked, as a CPU-bound request would block it.
      }
      // The monitor's timer, late by the block, runs before this one.
      await new Promise((resolve) => setTimeout(resolve, 0));
    };
    try {
      await block();
      expect(monitor.delayMs()).toBeGreaterThan(100);
      // One stall (a module loaded on first use, a long collection) refuses nobody.
      expect(monitor.overloaded()).toBe(false);
      await block();
      expect(monitor.overloaded()).toBe(true);
      expect(never.overloaded()).toBe(false);
    } finally {
      monitor.stop();
      never.stop();
    }
  });

  it('does not count a block it is told was on purpose', async () => {
    const monitor = createLoadMonitor(100);
    try {
      // Two blocks in a row would make an overload (above); told each was on purpose, it counts neither.
      for (let block = 0; block < 2; block++) {
        const until = performance.now() + 600;
        while (performance.now() < until) {
          // Work done on purpose while nothing was in flight (a memory-reducing collection).
        }
        monitor.discount();
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      expect(monitor.overloaded()).toBe(false);
    } finally {
      monitor.stop();
    }
  });
});

describe.each(await availableEngines())('under load on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let agentId: string;

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    user = await server.signUp();
    agentId = (await user.client.POST('/v1/agents', { body: { name: 'Busy' } })).data!.id;
  });
  afterAll(() => server?.close());

  const chat = (init: RequestInit = {}) =>
    fetch(`${server.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Tell me about lighthouses and their keepers.' }] }),
      ...init,
    });

  it('refuses new runs with 503 and Retry-After while overloaded, and still answers health, readiness and reads', async () => {
    const overloaded = vi.spyOn(server.services.load, 'overloaded').mockReturnValue(true);
    try {
      const refused = await chat();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toMatchObject({ error: { code: 'service_unavailable' } });
      const completion = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(completion.status).toBe(503);
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      expect((await fetch(`${server.url}/ready`)).status).toBe(200);
      expect((await user.client.GET('/v1/agents/{agentId}', { params: { path: { agentId } } })).response.status).toBe(200);
    } finally {
      overloaded.mockRestore();
    }
    const accepted = await chat();
    expect(accepted.status).toBe(200);
    await accepted.text();
  });

  it('counts no live run once many streams have ended, finished, left or cancelled', async () => {
    const sample = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/^runs_live (\d+)/m.exec(text)?.[1]);
    };
    await Promise.all(
      Array.from({ length: 60 }, async (_, index) => {
        const controller = new AbortController();
        const response = await chat({ signal: controller.signal });
        expect(response.status).toBe(200);
        const frames = readEventStream<{ type: string; run_id: string }>(response.body!)[Symbol.asyncIterator]();
        const first = (await frames.next()).value!.data;
        if (index % 3 === 1) {
          // The client goes away; a resumable run goes on to its end without it.
          controller.abort();
          return;
        }
        if (index % 3 === 2) await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: first.run_id } } });
        for (let next = await frames.next(); !next.done; next = await frames.next());
      }),
    );
    await vi.waitFor(() => expect(server.services.engine.liveRuns()).toBe(0), { timeout: 20_000, interval: 100 });
    expect(await sample()).toBe(0);
  });
});
