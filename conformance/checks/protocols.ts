// The protocol adapters every agent and team speaks: AgentScope's /process (a data-only stream of
// response, message and content objects, or the final response as JSON), Connexity's /respond, and AG-UI's
// /ag-ui (a data-only stream of AG-UI events).
import type { OperationId } from '../contract.ts';
import type { Check, Context, Schemas } from '../context.ts';
import { analyseAgentScopeStream, analyseAgUiStream } from '../streams.ts';

type ProcessOperation = Extract<OperationId, 'processAgentRequest' | 'processTeamRequest'>;
type RespondOperation = Extract<OperationId, 'respondWithAgent' | 'respondWithTeam'>;
type AgUiOperation = Extract<OperationId, 'runAgentWithAgUi' | 'runTeamWithAgUi'>;

const input = (text: string) => [{ role: 'user', type: 'message', content: [{ type: 'text', text }] }];

export async function checkProcess(t: Context, id: ProcessOperation, params: Record<string, string>): Promise<void> {
  const text = `conformance ${t.nonce} protocol check`;
  const streamed = await t.call(id, { params, body: { input: input(text) }, accept: 'text/event-stream', expect: 200 });
  t.require(id, streamed.mediaType === 'text/event-stream', `the default (stream: true) answered ${streamed.mediaType}, not text/event-stream`);
  const stream = analyseAgentScopeStream(streamed.events ?? []);
  for (const problem of stream.problems) t.check(id, false, `the AgentScope stream: ${problem}`);
  const final = stream.final as Schemas['AgentScopeAgentResponse'] | undefined;
  t.check(id, final?.status === 'completed', `the stream's last response is ${final?.status}${final?.error ? ` (${final.error.code}: ${final.error.message})` : ''}`);
  t.check(id, (final?.output ?? []).some((message) => message.role === 'assistant'), "the final response's output has no assistant message");

  const whole = (await t.call(id, { params, body: { input: input(text), stream: false }, expect: 200 })).json as Schemas['AgentScopeAgentResponse'];
  t.check(id, whole.object === 'response' && whole.status === 'completed', `stream: false answered a ${whole.object} with status ${whole.status}`);
  t.check(id, (whole.output ?? []).some((message) => message.role === 'assistant'), 'stream: false answered no assistant message in output');
  if (whole.session_id) {
    const next = (await t.call(id, { params, body: { input: input(`${text} again`), stream: false, session_id: whole.session_id }, expect: 200 })).json as Schemas['AgentScopeAgentResponse'];
    t.check(id, next.session_id === whole.session_id, `session_id ${whole.session_id} was not continued (got ${next.session_id})`);
  }
  // Liberal in what it accepts: explicit nulls for optional fields, as AgentScope clients send them.
  await t.call(id, { params, body: { input: input(text), stream: false, session_id: null, tools: null, model: null }, expect: 200, halt: false });
}

export async function checkRespond(t: Context, id: RespondOperation, params: Record<string, string>): Promise<void> {
  const judge = (answer: Schemas['ConnexityAgentResponse'], what: string) => {
    t.check(id, answer.messages.length > 0 && answer.messages.at(-1)?.role === 'assistant', `${what}: the last message is not the assistant's`);
    t.check(id, answer.messages.every((message) => message.role === 'assistant' || message.role === 'tool'), `${what}: the answer repeats user or system messages`);
  };
  const turn = (await t.call(id, {
    params,
    body: { messages: [{ role: 'user', content: `conformance ${t.nonce} respond` }], metadata: { test_case_id: `conformance-${t.nonce}`, turn_index: 0 } },
    expect: 200,
  })).json as Schemas['ConnexityAgentResponse'];
  judge(turn, 'a user turn');
  const opening = (await t.call(id, { params, body: { messages: [] }, expect: 200 })).json as Schemas['ConnexityAgentResponse'];
  judge(opening, 'an empty transcript (the agent opens)');
}

export async function checkAgUi(t: Context, id: AgUiOperation, params: Record<string, string>): Promise<void> {
  const threadId = `conformance-${t.nonce}-${id}`;
  const text = `conformance ${t.nonce} ag-ui check`;
  const runs = [1, 2].map((n) => ({ threadId, runId: `run-${n}` }));
  let history = [{ id: 'user-1', role: 'user', content: text }];
  for (const input of runs) {
    const answer = await t.call(id, { params, body: { ...input, messages: history, tools: [], context: [], state: {} }, accept: 'text/event-stream', expect: 200 });
    t.require(id, answer.mediaType === 'text/event-stream', `answered ${answer.mediaType}, not text/event-stream`);
    const stream = analyseAgUiStream(answer.events ?? [], input);
    for (const problem of stream.problems) t.check(id, false, `the AG-UI stream: ${problem}`);
    t.check(id, stream.final?.type === 'RUN_FINISHED', `the run ended with ${stream.final?.type}, not RUN_FINISHED`);
    t.check(id, [...stream.texts.values()].some((said) => said.length > 0), 'the run said nothing');
    // The client keeps the history and sends it whole next time, on the same thread.
    const said = [...stream.texts.entries()].map(([messageId, content]) => ({ id: messageId, role: 'assistant', content }));
    history = [...history, ...said, { id: `user-${history.length + 2}`, role: 'user', content: `${text} again` }];
  }
}

export const protocolChecks: Check[] = [
  {
    name: 'AgentScope protocol',
    operations: ['processAgentRequest'],
    async run(t) {
      await checkProcess(t, 'processAgentRequest', { agentId: (await t.agent()).id });
    },
  },
  {
    name: 'Connexity contract',
    operations: ['respondWithAgent'],
    async run(t) {
      await checkRespond(t, 'respondWithAgent', { agentId: (await t.agent()).id });
    },
  },
  {
    name: 'AG-UI protocol',
    operations: ['runAgentWithAgUi'],
    async run(t) {
      await checkAgUi(t, 'runAgentWithAgUi', { agentId: (await t.agent()).id });
    },
  },
];
