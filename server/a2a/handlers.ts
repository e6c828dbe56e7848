// A2A 1.0 for every agent and team: the agent card, the JSON-RPC binding (one operation, the method in the
// body) and the HTTP+JSON binding (an operation per method). Both bindings call the same task operations;
// errors are rendered by the operations' `x-error-format` (server/a2a/errors.ts).
import type { components } from '../../generated/openapi.gen.ts';
import type { SseFrame } from '../../generated/server.gen.ts';
import type { AgentStore } from '../agents/agents.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import { callerOf } from '../http/auth.ts';
import type { Contract } from '../http/contract.ts';
import type { ErrorFormat } from '../http/error-handler.ts';
import type { AppHandlers } from '../http/operations.ts';
import type { RunEngine } from '../runs/engine.ts';
import type { RunStore } from '../runs/store.ts';
import type { Queryable } from '../store/db.ts';
import type { TeamRunner } from '../teams/runner.ts';
import type { TeamStore } from '../teams/teams.ts';
import { agentCard, cardFacts, etagOf, extendedAgentCard, matchesEtag, type ExtendedFacts } from './card.ts';
import { A2aError, jsonRpcError, jsonRpcIdOf, restError, v03RestError } from './errors.ts';
import { statusOfRun, TERMINAL_STATES } from './projection.ts';
import type { A2aStreamResponse } from './projection.ts';
import type { A2aPush, A2aPushConfig } from './push.ts';
import { createA2aTasks, type Caller } from './tasks.ts';
import * as v03rest from './v03-rest.ts';
import * as v03 from './v03.ts';

type Schemas = components['schemas'];
type JsonRpcSuccess = Schemas['A2aJsonRpcSuccess'];

export interface A2aDeps {
  db: Queryable;
  runs: RunStore;
  engine: RunEngine;
  teamRunner: TeamRunner;
  agents: AgentStore;
  teams: TeamStore;
  config: { publicUrl: string };
  a2aPush: A2aPush;
}

/** How the A2A operations render errors, by their `x-error-format`. */
export const a2aErrorFormats: Record<string, ErrorFormat> = {
  'a2a-rest': (error) => restError(error),
  'a2a-jsonrpc': (error, req) => jsonRpcError(error, jsonRpcIdOf(req.body), req.body),
  'a2a-v03-rest': (error) => v03RestError(error),
};

/** A config that is not there: A2A has no error of its own for it, so the generic not found. */
const pushConfigNotFound = (taskId: string, id: string) => new ApiError('not_found', `Task ${taskId} has no push notification config ${id}.`);

const CARD_CACHE = 'public, max-age=300, must-revalidate';

/**
 * The version a request speaks, from `A2A-Version` (its patch number aside): `1.0`, or `0.3`, which a request
 * without the header speaks too. Any other is VersionNotSupported.
 */
function checkVersion(headers: Record<string, string | undefined>): '1.0' | '0.3' {
  const version = headers['a2a-version']?.trim();
  if (!version || /^0\.3(\.\d+)?$/.test(version)) return '0.3';
  if (/^1(\.0)?(\.\d+)?$/.test(version)) return '1.0';
  throw new A2aError('VersionNotSupported', `A2A version ${version} is not supported; this agent speaks 1.0 (and 0.3).`, { version, supportedVersions: '1.0, 0.3' });
}

/**
 * A JSON-RPC method of 0.3 (they have a `/`, 1.0's are PascalCase) in a request that says it speaks 1.0 is not
 * a method of that version: Method not found. A 0.3 request naming a 1.0 method is answered all the same
 * (clients that send no header are many, and the method names say which version they mean).
 */
function checkMethodVersion(method: string, version: '1.0' | '0.3'): void {
  if (version !== '1.0' || !method.includes('/')) return;
  throw new ApiError('validation_error', `${method} is a method of A2A 0.3, and this request says A2A-Version 1.0; send it without the header, or call the 1.0 method.`, {
    details: [{ field: 'method', message: 'not a method of A2A 1.0' }],
  });
}

