// Agents from creation to deletion, list pagination, request validation, and chat: JSON and streamed
// turns, sessions, runs, replay, client-side tools that halt a run and results that resume it, and cancel.
import { isDeepStrictEqual } from 'node:util';
import type { Check, Context, Schemas } from '../context.ts';
import { TOOL, TOOL_NAME, TOOL_PROMPT } from '../context.ts';
import type { RunStream } from '../streams.ts';
import { pageThrough } from './pagination.ts';
import { checkReplay, streamTurn, toolResults } from './runs.ts';

type Run = Schemas['Run'];

async function getRun(t: Context, runId: string): Promise<Run> {
  return (await t.call('getRun', { params: { runId }, expect: 200 })).json as Run;
}

async function chatJson(t: Context, agentId: string, body: Record<string, unknown>): Promise<Schemas['ChatTurn']> {
  return (await t.call('chatWithAgent', { params: { agentId }, body, expect: 200 })).json as Schemas['ChatTurn'];
}

function toolRequestOf(stream: RunStream): Schemas['ToolRequestEvent'] | undefined {
  return stream.terminal?.type === 'ToolRequest' ? (stream.terminal as unknown as Schemas['ToolRequestEvent']) : undefined;
}

const notApplicable = (t: Context, model: string) =>
  t.note('chatWithAgent', `tool halt and resume not applicable: ${model} answered without calling ${TOOL_NAME}`);

