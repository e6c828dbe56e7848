// The validator's compiled route matchers are kept, and match what compiling them afresh matches; inside an
// operation's Express route the validator takes the operation from the route instead of looking it up.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { validatorFor } from '../app.ts';
import { loadConfig } from '../config.ts';
import { loadContract } from './contract.ts';
import { jsonBodyParser } from './operations.ts';
import { cacheValidatorRouteMatchers, validatorPathToRegexp } from './route-matchers.ts';

describe('cacheValidatorRouteMatchers', () => {
  it('compiles each route once per set of options, and matches as before', () => {
    const compiled: unknown[] = [];
    const module = {
      pathToRegexp(path: unknown, options?: Record<string, unknown>) {
        compiled.push(path);
        return validatorPathToRegexp().pathToRegexp(path, options);
      },
    };
    cacheValidatorRouteMatchers(module);
    cacheValidatorRouteMatchers(module);

    const first = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: false, strict: false });
    const again = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: false, strict: false });
    expect(again).toBe(first);
    expect(first.regexp.exec('/v1/agents/agt_1')?.[1]).toBe('agt_1');
    expect(first.regexp.exec('/v1/agents')).toBeNull();
    expect(first.regexp.exec('/V1/AGENTS/agt_1')).not.toBeNull();

    const sensitive = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: true, strict: false });
    expect(sensitive).not.toBe(first);
    expect(sensitive.regexp.exec('/V1/AGENTS/agt_1')).toBeNull();
    expect(compiled).toEqual(['/v1/agents/:agent_id', '/v1/agents/:agent_id']);

    // Options it does not know, and routes that are not strings, are compiled every time.
    module.pathToRegexp('/v1/teams', { delimiter: '.' });
    module.pathToRegexp('/v1/teams', { delimiter: '.' });
    expect(compiled).toHaveLength(4);
  });

  it('is installed on the path-to-regexp module the validator loads', () => {
    const module = validatorPathToRegexp();
    cacheValidatorRouteMatchers();
    expect(module.pathToRegexp('/v1/models/:model', {})).toBe(module.pathToRegexp('/v1/models/:model', {}));
  });
});

describe('lookUpValidatorRoutesByExpressRoute', () => {
  // An app as the server mounts the validator: inside the operation's own Express route, and once more with
  // app.use for a path outside any route.
  async function appWith() {
    const config = loadConfig({ NODE_ENV: 'production' });
    const validator = validatorFor(loadContract(), config);
    const app = express();
    app.set('query parser', 'simple');
    const seen = (req: express.Request, res: express.Response) => {
      const { openapi } = req as express.Request & { openapi?: { openApiRoute: string; expressRoute: string; pathParams: unknown } };
      res.json({ openApiRoute: openapi?.openApiRoute, expressRoute: openapi?.expressRoute, pathParams: openapi?.pathParams, params: req.params });
    };
    app.post('/v1/chat/completions', jsonBodyParser(config.bodyLimitBytes), ...validator, seen);
    app.get('/v1/agents/:agentId', ...validator, seen);
    app.get('/v1/sessions/:sessionId/runs', ...validator, seen);
    app.use('/v1/models', ...validator, seen);
    app.use((error: { status?: number; message: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(error.status ?? 500).json({ error: error.message });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  it('takes the operation from the Express route, without trying the contract’s routes, and validates as before', async () => {
    const { url, close } = await appWith();
    const module = validatorPathToRegexp();
    const compile = module.pathToRegexp;
    let tried = 0;
    module.pathToRegexp = (path, options) => {
      tried++;
      return compile(path, options);
    };
    try {
      const agent = await fetch(`${url}/v1/agents/agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D`);
      expect(await agent.json()).toEqual({
        openApiRoute: '/v1/agents/{agentId}',
        expressRoute: '/v1/agents/:agentId',
        pathParams: { agentId: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' },
        params: { agentId: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' },
      });
      const runs = await fetch(`${url}/v1/sessions/ses_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/runs?limit=5`);
      expect(await runs.json()).toMatchObject({ openApiRoute: '/v1/sessions/{sessionId}/runs', pathParams: { sessionId: 'ses_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' } });
      const chat = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
      expect(await chat.json()).toMatchObject({ openApiRoute: '/v1/chat/completions' });
      expect(tried).toBe(0);

      // The contract still decides what is valid: a bad body and a bad query are refused.
      const bad = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm' }) });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toContain('messages');
      const badQuery = await fetch(`${url}/v1/sessions/ses_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/runs?limit=many`);
      expect(badQuery.status).toBe(400);
      // The path parameter is checked too, decoded as Express decoded it.
      const badId = await fetch(`${url}/v1/agents/agt%2042`);
      expect(badId.status).toBe(400);
      expect(((await badId.json()) as { error: string }).error).toContain('agentId');
      expect(tried).toBe(0);

      // Outside an operation's route, the validator looks the operation up itself.
      const models = await fetch(`${url}/v1/models/gpt-x`);
      expect(await models.json()).toMatchObject({ openApiRoute: '/v1/models/{model}', pathParams: { model: 'gpt-x' } });
      expect(tried).toBeGreaterThan(0);
    } finally {
      module.pathToRegexp = compile;
      await close();
    }
  });
});
