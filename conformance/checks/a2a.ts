// A2A 1.0 on every agent: the public card (served without a credential, with an ETag that answers 304),
// the HTTP+JSON binding (send, stream, get, list, cancel, subscribe, push configs, the extended card) and
// the JSON-RPC binding (the same methods, and A2A 0.3 without `A2A-Version`), and A2A 0.3's HTTP+JSON
// binding under `/v1` (its protobuf JSON, JSON-RPC error objects as error bodies). A finished task is not
// cancelable and cannot be followed; a missing task is TaskNotFound over both bindings; another user's
// task answers exactly as a missing one. Errors are judged by the ErrorInfo reason A2A names them with.
import type { OperationId } from '../contract.ts';
import type { Check, Context, Schemas } from '../context.ts';
import type { Exchange } from '../http.ts';

type Task = Schemas['A2aTask'];
type A2aCard = Schemas['A2aAgentCard'];
type RpcAnswer = { jsonrpc?: string; id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: { '@type'?: string; reason?: string }[] } };

const V1 = { 'A2A-Version': '1.0' };
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const MISSING_TASK = 'run_00000000000000000000000000';
const TERMINAL = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];

let messages = 0;
const message = (t: Context, text: string, ids: { contextId?: string; taskId?: string } = {}) => ({
  messageId: `conformance-${t.nonce}-${++messages}`,
  role: 'ROLE_USER',
  parts: [{ text: `conformance ${t.nonce} ${text}` }],
  ...ids,
});

/** The ErrorInfo reason of an A2A error over HTTP+JSON (`google.rpc.Status`). */
function restReason(answer: Exchange): string | undefined {
  const details = (answer.json as { error?: { details?: { '@type'?: string; reason?: string }[] } } | undefined)?.error?.details;
  return details?.find((detail) => detail['@type'] === ERROR_INFO)?.reason;
}

const rpcReason = (answer: RpcAnswer) => answer.error?.data?.find((detail) => detail['@type'] === ERROR_INFO)?.reason;

/** A task this run's shared agent completed over HTTP+JSON, for the checks that need one to exist. */
const finishedTasks = new WeakMap<Context, Promise<Task | undefined>>();
function finishedTask(t: Context): Promise<Task | undefined> {
  let task = finishedTasks.get(t);
  if (!task) {
    task = (async () => {
      const agent = await t.agent();
      const sent = await t.call('sendA2aMessage', { params: { a2aTargetId: agent.id }, headers: V1, body: { message: message(t, 'a2a hello') }, expect: 200 });
      const made = (sent.json as Schemas['A2aSendMessageResponse'] | undefined)?.task;
      t.require('sendA2aMessage', typeof made?.id === 'string', 'SendMessage answered no task');
      return made;
    })();
    finishedTasks.set(t, task);
  }
  return task;
}

async function checkCard(t: Context, id: string, name: string): Promise<void> {
  const op: OperationId = 'getA2aAgentCard';
  const params = { a2aTargetId: id };
  const first = await t.call(op, { params, as: 'none', expect: 200 });
  const card = first.json as A2aCard;
  t.check(op, card.name === name, `the card of ${id} names ${card.name}, not ${name}`);
  const bindings = card.supportedInterfaces.filter((item) => item.protocolVersion === '1.0').map((item) => item.protocolBinding);
  t.check(op, bindings.includes('JSONRPC') && bindings.includes('HTTP+JSON'), `the card declares the 1.0 bindings ${bindings.join(', ') || 'none'}, not JSONRPC and HTTP+JSON`);
  t.check(op, Object.keys(card.securitySchemes ?? {}).length > 0, 'the card declares no security scheme');
  t.check(op, /max-age=\d+/.test(first.headers.get('cache-control') ?? ''), `Cache-Control "${first.headers.get('cache-control') ?? ''}" has no max-age`);
  const etag = first.headers.get('etag');
  t.require(op, !!etag, 'the card comes without an ETag');
  await t.call(op, { params, as: 'none', headers: { 'If-None-Match': etag! }, expect: 304, halt: false });
}

