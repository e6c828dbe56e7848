// A five-minute tour: create an agent with a client-side tool, chat with it, and let the client run the
// tool when the agent asks. Start the server (`npm start`), get a key (`npm run create-key -- --email
// you@example.com`), then:
//   OPEN_AGENT_API_KEY=oaa_… npm run quickstart
import { createOpenAgentClient } from '../index.ts';

const client = createOpenAgentClient({
  baseUrl: process.env.OPEN_AGENT_API_URL ?? 'http://localhost:3000',
  apiKey: process.env.OPEN_AGENT_API_KEY ?? '',
});

const created = await client.POST('/v1/agents', {
  body: {
    name: 'Weather helper',
    instructions: 'Answer weather questions. Use get_weather for current conditions.',
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather for a city.',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ],
  },
});
if (!created.data) throw new Error(`creating the agent failed: ${JSON.stringify(created.error)}`);
const agent = created.data;
console.log(`agent ${agent.id} on model ${agent.model}`);

// The built-in `local` model calls a tool when the message names it, with the first JSON object as arguments.
const turn = await client.agents.runWithTools(
  agent.id,
  { messages: [{ role: 'user', content: 'What is the weather? get_weather {"city": "Paris"}' }] },
  { get_weather: ({ city }) => ({ city, temperature_c: 18, sky: 'clear' }) },
  { onEvent: (event) => console.log(`  ${event.sequence_number} ${event.type}`) },
);
console.log(`answer: ${turn.message?.content}`);

// Continue the same session; the server keeps the history.
for await (const event of client.agents.chat(agent.id, { session_id: turn.session_id, stream: true, messages: [{ role: 'user', content: 'Thanks!' }] })) {
  if (event.type === 'RunResponse' && event.delta) process.stdout.write(event.delta);
}
process.stdout.write('\n');
