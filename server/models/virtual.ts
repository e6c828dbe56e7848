// Models that are not in the catalog but belong to the caller: agents (`agent:<id>`) and teams
// (`team:<id>`). The run engine provides them; without it those ids are unknown models. Their calls are
// metered by the engine as runs, not by the gateway.
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from './types.ts';

type Model = components['schemas']['Model'];

/** Who calls: the user, and the API key the call came with (null for a session token). */
export interface ModelCaller {
  userId: string;
  apiKeyId: string | null;
}

export interface VirtualModels {
  list(userId: string): Promise<Model[]>;
  get(userId: string, id: string): Promise<Model | undefined>;
  /** Runs a turn of the agent or team `request.model` names; one the caller does not own is an unknown model. */
  chat(caller: ModelCaller, request: ChatCompletionRequest, options: { signal: AbortSignal }): Promise<ChatCompletion>;
  /** Chunks as OpenAI streams them; the last carries `usage` and no choices. */
  chatStream(caller: ModelCaller, request: ChatCompletionRequest, options: { signal: AbortSignal }): AsyncGenerator<ChatCompletionChunk, unknown>;
}

/** The answer for a model id that names nothing the caller may use. */
export function unknownModel(id: string): ApiError {
  return new ApiError('not_found', `The model ${id} does not exist.`, { details: [{ field: 'model', message: 'unknown model' }] });
}

export function isVirtualModelId(id: string): boolean {
  return id.startsWith('agent:') || id.startsWith('team:');
}
