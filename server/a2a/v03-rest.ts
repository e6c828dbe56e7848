// A2A 0.3's HTTP+JSON binding, under `/a2a/{id}/v1/…`: the protobuf JSON of 0.3's `a2a.proto`, which is
// neither 0.3's JSON-RPC shapes nor 1.0's. A message's parts are `content`; a part is `{text}`,
// `{file: {fileWithUri | fileWithBytes, mimeType}}` or `{data: {data}}`; states are 1.0's names but for
// `TASK_STATE_CANCELLED`; a status update says whether it is `final`; a push config is
// `{name: "tasks/{taskId}/pushNotificationConfigs/{id}", pushNotificationConfig}` with 0.3's config inside.
// As in v03.ts, only the shapes differ: requests become 1.0's, answers are translated back.
import type { components } from '../../generated/openapi.gen.ts';
import type { A2aMessage, A2aPart, A2aStreamResponse, A2aTask, A2aTaskState } from './projection.ts';
import type { A2aPushConfig } from './push.ts';
import type { A2aSendMessageRequest } from './tasks.ts';
import { isFinalState, pushConfigIn, pushConfigOut, sendConfigurationIn } from './v03.ts';

type Schemas = components['schemas'];
type ProtoPart = Schemas['A2aV03ProtoPart'];
type ProtoMessage = Schemas['A2aV03ProtoMessage'];
type ProtoTask = Schemas['A2aV03ProtoTask'];
type ProtoStatus = Schemas['A2aV03ProtoTaskStatus'];
type ProtoArtifact = Schemas['A2aV03ProtoArtifact'];
export type ProtoStreamResponse = Schemas['A2aV03ProtoStreamResponse'];
export type ProtoSendRequest = Schemas['A2aV03ProtoSendRequest'];
export type ProtoTaskPushConfig = Schemas['A2aV03ProtoTaskPushConfig'];

function partIn(part: ProtoPart): A2aPart {
  if (part.text !== undefined) return { text: part.text };
  if (part.data !== undefined) return { data: part.data.data, mediaType: 'application/json' };
  const file = part.file ?? {};
  const mediaType = file.mimeType ? { mediaType: file.mimeType } : {};
  return file.fileWithUri !== undefined ? { url: file.fileWithUri, ...mediaType } : { raw: file.fileWithBytes ?? '', ...mediaType };
}

function partOut(part: A2aPart): ProtoPart {
  if (part.text !== undefined) return { text: part.text };
  const mimeType = part.mediaType ? { mimeType: part.mediaType } : {};
  if (part.url !== undefined) return { file: { fileWithUri: part.url, ...mimeType } };
  if (part.raw !== undefined) return { file: { fileWithBytes: part.raw, ...mimeType } };
  // A protobuf Struct is an object: anything else is wrapped.
  const data = part.data;
  return { data: { data: typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : { value: data } } };
}

function messageIn(message: ProtoMessage): A2aMessage {
  return {
    messageId: message.messageId,
    role: message.role,
    parts: message.content.map(partIn),
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
    ...(message.metadata ? { metadata: message.metadata } : {}),
  };
}

function messageOut(message: A2aMessage): ProtoMessage {
  return {
    messageId: message.messageId,
    role: message.role === 'ROLE_USER' ? 'ROLE_USER' : 'ROLE_AGENT',
    content: message.parts.map(partOut),
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
  };
}

const stateOut = (state: A2aTaskState): ProtoStatus['state'] => (state === 'TASK_STATE_CANCELED' ? 'TASK_STATE_CANCELLED' : state);

function statusOut(status: A2aTask['status']): ProtoStatus {
  return { state: stateOut(status.state), ...(status.message ? { message: messageOut(status.message) } : {}), ...(status.timestamp ? { timestamp: status.timestamp } : {}) };
}

function artifactOut(artifact: A2aTask['artifacts'] extends (infer A)[] | undefined ? A : never): ProtoArtifact {
  return { artifactId: artifact.artifactId, ...(artifact.name ? { name: artifact.name } : {}), parts: artifact.parts.map(partOut) };
}

export function taskOut(task: A2aTask): ProtoTask {
  return {
    id: task.id,
    contextId: task.contextId ?? '',
    status: statusOut(task.status),
    ...(task.artifacts ? { artifacts: task.artifacts.map(artifactOut) } : {}),
    ...(task.history ? { history: task.history.map(messageOut) } : {}),
  };
}

/** A 0.3 SendMessageRequest as 1.0's: `pushNotification` is the task's push config. */
export function sendIn(request: ProtoSendRequest): A2aSendMessageRequest {
  return { message: messageIn(request.message), ...sendConfigurationIn(request.configuration, request.configuration?.pushNotification) };
}

export function eventOut(event: A2aStreamResponse): ProtoStreamResponse {
  if (event.task) return { task: taskOut(event.task) };
  if (event.message) return { message: messageOut(event.message) };
  if (event.statusUpdate) {
    const update = event.statusUpdate;
    return { statusUpdate: { taskId: update.taskId, contextId: update.contextId, status: statusOut(update.status), final: isFinalState(update.status.state) } };
  }
  const update = event.artifactUpdate!;
  return {
    artifactUpdate: {
      taskId: update.taskId,
      contextId: update.contextId,
      artifact: artifactOut(update.artifact),
      ...(update.append !== undefined ? { append: update.append } : {}),
      ...(update.lastChunk !== undefined ? { lastChunk: update.lastChunk } : {}),
    },
  };
}

/** A 0.3 push config of the task in the path; the id comes from the config, else from `name`, else it is the task's. */
export function pushIn(taskId: string, body: ProtoTaskPushConfig): A2aPushConfig {
  const named = /\/pushNotificationConfigs\/([^/]+)$/.exec(body.name ?? '')?.[1];
  return pushConfigIn(taskId, { ...body.pushNotificationConfig, id: body.pushNotificationConfig.id || named || '' });
}

export function pushOut(config: A2aPushConfig): ProtoTaskPushConfig {
  const { taskId, pushNotificationConfig } = pushConfigOut(config);
  return { name: `tasks/${taskId}/pushNotificationConfigs/${config.id ?? ''}`, pushNotificationConfig };
}
