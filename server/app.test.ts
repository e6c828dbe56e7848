// The contract round-trip for the server spine: requests through the generated client against the real
// app on a random port, with response validation on, so any drift from the contract fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ApiError } from './errors.ts';
import { loadContract } from './http/contract.ts';
import { startTestServer, type TestServer } from './testing/harness.ts';

describe('server spine', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: { BODY_LIMIT_BYTES: '2048', CORS_ORIGINS: 'http://app.example' },
      handlers: {
        // Handlers that break the contract on purpose, to prove the server notices.
        async listRunEvents() {
          return {
            status: 200,
            stream: (async function* () {
              yield { event: 'RunStarted', id: '1', data: { type: 'RunStarted', run_id: 'not an id' } as never };
            })(),
          };
        },
        async getRun() {
          throw new Error('boom: secret internals');
        },
        async getModel() {
          return { status: 200, body: { id: 'x', object: 'model', created: 'yesterday' } as never };
        },
        async listTeams() {
          throw new ApiError('not_implemented', 'listTeams is switched off in this test.');
        },
      },
    });
  });
  afterAll(() => server?.close());

  it('answers health, readiness, the contract and the docs', async () => {
    const client = server.client();
    const health = await client.GET('/health');
    expect(health.response.status).toBe(200);
    expect(health.data).toMatchObject({ status: 'ok', version: loadContract().version });

    const ready = await client.GET('/ready');
    expect(ready.data).toEqual({ status: 'ready', checks: { database: 'ok' } });

    const yaml = await fetch(`${server.url}/openapi.yaml`);
    expect(yaml.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(parse(await yaml.text())).toMatchObject({ openapi: '3.1.0' });

    const docs = await fetch(`${server.url}/docs`);
    const html = await docs.text();
    expect(docs.status).toBe(200);
    expect(html).toContain('/docs/swagger-ui-bundle.js');
    const asset = await fetch(`${server.url}/docs/swagger-ui-bundle.js`);
    expect(asset.status).toBe(200);
    const init = await (await fetch(`${server.url}/docs/swagger-ui-init.js`)).text();
    expect(init).toContain('/openapi.yaml');
  });

  it('puts X-Request-Id on every response, and keeps a well-formed incoming one', async () => {
    const ok = await fetch(`${server.url}/health`);
    expect(ok.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    const missing = await fetch(`${server.url}/nowhere`, { headers: { 'X-Request-Id': 'trace-42' } });
    expect(missing.headers.get('x-request-id')).toBe('trace-42');
    expect((await missing.json()).error.request_id).toBe('trace-42');
    const hostile = await fetch(`${server.url}/health`, { headers: { 'X-Request-Id': 'a b<script>' } });
    expect(hostile.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers unknown routes with 404 and wrong methods with 405 and Allow', async () => {
    const notFound = await fetch(`${server.url}/v1/nothing-here`);
    expect(notFound.status).toBe(404);
    expect((await notFound.json()).error.code).toBe('not_found');

    const wrongMethod = await fetch(`${server.url}/v1/models`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');
    expect((await wrongMethod.json()).error.code).toBe('method_not_allowed');
  });

  it('answers malformed JSON, a wrong content type, an oversized body and a schema violation with the envelope', async () => {
    const post = (body: string, type = 'application/json') =>
      fetch(`${server.url}/v1/auth/magic-link`, { method: 'POST', headers: { 'Content-Type': type }, body });

    const malformed = await post('{"email": ');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.code).toBe('invalid_json');

    const wrongType = await post('email=a@example.com', 'application/x-www-form-urlencoded');
    expect(wrongType.status).toBe(415);
    expect((await wrongType.json()).error.code).toBe('unsupported_media_type');

    const oversized = await post(JSON.stringify({ email: `${'a'.repeat(4000)}@example.com` }));
    expect(oversized.status).toBe(413);
    expect((await oversized.json()).error.code).toBe('payload_too_large');

    const invalid = await server.client().POST('/v1/auth/magic-link', { body: { email: 'not-an-email', extra: 1 } as never });
    expect(invalid.response.status).toBe(400);
    expect(invalid.error?.error.code).toBe('validation_error');
    expect(invalid.error?.error.details?.map((d) => d.path)).toEqual(expect.arrayContaining(['/body/email']));
  });

  it('answers 401 with WWW-Authenticate on secured operations, before looking at the body', async () => {
    const response = await fetch(`${server.url}/v1/api-keys`, { method: 'POST', body: '{oops' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="open-agent-api"');
    expect((await response.json()).error.code).toBe('unauthorized');
  });

  it('never sends a stack trace: an unexpected error is a 500 envelope with the request id', async () => {
    const { client } = await server.signUp();
    const result = await client.GET('/v1/runs/{runId}', { params: { path: { runId: 'run_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' } } });
    expect(result.response.status).toBe(500);
    const text = JSON.stringify(result.error);
    expect(result.error?.error).toMatchObject({ code: 'internal_error', message: 'An unexpected error occurred.' });
    expect(result.error?.error.request_id).toBe(result.response.headers.get('x-request-id'));
    expect(text).not.toContain('boom');
    expect(text).not.toMatch(/at .*\.ts:\d+/);
  });

  it('turns a response body off the contract into a 500, so handlers cannot drift', async () => {
    const { client } = await server.signUp();
    const result = await client.GET('/v1/models/{model}', { params: { path: { model: 'x' } } });
    expect(result.response.status).toBe(500);
    expect(result.error?.error.code).toBe('internal_error');
  });

  it('breaks a stream whose event is off the contract, so the client cannot miss it', async () => {
    const { apiKey } = await server.signUp();
    const response = await fetch(`${server.url}/v1/runs/run_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/events`, {
      headers: { Authorization: `Bearer ${apiKey}`, Accept: 'text/event-stream' },
    });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('sends security headers and CORS for the configured origin only', async () => {
    const allowed = await fetch(`${server.url}/health`, { headers: { Origin: 'http://app.example' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://app.example');
    expect(allowed.headers.get('x-content-type-options')).toBe('nosniff');
    const other = await fetch(`${server.url}/health`, { headers: { Origin: 'http://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers 501 not_implemented through the envelope for an operation switched off', async () => {
    const { client } = await server.signUp();
    const result = await client.GET('/v1/teams');
    expect(result.response.status).toBe(501);
    expect(result.error?.error.code).toBe('not_implemented');
  });
});