async function checkRest(t: Context): Promise<void> {
  const agent = await t.agent();
  const target = { a2aTargetId: agent.id };
  const task = await finishedTask(t);
  if (!task) return;
  t.check('sendA2aMessage', TERMINAL.includes(task.status.state) || task.status.state === 'TASK_STATE_INPUT_REQUIRED', `SendMessage answered while the task was ${task.status.state}`);
  const taskParams = { ...target, a2aTaskId: task.id };

  const read = (await t.call('getA2aTask', { params: taskParams, headers: V1, expect: 200 })).json as Task;
  t.check('getA2aTask', read.id === task.id && read.status.state === task.status.state, `GetTask answered ${read.id} ${read.status.state}, not ${task.id} ${task.status.state}`);
  const missing = await t.call('getA2aTask', { params: { ...target, a2aTaskId: MISSING_TASK }, headers: V1, expect: 404, halt: false });
  t.check('getA2aTask', missing.status !== 404 || restReason(missing) === 'TASK_NOT_FOUND', `a missing task's error is ${restReason(missing)}, not TASK_NOT_FOUND`);

  const listed = (await t.call('listA2aTasks', { params: target, query: { contextId: task.contextId ?? '' }, headers: V1, expect: 200 })).json as Schemas['A2aListTasksResponse'];
  t.check('listA2aTasks', listed.tasks.some((item) => item.id === task.id), "ListTasks of the task's context does not list it");
  t.check('listA2aTasks', listed.nextPageToken === '', `the last page's nextPageToken is "${listed.nextPageToken}", not empty`);

  if (TERMINAL.includes(task.status.state)) {
    const cancel = await t.call('cancelA2aTask', { params: taskParams, headers: V1, body: {}, expect: 409, halt: false });
    t.check('cancelA2aTask', cancel.status !== 409 || restReason(cancel) === 'TASK_NOT_CANCELABLE', `canceling a finished task is ${restReason(cancel)}, not TASK_NOT_CANCELABLE`);
    const follow = await t.call('subscribeToA2aTask', { params: taskParams, headers: V1, accept: 'text/event-stream, application/json', expect: 400, halt: false });
    t.check('subscribeToA2aTask', follow.status !== 400 || restReason(follow) === 'UNSUPPORTED_OPERATION', `subscribing to a finished task is ${restReason(follow)}, not UNSUPPORTED_OPERATION`);
  }
  await t.call('cancelA2aTask', { params: { ...target, a2aTaskId: MISSING_TASK }, headers: V1, body: {}, expect: 404, halt: false });
  await t.call('subscribeToA2aTask', { params: { ...target, a2aTaskId: MISSING_TASK }, headers: V1, accept: 'text/event-stream, application/json', expect: 404, halt: false });

  const streamed = await t.call('streamA2aMessage', { params: target, headers: V1, body: { message: message(t, 'a2a stream') }, accept: 'text/event-stream', expect: 200 });
  const events = (streamed.events ?? []).map((event) => event.json as Schemas['A2aStreamResponse']);
  t.check('streamA2aMessage', events[0]?.task !== undefined, 'the stream does not begin with the task');
  const last = events.at(-1)?.statusUpdate?.status.state;
  t.check('streamA2aMessage', last !== undefined && (TERMINAL.includes(last) || last === 'TASK_STATE_INPUT_REQUIRED'), `the stream ends with ${last ?? 'no status update'}, not a terminal or interrupted state`);

  // Push configs on a finished task: stored and managed, never delivered (the task has nothing left to say).
  const configId = `conformance-${t.nonce}`;
  const url = `https://example.com/conformance/${t.nonce}`;
  const created = (await t.call('createA2aPushConfig', { params: taskParams, headers: V1, body: { taskId: task.id, id: configId, url }, expect: 200 })).json as Schemas['A2aTaskPushNotificationConfig'];
  t.check('createA2aPushConfig', created.id === configId && created.url === url, `the config came back as ${created.id} ${created.url}`);
  const got = (await t.call('getA2aPushConfig', { params: { ...taskParams, a2aPushConfigId: configId }, headers: V1, expect: 200 })).json as Schemas['A2aTaskPushNotificationConfig'];
  t.check('getA2aPushConfig', got.url === url, `the config reads back with url ${got.url}`);
  const configs = (await t.call('listA2aPushConfigs', { params: taskParams, headers: V1, expect: 200 })).json as Schemas['A2aListPushConfigsResponse'];
  t.check('listA2aPushConfigs', configs.configs.some((config) => config.id === configId), 'the config is not listed');
  await t.call('deleteA2aPushConfig', { params: { ...taskParams, a2aPushConfigId: configId }, headers: V1, expect: 204 });
  // Deleting is idempotent (A2A 3.1.10).
  await t.call('deleteA2aPushConfig', { params: { ...taskParams, a2aPushConfigId: configId }, headers: V1, expect: 204, halt: false });
  await t.call('getA2aPushConfig', { params: { ...taskParams, a2aPushConfigId: configId }, headers: V1, expect: 404, halt: false });

  const extended = (await t.call('getA2aExtendedAgentCard', { params: target, headers: V1, expect: 200 })).json as A2aCard;
  t.check('getA2aExtendedAgentCard', extended.name === agent.name, `the extended card names ${extended.name}, not ${agent.name}`);
  const publicCard = (await t.call('getA2aAgentCard', { params: target, as: 'none', expect: 200 })).json as A2aCard;
  t.check('getA2aAgentCard', publicCard.capabilities.extendedAgentCard === true, 'the card does not declare the extended card it serves');
}

