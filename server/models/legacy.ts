// Legacy text completions served by a chat model, for providers without a native /v1/completions: each
// prompt becomes one user message, and the answers come back as `text_completion` choices, indexed as
// OpenAI indexes them (prompt × n + choice).
import { randomUUID } from 'node:crypto';
import type { ModelSpec } from './catalog.ts';
import {
  UpstreamError,
  type CallOptions,
  type Completion,
  type CompletionUsage,
  type FinishReason,
  type Provider,
  type ProviderChatRequest,
  type ProviderCompletionRequest,
} from './types.ts';

/** OpenAI's default for legacy completions, which chat models do not share. */
export const LEGACY_DEFAULT_MAX_TOKENS = 16;

type LegacyFinish = 'stop' | 'length' | 'content_filter';

function legacyFinish(reason: FinishReason): LegacyFinish {
  return reason === 'length' || reason === 'content_filter' ? reason : 'stop';
}

function promptsOf(prompt: ProviderCompletionRequest['prompt']): string[] {
  if (typeof prompt === 'string') return [prompt];
  if (prompt.every((item) => typeof item === 'string')) return prompt as string[];
  throw new UpstreamError('refused', 'token prompts need a model with native legacy completions; send text');
}

function chatRequestOf(request: ProviderCompletionRequest, upstream: string, prompt: string): ProviderChatRequest {
  if (request.suffix) throw new UpstreamError('refused', 'suffix needs a model with native legacy completions');
  if (request.logprobs) throw new UpstreamError('refused', 'logprobs need a model with native legacy completions');
  const optional = {
    n: request.n,
    stop: request.stop,
    temperature: request.temperature,
    top_p: request.top_p,
    seed: request.seed,
    presence_penalty: request.presence_penalty,
    frequency_penalty: request.frequency_penalty,
    logit_bias: request.logit_bias,
    user: request.user,
  };
  return {
    model: upstream,
    messages: [{ role: 'user', content: prompt }],
    max_tokens: request.max_tokens ?? LEGACY_DEFAULT_MAX_TOKENS,
    ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined && value !== null)),
  };
}

function addUsage(total: CompletionUsage, usage: CompletionUsage | null | undefined): void {
  total.prompt_tokens += usage?.prompt_tokens ?? 0;
  total.completion_tokens += usage?.completion_tokens ?? 0;
  total.total_tokens += usage?.total_tokens ?? 0;
}

const head = (model: ModelSpec) => ({
  id: `cmpl-${randomUUID().replaceAll('-', '')}`,
  object: 'text_completion' as const,
  created: Math.floor(Date.now() / 1000),
  model: model.id,
});

export async function completeViaChat(provider: Provider, model: ModelSpec, request: ProviderCompletionRequest, options: CallOptions): Promise<Completion> {
  const n = request.n ?? 1;
  const choices: Completion['choices'] = [];
  const usage: CompletionUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const [i, prompt] of promptsOf(request.prompt).entries()) {
    const prefix = request.echo ? prompt : '';
    if (request.max_tokens === 0) {
      for (let c = 0; c < n; c++) choices.push({ index: i * n + c, text: prefix, finish_reason: 'length', logprobs: null });
      continue;
    }
    const answer = await provider.chat(chatRequestOf(request, model.upstream, prompt), options);
    for (const choice of answer.choices) {
      choices.push({ index: i * n + choice.index, text: prefix + (choice.message.content ?? ''), finish_reason: legacyFinish(choice.finish_reason), logprobs: null });
    }
    addUsage(usage, answer.usage);
  }
  return { ...head(model), choices, usage };
}

/** Streams each prompt's answer in turn as `text_completion` chunks; the last chunk carries usage. */
export async function* streamViaChat(provider: Provider, model: ModelSpec, request: ProviderCompletionRequest, options: CallOptions): AsyncGenerator<Completion> {
  const n = request.n ?? 1;
  const base = head(model);
  const usage: CompletionUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const chunk = (index: number, text: string, finish: LegacyFinish | null): Completion => ({ ...base, choices: [{ index, text, finish_reason: finish, logprobs: null }] });
  for (const [i, prompt] of promptsOf(request.prompt).entries()) {
    if (request.echo) for (let c = 0; c < n; c++) yield chunk(i * n + c, prompt, null);
    if (request.max_tokens === 0) {
      for (let c = 0; c < n; c++) yield chunk(i * n + c, '', 'length');
      continue;
    }
    for await (const part of provider.chatStream(chatRequestOf(request, model.upstream, prompt), options)) {
      if (part.usage) addUsage(usage, part.usage);
      for (const choice of part.choices) {
        const text = choice.delta.content ?? '';
        const finish = choice.finish_reason ? legacyFinish(choice.finish_reason) : null;
        if (text || finish) yield chunk(i * n + choice.index, text, finish);
      }
    }
  }
  yield { ...base, choices: [], usage };
}