export function a2aHandlers(deps: A2aDeps, contract: Pick<Contract, 'version'>) {
  const tasks = createA2aTasks({
    db: deps.db,
    runs: deps.runs,
    engine: deps.engine,
    teamRunner: deps.teamRunner,
    push: deps.a2aPush,
    async ownTarget(userId, targetId) {
      return targetId.startsWith('team_') ? { team: await deps.teams.get(userId, targetId) } : { agent: await deps.agents.get(userId, targetId) };
    },
  });

  const ownTask = async (userId: string, targetId: string, taskId: string) => {
    await tasks.ownTarget(userId, targetId);
    return tasks.taskRow(userId, targetId, taskId);
  };

  /** Push configs of the caller's task of this agent or team, the same for both bindings. */
  const pushConfigs = {
    async create(userId: string, targetId: string, taskId: string, config: A2aPushConfig) {
      const task = await ownTask(userId, targetId, taskId);
      const finished = TERMINAL_STATES.includes(statusOfRun({ taskId: task.id, contextId: task.session_id }, task).state);
      return deps.a2aPush.create(userId, task.id, { ...config, taskId: task.id }, { finished });
    },
    async get(userId: string, targetId: string, taskId: string, id: string) {
      const task = await ownTask(userId, targetId, taskId);
      const config = await deps.a2aPush.get(task.id, id);
      if (!config) throw pushConfigNotFound(task.id, id);
      return config;
    },
    async list(userId: string, targetId: string, taskId: string) {
      const task = await ownTask(userId, targetId, taskId);
      return { configs: await deps.a2aPush.list(task.id), nextPageToken: '' };
    },
    /** Idempotent, as A2A asks: a config already gone is deleted all the same; a task that is not the caller's is not found. */
    async remove(userId: string, targetId: string, taskId: string, id: string) {
      const task = await ownTask(userId, targetId, taskId);
      await deps.a2aPush.remove(task.id, id);
    },
  };

  /** The extended card, for the owner: another user's agent or team is not found, as a missing one. */
  const extendedCard = async (userId: string, targetId: string) => {
    let facts: ExtendedFacts;
    if (targetId.startsWith('team_')) {
      const team = await deps.teams.get(userId, targetId);
      facts = { kind: 'team', members: await Promise.all(team.members.map((member) => deps.agents.get(userId, member.agent_id))) };
    } else {
      facts = { kind: 'agent', agent: await deps.agents.get(userId, targetId) };
    }
    return extendedAgentCard(agentCard(await cardFacts(deps.db, targetId), deps.config.publicUrl, contract.version), facts);
  };

  /** 0.3's TaskSubscription over HTTP+JSON. */
  const followV03 = async (caller: Caller, params: { a2aTargetId: string; a2aTaskId: string }, headers: Record<string, string | undefined>, signal: AbortSignal) => {
    checkVersion(headers);
    return { status: 200 as const, stream: frames(await tasks.subscribe(caller, params.a2aTargetId, params.a2aTaskId, signal), v03rest.eventOut) };
  };

  const frames = async function* <T>(events: AsyncIterable<A2aStreamResponse>, wrap: (event: A2aStreamResponse) => T): AsyncGenerator<SseFrame<T>> {
    for await (const event of events) yield { data: wrap(event) };
  };

  return {
    async getA2aAgentCard({ params, headers }) {
      const card = agentCard(await cardFacts(deps.db, params.a2aTargetId), deps.config.publicUrl, contract.version);
      const caching: Record<string, string> = { ETag: etagOf(card), 'Cache-Control': CARD_CACHE };
      if (matchesEtag(headers['if-none-match'], caching.ETag!)) return { status: 304, headers: caching };
      return { status: 200, body: card, headers: caching };
    },

    async callA2aJsonRpc({ auth, body, params, headers, signal }) {
      checkMethodVersion(body.method, checkVersion(headers));
      const caller = callerOf(auth);
      const target = params.a2aTargetId;
      const id = body.id ?? null;
      const answer = (result: JsonRpcSuccess['result']) => ({ status: 200 as const, body: { jsonrpc: '2.0' as const, id, result } });
      const stream = (events: AsyncIterable<A2aStreamResponse>, shape: (event: A2aStreamResponse) => JsonRpcSuccess['result'] = (event) => event) => ({
        status: 200 as const,
        stream: frames(events, (event): JsonRpcSuccess => ({ jsonrpc: '2.0', id, result: shape(event) })),
      });
      switch (body.method) {
        case 'SendMessage':
          return answer({ task: await tasks.send(caller, target, body.params) });
        case 'SendStreamingMessage':
          return stream(await tasks.stream(caller, target, body.params));
        case 'GetTask':
          return answer(await tasks.get(caller, target, body.params.id, body.params.historyLength));
        case 'ListTasks':
          return answer(await tasks.list(caller, target, body.params ?? {}));
        case 'CancelTask':
          return answer(await tasks.cancel(caller, target, body.params.id));
        case 'SubscribeToTask':
          return stream(await tasks.subscribe(caller, target, body.params.id, signal));
        case 'CreateTaskPushNotificationConfig':
          return answer(await pushConfigs.create(caller.userId, target, body.params.taskId, body.params));
        case 'GetTaskPushNotificationConfig':
          return answer(await pushConfigs.get(caller.userId, target, body.params.taskId, body.params.id));
        case 'ListTaskPushNotificationConfigs':
          return answer(await pushConfigs.list(caller.userId, target, body.params.taskId));
        case 'DeleteTaskPushNotificationConfig':
          await pushConfigs.remove(caller.userId, target, body.params.taskId, body.params.id);
          return answer({});
        // A2A 0.3: the same operations, translated in and out.
        case 'message/send': {
          const request = v03.sendParamsIn(body.params);
          return answer(v03.taskOut(await tasks.send(caller, target, request)));
        }
        case 'message/stream':
          return stream(await tasks.stream(caller, target, v03.sendParamsIn(body.params)), v03.eventOut);
        case 'tasks/get':
          return answer(v03.taskOut(await tasks.get(caller, target, body.params.id, body.params.historyLength)));
        case 'tasks/cancel':
          return answer(v03.taskOut(await tasks.cancel(caller, target, body.params.id)));
        case 'tasks/resubscribe':
          return stream(await tasks.subscribe(caller, target, body.params.id, signal), v03.eventOut);
        case 'GetExtendedAgentCard':
        case 'agent/getAuthenticatedExtendedCard':
          return answer(await extendedCard(caller.userId, target));
        case 'tasks/pushNotificationConfig/set':
          return answer(v03.pushConfigOut(await pushConfigs.create(caller.userId, target, body.params.taskId, v03.pushConfigIn(body.params.taskId, body.params.pushNotificationConfig))));
        case 'tasks/pushNotificationConfig/get': {
          const { id: taskId, pushNotificationConfigId: configId } = body.params;
          // Without a config id, 0.3 asks for the task's config: the one named after the task, or its only one.
          if (configId) return answer(v03.pushConfigOut(await pushConfigs.get(caller.userId, target, taskId, configId)));
          const { configs } = await pushConfigs.list(caller.userId, target, taskId);
          const config = configs.find((item) => item.id === taskId) ?? configs[0];
          if (!config) throw pushConfigNotFound(taskId, taskId);
          return answer(v03.pushConfigOut(config));
        }
        case 'tasks/pushNotificationConfig/list':
          return answer((await pushConfigs.list(caller.userId, target, body.params.id)).configs.map(v03.pushConfigOut));
        case 'tasks/pushNotificationConfig/delete':
          if (!body.params.pushNotificationConfigId) throw invalidRequest('Name the config to delete.', 'params.pushNotificationConfigId');
          await pushConfigs.remove(caller.userId, target, body.params.id, body.params.pushNotificationConfigId);
          return answer(null);
      }
    },

    async sendA2aMessage({ auth, body, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: { task: await tasks.send(callerOf(auth), params.a2aTargetId, body) } };
    },

    async streamA2aMessage({ auth, body, params, headers }) {
      checkVersion(headers);
      return { status: 200, stream: frames(await tasks.stream(callerOf(auth), params.a2aTargetId, body), (event) => event) };
    },

    async listA2aTasks({ auth, params, query, headers }) {
      checkVersion(headers);
      return { status: 200, body: await tasks.list(callerOf(auth), params.a2aTargetId, query) };
    },

    async getA2aTask({ auth, params, query, headers }) {
      checkVersion(headers);
      return { status: 200, body: await tasks.get(callerOf(auth), params.a2aTargetId, params.a2aTaskId, query.historyLength) };
    },

    async cancelA2aTask({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await tasks.cancel(callerOf(auth), params.a2aTargetId, params.a2aTaskId) };
    },

    async subscribeToA2aTask({ auth, params, headers, signal }) {
      checkVersion(headers);
      return { status: 200, stream: frames(await tasks.subscribe(callerOf(auth), params.a2aTargetId, params.a2aTaskId, signal), (event) => event) };
    },

    async getA2aExtendedAgentCard({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await extendedCard(callerOf(auth).userId, params.a2aTargetId) };
    },

    // A2A 0.3's HTTP+JSON binding: the same operations in 0.3's protobuf JSON.
    async sendA2aV03Message({ auth, body, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: { task: v03rest.taskOut(await tasks.send(callerOf(auth), params.a2aTargetId, v03rest.sendIn(body))) } };
    },

    async streamA2aV03Message({ auth, body, params, headers }) {
      checkVersion(headers);
      return { status: 200, stream: frames(await tasks.stream(callerOf(auth), params.a2aTargetId, v03rest.sendIn(body)), v03rest.eventOut) };
    },

    async getA2aV03Task({ auth, params, query, headers }) {
      checkVersion(headers);
      return { status: 200, body: v03rest.taskOut(await tasks.get(callerOf(auth), params.a2aTargetId, params.a2aTaskId, query.historyLength)) };
    },

    async cancelA2aV03Task({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: v03rest.taskOut(await tasks.cancel(callerOf(auth), params.a2aTargetId, params.a2aTaskId)) };
    },

    // 0.3's a2a.proto follows a task with GET, its specification with POST: both are served alike.
    subscribeToA2aV03Task({ auth, params, headers, signal }) {
      return followV03(callerOf(auth), params, headers, signal);
    },

    resubscribeToA2aV03Task({ auth, params, headers, signal }) {
      return followV03(callerOf(auth), params, headers, signal);
    },

    async createA2aV03PushConfig({ auth, body, params, headers }) {
      checkVersion(headers);
      const config = v03rest.pushIn(params.a2aTaskId, body);
      return { status: 200, body: v03rest.pushOut(await pushConfigs.create(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, config)) };
    },

    async listA2aV03PushConfigs({ auth, params, headers }) {
      checkVersion(headers);
      const { configs } = await pushConfigs.list(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId);
      return { status: 200, body: { configs: configs.map(v03rest.pushOut), nextPageToken: '' } };
    },

    async getA2aV03PushConfig({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: v03rest.pushOut(await pushConfigs.get(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, params.a2aPushConfigId)) };
    },

    async deleteA2aV03PushConfig({ auth, params, headers }) {
      checkVersion(headers);
      await pushConfigs.remove(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, params.a2aPushConfigId);
      return { status: 204 };
    },

    async getA2aV03ExtendedCard({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await extendedCard(callerOf(auth).userId, params.a2aTargetId) };
    },

    async createA2aPushConfig({ auth, body, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await pushConfigs.create(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, body) };
    },

    async listA2aPushConfigs({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await pushConfigs.list(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId) };
    },

    async getA2aPushConfig({ auth, params, headers }) {
      checkVersion(headers);
      return { status: 200, body: await pushConfigs.get(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, params.a2aPushConfigId) };
    },

    async deleteA2aPushConfig({ auth, params, headers }) {
      checkVersion(headers);
      await pushConfigs.remove(callerOf(auth).userId, params.a2aTargetId, params.a2aTaskId, params.a2aPushConfigId);
      return { status: 204 };
    },
  } satisfies Partial<AppHandlers>;
}
