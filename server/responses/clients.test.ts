// The Responses API driven by the clients people use, with their default transports: the OpenAI Agents
// SDK running an agent with a function tool, and the AI SDK's `openai(id)` provider (generateText,
// streamText, a tool loop). Each against `local`, an OpenAI-compatible upstream on loopback, the
// Anthropic upstream on loopback, and an agent of ours (`agent:<id>`) that the client gives the tool.
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateText, isStepCount, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { availableEngines } from '../testing/database.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../testing/fake-anthropic.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import type { RecordedRequest } from '../testing/fake-upstream.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

const ANTHROPIC_KEY = 'sk-ant-test-secret-key-0015';
const PROMPT = 'get_weather {"city": "Paris"}';
const FORECAST = 'sunny and 21 degrees';

setTracingDisabled(true);

type Message = { role: string; content: unknown };

/** The upstreams behave as `local` does: a tool named by the user is called; a tool's result is told back. */
function lastOf(request: RecordedRequest): { message: Message | undefined; tools: boolean } {
  const body = request.body as { messages?: Message[]; tools?: unknown[] };
  return { message: body.messages?.at(-1), tools: (body.tools?.length ?? 0) > 0 };
}

const toolResultOf = (content: unknown): string | undefined =>
  Array.isArray(content) ? (content as { type: string; content?: unknown }[]).filter((block) => block.type === 'tool_result').map((block) => JSON.stringify(block.content)).join(' ') || undefined : undefined;

describe.each(await availableEngines())('OpenAI clients over the Responses API on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let openaiUpstream: FakeOpenAI;
  let anthropicUpstream: FakeAnthropic;
  let agentModel: string;

  beforeAll(async () => {
    openaiUpstream = await startFakeOpenAI({
      models: ['scripted'],
      respond: (request) => {
        const { message, tools } = lastOf(request);
        if (message?.role === 'tool') return { text: `The tool said: ${String(message.content)}.` };
        if (tools && String(message?.content).includes('get_weather')) return { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
        return undefined;
      },
    });
    anthropicUpstream = await startFakeAnthropic({
      apiKey: ANTHROPIC_KEY,
      models: ['claude-test-1'],
      respond: (request) => {
        const { message, tools } = lastOf(request);
        const result = toolResultOf(message?.content);
        if (result) return { content: [{ type: 'text', text: `The tool said: ${result}.` }] };
        if (tools && JSON.stringify(message?.content).includes('get_weather')) return { content: [{ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } }], stopReason: 'tool_use' };
        return undefined;
      },
    });
    server = await startTestServer({
      engine,
      env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: openaiUpstream.url, ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: anthropicUpstream.url },
    });
    user = await server.signUp();
    const agent = await user.client.POST('/v1/agents', { body: { name: 'Forecaster', instructions: 'Answer about the weather.', model: 'local' } });
    agentModel = `agent:${agent.data!.id}`;
  });
  afterAll(async () => {
    await server?.close();
    await openaiUpstream?.close();
    await anthropicUpstream?.close();
  });

  const targets = () => ['local', 'scripted', 'claude-test-1', agentModel];
  const openai = () => new OpenAI({ apiKey: user.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });

  it('runs an @openai/agents agent with a function tool over its default Responses transport', async () => {
    for (const model of targets()) {
      const calls: string[] = [];
      const getWeather = agentTool({
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        execute: ({ city }) => {
          calls.push(city);
          return FORECAST;
        },
      });
      const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: openai() }), tracingDisabled: true });
      const result = await runner.run(new Agent({ name: 'Weather', instructions: 'Use the tool.', model, tools: [getWeather] }), PROMPT);
      expect(calls, model).toEqual(['Paris']);
      expect(String(result.finalOutput), model).toContain(FORECAST);
      // The transport was the Responses API: the last response is stored here.
      expect((await openai().responses.retrieve(result.lastResponseId!)).status, model).toBe('completed');
    }
  });

  it("answers the AI SDK's openai(id) provider: generateText, streamText and a tool loop", async () => {
    const provider = createOpenAI({ apiKey: user.apiKey, baseURL: `${server.url}/v1` });
    for (const model of targets()) {
      const plain = await generateText({ model: provider(model), prompt: 'Hello from the AI SDK.' });
      expect(plain.text, model).toContain('Hello from the AI SDK.');
      expect(plain.response.id, model).toMatch(/^resp_/);

      const streamed = streamText({ model: provider(model), prompt: 'Streaming words now.' });
      let text = '';
      for await (const piece of streamed.textStream) text += piece;
      expect(text, model).toContain('Streaming words now.');

      const calls: string[] = [];
      const looped = await generateText({
        model: provider(model),
        prompt: PROMPT,
        tools: {
          get_weather: tool({
            description: 'The weather in a city',
            inputSchema: z.object({ city: z.string() }),
            execute: async ({ city }) => {
              calls.push(city);
              return FORECAST;
            },
          }),
        },
        stopWhen: isStepCount(3),
      });
      expect(calls, model).toEqual(['Paris']);
      expect(looped.text, model).toContain(FORECAST);
    }
  });
});