async function checkJsonRpc(t: Context): Promise<void> {
  const op: OperationId = 'callA2aJsonRpc';
  const agent = await t.agent();
  const params = { a2aTargetId: agent.id };
  let id = 0;
  const rpc = async (method: string, body: unknown, options: { headers?: Record<string, string>; expect?: number; accept?: string } = {}) => {
    const answer = await t.call(op, { params, headers: options.headers ?? V1, body: { jsonrpc: '2.0', id: ++id, method, params: body }, accept: options.accept, expect: options.expect ?? 200, halt: false });
    return { answer, body: (answer.json ?? {}) as RpcAnswer, id };
  };

  const sent = await rpc('SendMessage', { message: message(t, 'a2a json-rpc') });
  const task = (sent.body.result as { task?: Task } | undefined)?.task;
  t.require(op, sent.body.id === sent.id && typeof task?.id === 'string', `SendMessage answered ${JSON.stringify(sent.body).slice(0, 200)}, not a task with the request's id`);
  const read = await rpc('GetTask', { id: task!.id });
  t.check(op, (read.body.result as Task | undefined)?.id === task!.id, 'GetTask answered another task');
  const listed = await rpc('ListTasks', { contextId: task!.contextId });
  t.check(op, ((listed.body.result as Schemas['A2aListTasksResponse'] | undefined)?.tasks ?? []).some((item) => item.id === task!.id), 'ListTasks does not list the task');

  const missing = await rpc('GetTask', { id: MISSING_TASK });
  t.check(op, missing.body.error?.code === -32001 && rpcReason(missing.body) === 'TASK_NOT_FOUND', `GetTask of a missing task answered ${JSON.stringify(missing.body.error)}, not -32001 TASK_NOT_FOUND`);
  if (TERMINAL.includes(task!.status.state)) {
    const cancel = await rpc('CancelTask', { id: task!.id });
    t.check(op, cancel.body.error?.code === -32002, `CancelTask of a finished task answered ${JSON.stringify(cancel.body.error)}, not -32002 (TaskNotCancelable)`);
    const follow = await rpc('SubscribeToTask', { id: task!.id });
    t.check(op, follow.body.error?.code === -32004, `SubscribeToTask of a finished task answered ${JSON.stringify(follow.body.error)}, not -32004 (UnsupportedOperation)`);
  }

  const streamed = await rpc('SendStreamingMessage', { message: message(t, 'a2a json-rpc stream') }, { accept: 'text/event-stream' });
  const frames = (streamed.answer.events ?? []).map((event) => event.json as RpcAnswer);
  t.check(op, frames.length > 0 && frames.every((frame) => frame.jsonrpc === '2.0' && frame.id === streamed.id && frame.result !== undefined), "the stream's events are not JSON-RPC responses to the request");
  t.check(op, frames[0]?.result?.task !== undefined, 'the stream does not begin with the task');

  const card = await rpc('GetExtendedAgentCard', {});
  t.check(op, (card.body.result as A2aCard | undefined)?.name === agent.name, 'GetExtendedAgentCard does not answer the agent’s card');
  const unknown = await rpc('NoSuchMethod', {}, { expect: 400 });
  t.check(op, unknown.body.error?.code === -32601, `an unknown method answered ${JSON.stringify(unknown.body.error)}, not -32601`);
  const future = await rpc('GetTask', { id: task!.id }, { headers: { 'A2A-Version': '99.0' } });
  t.check(op, future.body.error?.code === -32009, `A2A-Version 99.0 answered ${JSON.stringify(future.body.error ?? future.body.result).slice(0, 200)}, not -32009 (VersionNotSupported)`);

  // Without A2A-Version a request is A2A 0.3, with 0.3's methods and shapes.
  const legacy = await rpc('message/send', { message: { kind: 'message', messageId: `conformance-${t.nonce}-legacy`, role: 'user', parts: [{ kind: 'text', text: `conformance ${t.nonce} 0.3` }] } }, { headers: {} });
  t.check(op, legacy.body.result?.kind === 'task', `0.3's message/send answered ${JSON.stringify(legacy.body).slice(0, 200)}, not a 0.3 task`);
}

