// What a served request leaves for the old generation once it is answered: nothing. V8 collects short-lived
// objects cheaply while they are young; anything the old generation holds that points at a request keeps the
// request, its response and all they reference alive through every young collection, to be copied, promoted
// and found only by the next full one. An object literal with a getter did that for every request (V8 keeps
// a literal's accessors in the old generation; see HandlerRequest in operations.ts). Each case runs in a
// fresh Node process with the collector exposed: it serves a thousand requests one at a time, lets two
// young collections promote whatever survived, and reports how far the old generation grew per request.
import { describe, expect, it } from 'vitest';
import { evalModule, OLD_GENERATION_PROBE } from '../testing/processes.ts';

/** Old-generation bytes per request after serving `path`; `handlers` (module code) replaces handlers of the map. */
async function oldBytesPerRequest(path: string, handlers = '{}'): Promise<number> {
  return evalModule<number>(
    `
    import http from 'node:http';
    ${OLD_GENERATION_PROBE}
    const { startTestServer } = await import('./server/testing/harness.ts');
    const server = await startTestServer({ handlers: ${handlers} });
    const { apiKey } = await server.signUp();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () => new Promise((resolve, reject) => {
      http.get(server.url + ${JSON.stringify(path)}, { agent, headers: { authorization: 'Bearer ' + apiKey } }, (res) => {
        if (res.statusCode !== 200) reject(new Error('status ' + res.statusCode));
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    const perRequest = await oldBytesPer(async (count) => { for (let i = 0; i < count; i++) await get(); }, 200, 1000);
    await server.close();
    console.log(JSON.stringify(perRequest));
    process.exit(0);
  `,
    ['--expose-gc'],
  );
}

describe('a served request', () => {
  it('leaves nothing alive in the old generation, where an accessor literal in its path kept it all', { timeout: 60_000 }, async () => {
    // The control: the same route, its handler holding the request in an object literal's getter for no
    // longer than the call. Each such request outlives the young collections that should have freed it.
    const held = await oldBytesPerRequest(
      '/health',
      `{ getHealth: async (request) => { const held = { get request() { return request; } }; return { status: 200, body: { status: 'ok', version: String(!!held), uptime_seconds: 0 } }; } }`,
    );
    expect(held).toBeGreaterThan(4096);
    // The server's own path: routing, the contract's validator, the glue and its request context. What is
    // left is what any process promotes now and then (compiled code, its feedback), spread over the requests.
    expect(await oldBytesPerRequest('/health')).toBeLessThan(2048);
  });
});
