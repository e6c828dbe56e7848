// A2A 0.3, which a request without `A2A-Version` speaks: the same tasks in 0.3's shapes. Objects carry a
// `kind` (`task`, `message`, `status-update`, `artifact-update`), states and roles are kebab and lower case
// (`input-required`, `user`), a part is `{kind: text|file|data}` with files as `{uri|bytes, mimeType, name}`,
// a status update says whether it is `final`, and results come bare rather than wrapped. Only the shapes
// differ: 0.3 requests are translated to 1.0 on the way in and answers back on the way out.
import type { components } from '../../generated/openapi.gen.ts';
import type { A2aMessage, A2aPart, A2aStreamResponse, A2aTask, A2aTaskState } from './projection.ts';
import type { A2aPushConfig } from './push.ts';
import type { A2aSendMessageRequest } from './tasks.ts';

type Schemas = components['schemas'];
export type V03Message = Schemas['A2aV03Message'];
export type V03Part = Schemas['A2aV03Part'];
export type V03Task = Schemas['A2aV03Task'];
export type V03Event = Schemas['A2aV03Event'];
export type V03SendParams = Schemas['A2aV03MessageSendParams'];
export type V03PushConfig = Schemas['A2aV03PushConfig'];
export type V03TaskPushConfig = Schemas['A2aV03TaskPushConfig'];

const STATE: Record<A2aTaskState, V03Task['status']['state']> = {
  TASK_STATE_UNSPECIFIED: 'unknown',
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};

/** The states after which a 0.3 stream ends: terminal ones and those that wait for the client. */
const FINAL: readonly V03Task['status']['state'][] = ['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required'];

/** Whether a 0.3 stream ends at this state (its status update is `final`). */
export const isFinalState = (state: A2aTaskState): boolean => FINAL.includes(STATE[state]);

function partIn(part: V03Part): A2aPart {
  const metadata = part.metadata ? { metadata: part.metadata } : {};
  switch (part.kind) {
    case 'text':
      return { text: part.text, ...metadata };
    case 'data':
      return { data: part.data, mediaType: 'application/json', ...metadata };
    case 'file': {
      const file = part.file;
      const described = { ...(file.mimeType ? { mediaType: file.mimeType } : {}), ...(file.name ? { filename: file.name } : {}), ...metadata };
      return 'uri' in file && file.uri !== undefined ? { url: file.uri, ...described } : { raw: (file as { bytes: string }).bytes, ...described };
    }
  }
}

function partOut(part: A2aPart): V03Part {
  const metadata = part.metadata ? { metadata: part.metadata } : {};
  if (part.text !== undefined) return { kind: 'text', text: part.text, ...metadata };
  if (part.url !== undefined || part.raw !== undefined) {
    const described = { ...(part.mediaType ? { mimeType: part.mediaType } : {}), ...(part.filename ? { name: part.filename } : {}) };
    return { kind: 'file', file: part.url !== undefined ? { uri: part.url, ...described } : { bytes: part.raw!, ...described }, ...metadata };
  }
  return { kind: 'data', data: (part.data ?? {}) as Record<string, unknown>, ...metadata };
}

export function messageIn(message: V03Message): A2aMessage {
  return {
    messageId: message.messageId,
    role: message.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: message.parts.map(partIn),
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
    ...(message.metadata ? { metadata: message.metadata } : {}),
  };
}

export function messageOut(message: A2aMessage): V03Message {
  return {
    kind: 'message',
    messageId: message.messageId,
    role: message.role === 'ROLE_USER' ? 'user' : 'agent',
    parts: message.parts.map(partOut),
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
  };
}

/** A 0.3 send configuration (either binding's) as 1.0's: `blocking: false` is 1.0's `returnImmediately`. */
export function sendConfigurationIn(
  configuration: { blocking?: boolean | undefined; historyLength?: number | undefined; acceptedOutputModes?: string[] | undefined } | undefined,
  push: Parameters<typeof pushConfigIn>[1] | undefined,
): Pick<A2aSendMessageRequest, 'configuration'> {
  if (!configuration) return {};
  return {
    configuration: {
      ...(configuration.blocking === false ? { returnImmediately: true } : {}),
      ...(configuration.historyLength !== undefined ? { historyLength: configuration.historyLength } : {}),
      ...(configuration.acceptedOutputModes ? { acceptedOutputModes: configuration.acceptedOutputModes } : {}),
      ...(push ? { taskPushNotificationConfig: pushConfigIn('', push) } : {}),
    },
  };
}

/** A 0.3 `message/send` as 1.0's SendMessage. */
export function sendParamsIn(params: V03SendParams): A2aSendMessageRequest {
  return { message: messageIn(params.message), ...sendConfigurationIn(params.configuration, params.configuration?.pushNotificationConfig) };
}

function statusOut(status: A2aTask['status']): V03Task['status'] {
  return { state: STATE[status.state], ...(status.timestamp ? { timestamp: status.timestamp } : {}), ...(status.message ? { message: messageOut(status.message) } : {}) };
}

export function taskOut(task: A2aTask): V03Task {
  return {
    kind: 'task',
    id: task.id,
    contextId: task.contextId ?? '',
    status: statusOut(task.status),
    ...(task.artifacts ? { artifacts: task.artifacts.map((artifact) => ({ artifactId: artifact.artifactId, ...(artifact.name ? { name: artifact.name } : {}), parts: artifact.parts.map(partOut) })) } : {}),
    ...(task.history ? { history: task.history.map(messageOut) } : {}),
  };
}

/** One 1.0 stream event as 0.3's. */
export function eventOut(event: A2aStreamResponse): V03Event {
  if (event.task) return taskOut(event.task);
  if (event.message) return messageOut(event.message);
  if (event.statusUpdate) {
    const status = statusOut(event.statusUpdate.status);
    return { kind: 'status-update', taskId: event.statusUpdate.taskId, contextId: event.statusUpdate.contextId, status, final: isFinalState(event.statusUpdate.status.state) };
  }
  const update = event.artifactUpdate!;
  return {
    kind: 'artifact-update',
    taskId: update.taskId,
    contextId: update.contextId,
    artifact: { artifactId: update.artifact.artifactId, ...(update.artifact.name ? { name: update.artifact.name } : {}), parts: update.artifact.parts.map(partOut) },
    ...(update.append !== undefined ? { append: update.append } : {}),
    ...(update.lastChunk !== undefined ? { lastChunk: update.lastChunk } : {}),
  };
}

/**
 * A 0.3 push config as 1.0's: 0.3 names several authentication schemes where 1.0 takes one (the first is
 * used), and a config set without an id takes the task's id, as 0.3's servers have it.
 */
export function pushConfigIn(taskId: string, config: V03PushConfig): A2aPushConfig {
  const scheme = config.authentication?.schemes[0];
  return {
    taskId,
    id: config.id || taskId,
    url: config.url,
    ...(config.token ? { token: config.token } : {}),
    ...(scheme ? { authentication: { scheme, ...(config.authentication?.credentials ? { credentials: config.authentication.credentials } : {}) } } : {}),
  };
}

export function pushConfigOut(config: A2aPushConfig): V03TaskPushConfig {
  const authentication = config.authentication;
  return {
    taskId: config.taskId ?? '',
    pushNotificationConfig: {
      ...(config.id ? { id: config.id } : {}),
      url: config.url,
      ...(config.token ? { token: config.token } : {}),
      ...(authentication ? { authentication: { schemes: [authentication.scheme], ...(authentication.credentials ? { credentials: authentication.credentials } : {}) } } : {}),
    },
  };
}