/** A2A 0.3's HTTP+JSON binding under `/v1`: 0.3's protobuf JSON, and JSON-RPC's error object as the error body. */
async function checkRestV03(t: Context): Promise<void> {
  const agent = await t.agent();
  const target = { a2aTargetId: agent.id };
  const v03Message = (text: string) => ({ messageId: `conformance-${t.nonce}-${++messages}`, role: 'ROLE_USER', content: [{ text: `conformance ${t.nonce} ${text}` }] });
  const code = (answer: Exchange) => (answer.json as { code?: number } | undefined)?.code;

  const sent = (await t.call('sendA2aV03Message', { params: target, body: { message: v03Message('0.3 rest') }, expect: 200 })).json as Schemas['A2aV03ProtoSendResponse'];
  const task = sent.task;
  t.require('sendA2aV03Message', typeof task?.id === 'string', 'message:send answered no task');
  const taskParams = { ...target, a2aTaskId: task!.id };
  const read = (await t.call('getA2aV03Task', { params: taskParams, expect: 200 })).json as Schemas['A2aV03ProtoTask'];
  t.check('getA2aV03Task', read.id === task!.id && (read.history ?? []).every((item) => Array.isArray(item.content)), 'GetTask answered another task, or messages without `content`');
  const missing = await t.call('getA2aV03Task', { params: { ...target, a2aTaskId: MISSING_TASK }, expect: 404, halt: false });
  t.check('getA2aV03Task', missing.status !== 404 || code(missing) === -32001, `a missing task's error code is ${code(missing)}, not -32001`);

  const streamed = await t.call('streamA2aV03Message', { params: target, body: { message: v03Message('0.3 rest stream') }, accept: 'text/event-stream', expect: 200 });
  const events = (streamed.events ?? []).map((event) => event.json as Schemas['A2aV03ProtoStreamResponse']);
  t.check('streamA2aV03Message', events[0]?.task !== undefined, 'the stream does not begin with the task');
  t.check('streamA2aV03Message', events.at(-1)?.statusUpdate?.final === true, 'the last event is not a final status update');

  if (['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELLED', 'TASK_STATE_REJECTED'].includes(task!.status.state)) {
    const cancel = await t.call('cancelA2aV03Task', { params: taskParams, body: { name: `tasks/${task!.id}` }, expect: 409, halt: false });
    t.check('cancelA2aV03Task', cancel.status !== 409 || code(cancel) === -32002, `canceling a finished task is code ${code(cancel)}, not -32002`);
    for (const op of ['subscribeToA2aV03Task', 'resubscribeToA2aV03Task'] as const) {
      const follow = await t.call(op, { params: taskParams, accept: 'text/event-stream, application/json', expect: 400, halt: false });
      t.check(op, follow.status !== 400 || code(follow) === -32004, `following a finished task is code ${code(follow)}, not -32004`);
    }
  }
  await t.call('cancelA2aV03Task', { params: { ...target, a2aTaskId: MISSING_TASK }, body: {}, expect: 404, halt: false });

  const configId = `conformance-${t.nonce}-v03`;
  const pushParams = { ...taskParams, a2aPushConfigId: configId };
  const url = `https://example.com/conformance/${t.nonce}/v03`;
  const created = (await t.call('createA2aV03PushConfig', { params: taskParams, body: { name: `tasks/${task!.id}/pushNotificationConfigs/${configId}`, pushNotificationConfig: { url } }, expect: 200 })).json as Schemas['A2aV03ProtoTaskPushConfig'];
  t.check('createA2aV03PushConfig', created.pushNotificationConfig.id === configId && created.pushNotificationConfig.url === url, `the config came back as ${JSON.stringify(created).slice(0, 200)}`);
  const got = (await t.call('getA2aV03PushConfig', { params: pushParams, expect: 200 })).json as Schemas['A2aV03ProtoTaskPushConfig'];
  t.check('getA2aV03PushConfig', got.name === `tasks/${task!.id}/pushNotificationConfigs/${configId}`, `the config's name is ${got.name}`);
  const listed = (await t.call('listA2aV03PushConfigs', { params: taskParams, expect: 200 })).json as Schemas['A2aV03ProtoListPushConfigs'];
  t.check('listA2aV03PushConfigs', listed.configs.some((config) => config.pushNotificationConfig.id === configId), 'the config is not listed');
  await t.call('deleteA2aV03PushConfig', { params: pushParams, expect: 204 });
  await t.call('deleteA2aV03PushConfig', { params: pushParams, expect: 204, halt: false });

  const card = (await t.call('getA2aV03ExtendedCard', { params: target, expect: 200 })).json as A2aCard;
  t.check('getA2aV03ExtendedCard', card.name === agent.name, `/v1/card names ${card.name}, not ${agent.name}`);
}

