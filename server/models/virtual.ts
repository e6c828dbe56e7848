// Models that are not in the catalog but belong to the caller: agents (`agent:<id>`) and teams
// (`team:<id>`). The run engine provides them; without it those ids are unknown models. Their calls are
// metered by the engine as runs, not by the gateway.
import type { components } from '../../generated/openapi.gen.ts';
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
  chat(caller: ModelCaller, request: ChatCompletionRequest, options: { signal: AbortSignal }): Promise<ChatCompletion>;
  /** Chunks as OpenAI streams them; the last carries `usage` and no choices. */
  chatStream(caller: ModelCaller, request: ChatCompletionRequest, options: { signal: AbortSignal }): AsyncGenerator<ChatCompletionChunk, unknown>;
}

export function isVirtualModelId(id: string): boolean {
  return id.startsWith('agent:') || id.startsWith('team:');
}
