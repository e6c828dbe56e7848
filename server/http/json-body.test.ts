// Bodies the schemas accept but the server could not take: nesting deep enough to overflow the stack,
// and NUL, which PostgreSQL does not store. Found by the contract fuzzer as 500s; now 400s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { jsonShape, MAX_JSON_DEPTH } from './json-body.ts';

const shape = (text: string) => jsonShape(Buffer.from(text));

describe('jsonShape', () => {
  it('measures nesting, not brackets inside strings', () => {
    expect(shape('{}')).toEqual({ depth: 1, unstorableEscapes: false });
    expect(shape('{"a": [[1], {"b": [2]}]}')).toEqual({ depth: 4, unstorableEscapes: false });
    expect(shape('{"a": "[[[{{{", "b": "\\"[[["}').depth).toBe(1);
    expect(shape('"text"').depth).toBe(0);
  });

  // The only ways a JSON text spells a string no store can keep; a body without them is not walked once parsed.
  it('notes escapes of NUL and of UTF-16 surrogates, in values and keys, and no others', () => {
    for (const text of ['"a\\u0000b"', '{"\\u0000": 1}', '"\\uD800"', '"\\udfff"', '"\\uDbFf"', '["\\ud83d\\ude00"]']) {
      expect(shape(text).unstorableEscapes, text).toBe(true);
    }
    for (const text of ['"plain"', '"\\u00e9"', '"\\u0001"', '"\\ud7ff"', '"\\ue000"', '"\\\\u0000"', '"\\\\ud800"', '"x\\"u0000"', 'u0000', '"é 😀"']) {
      expect(shape(text).unstorableEscapes, text).toBe(false);
    }
  });
});

describe('JSON bodies the store cannot take', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
  });

  const post = (path: string, text: string) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' }, body: text });
  /** An agent whose tool's free-form `parameters` nest `depth` levels (the body itself two more). */
  const agentNesting = (depth: number) =>
    `{"name": "Deep", "model": "local", "tools": [{"type": "function", "function": {"name": "deep", "parameters": ${'{"a":'.repeat(depth - 5)}{}${'}'.repeat(depth - 5)}}}]}`;

  it('answers 400, not 500, to a body nested past the limit', async () => {
    expect(shape(agentNesting(MAX_JSON_DEPTH + 1)).depth).toBe(MAX_JSON_DEPTH + 1);
    const deep = await post('/v1/agents', agentNesting(MAX_JSON_DEPTH + 1));
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('128 levels') });
    // Far deeper, where JSON.stringify overflows the stack.
    const deeper = await post('/v1/agents/agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/process', `{"input": [], "x": ${'['.repeat(20_000)}${']'.repeat(20_000)}}`);
    expect(deeper.status).toBe(400);
  });

  it('takes a body nested up to the limit', async () => {
    const answer = await post('/v1/agents', agentNesting(MAX_JSON_DEPTH));
    expect(answer.status).toBe(201);
  });

  it('answers 400, not 500, to a NUL in a string the store would keep', async () => {
    const agent = (await (await post('/v1/agents', '{"name": "Plain", "model": "local"}')).json()) as { id: string };
    const answer = await post(`/v1/agents/${agent.id}/respond`, '{"messages": [{"role": "user", "content": "a\\u0000b"}]}');
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    const name = await post('/v1/agents', '{"name": "Described", "model": "local", "description": "a\\u0000"}');
    expect(name.status).toBe(400);
  });
});