/** Another user's task answers, over both bindings, exactly as a missing one: same status, error and message. */
async function checkStranger(t: Context): Promise<void> {
  if (!t.hasSecondUser) {
    t.note('getA2aTask', "another user's task was not tried: pass --api-key-2");
    return;
  }
  const task = await finishedTask(t);
  if (!task) return;
  const model = await t.model();
  const made = await t.call('createAgent', { as: 'secondary', body: { name: `conformance ${t.nonce} stranger`, model, metadata: { conformance: t.nonce } }, expect: 201 });
  const theirs = (made.json as Schemas['Agent']).id;
  try {
    const alike = (op: OperationId, a: Exchange, b: Exchange, what: string) => {
      const text = (answer: Exchange, taskId: string) => answer.text.replaceAll(taskId, 'ID').replace(/"request_id":"[^"]*"/, '');
      t.check(op, a.status === b.status && text(a, task.id) === text(b, MISSING_TASK), `${what}: another user's task answered ${a.status} ${a.text.slice(0, 160)}, a missing one ${b.status} ${b.text.slice(0, 160)}`);
    };
    const rest = (taskId: string) => t.call('getA2aTask', { as: 'secondary', params: { a2aTargetId: theirs, a2aTaskId: taskId }, headers: V1, expect: 404, halt: false });
    alike('getA2aTask', await rest(task.id), await rest(MISSING_TASK), 'GetTask over HTTP+JSON');
    const rpc = (taskId: string) =>
      t.call('callA2aJsonRpc', { as: 'secondary', params: { a2aTargetId: theirs }, headers: V1, body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId } }, expect: 200, halt: false });
    alike('callA2aJsonRpc', await rpc(task.id), await rpc(MISSING_TASK), 'GetTask over JSON-RPC');
    // The owner's agent itself, with the other user's key: not found.
    const agent = await t.agent();
    await t.call('getA2aTask', { as: 'secondary', params: { a2aTargetId: agent.id, a2aTaskId: task.id }, headers: V1, expect: 404, halt: false });
    await t.call('getA2aExtendedAgentCard', { as: 'secondary', params: { a2aTargetId: agent.id }, headers: V1, expect: 404, halt: false });
  } finally {
    await t.call('deleteAgent', { as: 'secondary', params: { agentId: theirs }, expect: [204, 404], quiet: true }).catch(() => undefined);
  }
}

export const a2aChecks: Check[] = [
  {
    name: 'A2A agent cards',
    operations: ['getA2aAgentCard'],
    async run(t) {
      const agent = await t.agent();
      await checkCard(t, agent.id, agent.name);
      const team = await t.team();
      await checkCard(t, team.id, team.name);
      await t.call('getA2aAgentCard', { params: { a2aTargetId: 'agt_0000000000conformance' }, as: 'none', expect: 404, halt: false });
    },
  },
  {
    name: 'A2A over HTTP+JSON',
    operations: [
      'sendA2aMessage',
      'streamA2aMessage',
      'getA2aTask',
      'listA2aTasks',
      'cancelA2aTask',
      'subscribeToA2aTask',
      'createA2aPushConfig',
      'getA2aPushConfig',
      'listA2aPushConfigs',
      'deleteA2aPushConfig',
      'getA2aExtendedAgentCard',
    ],
    run: checkRest,
  },
  { name: 'A2A over JSON-RPC', operations: ['callA2aJsonRpc'], run: checkJsonRpc },
  {
    name: 'A2A 0.3 over HTTP+JSON',
    operations: [
      'sendA2aV03Message',
      'streamA2aV03Message',
      'getA2aV03Task',
      'cancelA2aV03Task',
      'subscribeToA2aV03Task',
      'resubscribeToA2aV03Task',
      'createA2aV03PushConfig',
      'getA2aV03PushConfig',
      'listA2aV03PushConfigs',
      'deleteA2aV03PushConfig',
      'getA2aV03ExtendedCard',
    ],
    run: checkRestV03,
  },
  { name: "A2A: another user's task is a missing one", operations: ['getA2aTask', 'callA2aJsonRpc'], run: checkStranger },
];