export const agentChecks: Check[] = [
  {
    name: 'agent lifecycle',
    operations: ['createAgent', 'getAgent', 'updateAgent', 'deleteAgent'],
    async run(t) {
      const model = await t.model();
      const agent = await t.createAgent({ description: 'made by the conformance kit', instructions: 'Answer briefly.', tools: [TOOL] });
      t.check('createAgent', agent.model === model, `the agent's model is ${agent.model}, not ${model}`);
      t.check('createAgent', agent.tools[0]?.function.name === TOOL_NAME, 'the agent does not keep its tools');
      t.check('createAgent', agent.metadata.conformance === t.nonce, 'the agent does not keep its metadata');
      t.check('createAgent', agent.max_steps === 10 && agent.run_timeout_seconds === 300, 'max_steps and run_timeout_seconds do not take their declared defaults (10, 300)');

      const fetched = (await t.call('getAgent', { params: { agentId: agent.id }, expect: 200 })).json as Schemas['Agent'];
      t.check('getAgent', fetched.id === agent.id && fetched.name === agent.name, 'GET /v1/agents/{agentId} answers another agent');

      const name = `conformance ${t.nonce} renamed`;
      const updated = (await t.call('updateAgent', { params: { agentId: agent.id }, body: { name, instructions: null }, expect: 200 })).json as Schemas['Agent'];
      t.check('updateAgent', updated.name === name && updated.instructions === null, 'PATCH did not change the name or clear the instructions');
      t.check('updateAgent', updated.description === agent.description && updated.created_at === agent.created_at, 'PATCH changed fields it was not given');
      await t.call('updateAgent', { params: { agentId: agent.id }, body: {}, expect: 400, halt: false });

      await t.call('deleteAgent', { params: { agentId: agent.id }, expect: 204 });
      await t.call('getAgent', { params: { agentId: agent.id }, expect: 404, halt: false });
      await t.call('deleteAgent', { params: { agentId: agent.id }, expect: 404, halt: false });
    },
  },
  {
    name: 'request validation',
    operations: ['createAgent', 'listAgents'],
    async run(t) {
      const empty = await t.call('createAgent', { body: {}, expect: 400, halt: false });
      const error = (empty.json as Schemas['Error'] | undefined)?.error;
      if (empty.status === 400) {
        t.check('createAgent', error?.code === 'validation_error', `a body without name answered code ${error?.code}, not validation_error`);
        t.check('createAgent', (error?.details?.length ?? 0) > 0, 'a validation error lists no details');
      }
      const malformed = await t.call('createAgent', { rawBody: '{"name": ', expect: 400, halt: false });
      const code = (malformed.json as Schemas['Error'] | undefined)?.error.code;
      t.check('createAgent', malformed.status !== 400 || code === 'invalid_json' || code === 'validation_error', `malformed JSON answered code ${code}`);
      await t.call('createAgent', { body: { name: 'conformance', model: `conformance-no-such-model-${t.nonce}` }, expect: 400, halt: false });
      await t.call('listAgents', { query: { limit: 0 }, expect: 400, halt: false });
      await t.call('listAgents', { query: { limit: 101 }, expect: 400, halt: false });
    },
  },
  {
    name: 'agent pagination',
    operations: ['listAgents'],
    async run(t) {
      const made: string[] = [];
      for (let i = 1; i <= 3; i++) made.push((await t.createAgent({ name: `conformance ${t.nonce} page ${i}` })).id);
      const paged = await pageThrough(t, 'listAgents', { limit: 2 });
      const positions = made.map((id) => paged.ids.indexOf(id));
      t.check('listAgents', positions.every((position) => position >= 0), 'following next_cursor does not reach every agent just made');
      t.check('listAgents', positions[0]! > positions[1]! && positions[1]! > positions[2]!, 'the list is not newest first');
      for (const agentId of made) await t.call('deleteAgent', { params: { agentId }, expect: 204, halt: false });
    },
  },
  {
    name: 'agent chat, sessions and runs',
    operations: ['chatWithAgent', 'getRun', 'listRunEvents', 'listSessions', 'getSession', 'listSessionRuns', 'deleteSession'],
    async run(t) {
      const agent = await t.agent();
      const text = `conformance ${t.nonce} alpha beta gamma`;
      const first = await chatJson(t, agent.id, { messages: [{ role: 'user', content: text }] });
      t.check('chatWithAgent', first.status === 'completed' && first.finish_reason !== 'tool_calls', `a plain turn ended ${first.status}`);
      t.check('chatWithAgent', first.agent_id === agent.id, 'the turn names another agent');
      t.check('chatWithAgent', first.message?.role === 'assistant' && isDeepStrictEqual(first.messages.at(-1), first.message), 'message is not the last of messages');

      const run = await getRun(t, first.run_id);
      t.check('getRun', run.id === first.run_id && run.session_id === first.session_id && run.agent_id === agent.id, 'the run does not match its turn');
      t.check('getRun', run.status === 'completed' && run.completed_at !== null && run.last_sequence_number >= 2, `the finished run says status ${run.status}, last_sequence_number ${run.last_sequence_number}`);

      const second = await chatJson(t, agent.id, { session_id: first.session_id, messages: [{ role: 'user', content: `${text} again` }] });
      t.check('chatWithAgent', second.session_id === first.session_id && second.run_id !== first.run_id, 'a turn with session_id did not continue the session in a new run');

      const session = (await t.call('getSession', { params: { sessionId: first.session_id }, expect: 200 })).json as Schemas['SessionWithMessages'];
      t.check('getSession', session.agent_id === agent.id && session.messages.length >= 4, `the session holds ${session.messages.length} messages after two turns`);
      t.check('getSession', session.message_count === session.messages.length, `message_count ${session.message_count} is not the ${session.messages.length} messages`);
      t.check('getSession', session.messages.some((message) => message.role === 'user' && message.content === text), "the session lacks the first turn's message");
      const sessions = await pageThrough(t, 'listSessions', { query: { agent_id: agent.id } });
      t.check('listSessions', sessions.ids.includes(first.session_id), 'the session is not listed for its agent');
      const runs = await pageThrough(t, 'listSessionRuns', { params: { sessionId: first.session_id }, limit: 1 });
      t.check('listSessionRuns', runs.complete && runs.ids.join() === [second.run_id, first.run_id].join(), `the session lists runs ${runs.ids.join(', ')}, not its two turns' newest first`);

      const streamed = await streamTurn(t, 'chatWithAgent', { agentId: agent.id }, { messages: [{ role: 'user', content: text }] });
      const started = streamed.events[0] as unknown as Schemas['RunStartedEvent'] | undefined;
      t.check('chatWithAgent', started?.agent_id === agent.id && started.resumed === false, 'RunStarted does not name the agent, or says resumed');
      t.check('chatWithAgent', streamed.terminal?.type === 'RunCompleted', `the streamed turn ended with ${streamed.terminal?.type}`);
      await streamTurn(t, 'chatWithAgent', { agentId: agent.id }, { messages: [{ role: 'user', content: text }] }, 'Accept: text/event-stream');

      if (streamed.runId) {
        const streamedRun = await getRun(t, streamed.runId);
        t.check('getRun', streamedRun.last_sequence_number === streamed.events.at(-1)?.sequence_number, `last_sequence_number ${streamedRun.last_sequence_number} is not the last event's`);
        await checkReplay(t, streamed.runId, [streamed]);
      }
      await t.call('getRun', { params: { runId: 'run_0000000000conformance' }, expect: 404, halt: false });

      await t.call('deleteSession', { params: { sessionId: first.session_id }, expect: 204 });
      await t.call('getSession', { params: { sessionId: first.session_id }, expect: 404, halt: false });
      const gone = await t.call('getRun', { params: { runId: first.run_id }, expect: 404, halt: false });
      t.check('deleteSession', gone.status === 404, "deleting a session left its runs");
    },
  },
  {
    name: 'client-side tools halt and resume a streamed run',
    operations: ['chatWithAgent', 'listRunEvents', 'getRun'],
    async run(t) {
      const model = await t.model();
      const agent = await t.agent();
      const halted = await streamTurn(t, 'chatWithAgent', { agentId: agent.id }, { messages: [{ role: 'user', content: TOOL_PROMPT }], tools: [TOOL] });
      const request = toolRequestOf(halted);
      if (!request) {
        if (halted.terminal?.type === 'RunCompleted') notApplicable(t, model);
        return;
      }
      t.check('chatWithAgent', request.tool_calls.some((call) => call.function.name === TOOL_NAME), `the ToolRequest asks for ${request.tool_calls.map((call) => call.function.name).join(', ')}`);
      const waiting = await getRun(t, request.run_id);
      t.check('getRun', waiting.status === 'requires_action', `a run halted by ToolRequest says status ${waiting.status}`);
      t.check(
        'getRun',
        isDeepStrictEqual(waiting.required_action?.tool_calls.map((call) => call.id), request.tool_calls.map((call) => call.id)),
        "the run's required_action does not list the ToolRequest's calls",
      );

      const resumed = await streamTurn(t, 'chatWithAgent', { agentId: agent.id }, { session_id: request.session_id, messages: toolResults(request.tool_calls) });
      const restart = resumed.events[0] as unknown as Schemas['RunStartedEvent'] | undefined;
      t.check('chatWithAgent', restart?.run_id === request.run_id, 'the tool results started a new run instead of continuing the halted one');
      t.check('chatWithAgent', restart?.resumed === true, 'the RunStarted after tool results does not say resumed: true');
      t.check('chatWithAgent', (restart?.sequence_number ?? 0) > request.sequence_number, 'the resumed stream does not continue the sequence numbers');
      t.check('chatWithAgent', resumed.terminal?.type === 'RunCompleted', `the resumed run ended with ${resumed.terminal?.type}, not RunCompleted`);
      t.check('getRun', (await getRun(t, request.run_id)).status === 'completed', 'the resumed run is not completed');
      await checkReplay(t, request.run_id, [halted, resumed]);
    },
  },
  {
    name: 'client-side tools halt and resume a JSON turn; cancel',
    operations: ['chatWithAgent', 'cancelRun', 'getRun', 'listRunEvents'],
    async run(t) {
      const model = await t.model();
      const agent = await t.agent();
      const ask = { messages: [{ role: 'user', content: TOOL_PROMPT }], tools: [TOOL] };
      const halted = await chatJson(t, agent.id, ask);
      if (halted.status !== 'requires_action') {
        notApplicable(t, model);
        const finished = (await t.call('cancelRun', { params: { runId: halted.run_id }, expect: 200 })).json as Run;
        t.check('cancelRun', finished.status === halted.status, `cancelling a finished run changed its status to ${finished.status}`);
        t.note('cancelRun', 'only a finished run was cancelled: the model never halted for a tool');
        return;
      }
      t.check('chatWithAgent', halted.finish_reason === 'tool_calls' && (halted.required_action?.tool_calls.length ?? 0) > 0, 'a halted turn lacks finish_reason tool_calls or required_action');
      const done = await chatJson(t, agent.id, { session_id: halted.session_id, messages: toolResults(halted.required_action!.tool_calls) });
      t.check('chatWithAgent', done.run_id === halted.run_id && done.status === 'completed', `the tool results gave run ${done.run_id} status ${done.status}, not the halted run completed`);
      const again = (await t.call('cancelRun', { params: { runId: done.run_id }, expect: 200 })).json as Run;
      t.check('cancelRun', again.status === 'completed', `cancelling a completed run changed its status to ${again.status}`);

      const waiting = await chatJson(t, agent.id, ask);
      if (waiting.status !== 'requires_action') return;
      const cancelled = (await t.call('cancelRun', { params: { runId: waiting.run_id }, expect: 200 })).json as Run;
      t.check('cancelRun', cancelled.status === 'canceled', `a run waiting for tool results was cancelled to status ${cancelled.status}`);
      t.check('getRun', (await getRun(t, waiting.run_id)).status === 'canceled', 'a cancelled run does not stay canceled');
      const events = await t.call('listRunEvents', { params: { runId: waiting.run_id }, accept: 'text/event-stream', expect: 200 });
      const last = events.events?.at(-1)?.json as Schemas['RunCompletedEvent'] | undefined;
      t.check('cancelRun', last?.type === 'RunCompleted' && last.status === 'canceled', `the cancelled run's events end with ${last?.type} ${last?.status}, not RunCompleted canceled`);
    },
  },
];
