// The model catalog: public model ids mapped to a provider, an upstream model and capabilities, with an
// ordered fallback list. Built from MODELS_FILE (YAML), or from OPENAI_*/ANTHROPIC_* alone, and always
// holding the built-in `local` models.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { Capability } from './types.ts';
import { LOCAL_EMBEDDING_DIMENSIONS } from './local.ts';

export interface ProviderSpec {
  name: string;
  type: 'local' | 'openai-compatible' | 'anthropic';
  baseUrl?: string;
  apiKey?: string;
  timeoutMs: number;
  /** Ask the upstream for its models at start-up and add them to the catalog. */
  discover: boolean;
  /** The local model's pause between streamed words, to watch streaming in demos and benchmarks. */
  tokenDelayMs?: number;
}

export interface ModelSpec {
  id: string;
  provider: string;
  upstream: string;
  capabilities: Capability[];
  fallbacks: string[];
  /** For embedding models: the vector length, when known. */
  dimensions?: number;
}

export interface Catalog {
  providers: ProviderSpec[];
  models: ModelSpec[];
  defaults: { chat: string; embeddings: string };
}

export class CatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CatalogError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function localProvider(env: Env): ProviderSpec {
  const delay = Number(env.LOCAL_MODEL_TOKEN_DELAY_MS ?? 0);
  if (!Number.isInteger(delay) || delay < 0 || delay > 10_000) fail('LOCAL_MODEL_TOKEN_DELAY_MS', 'must be an integer from 0 to 10000');
  return { name: 'local', type: 'local', timeoutMs: 60_000, discover: false, tokenDelayMs: delay };
}
const LOCAL_MODELS: ModelSpec[] = [
  { id: 'local', provider: 'local', upstream: 'local', capabilities: ['chat', 'completions'], fallbacks: [] },
  {
    id: 'local-embedding',
    provider: 'local',
    upstream: 'local-embedding',
    capabilities: ['embeddings'],
    fallbacks: [],
    dimensions: LOCAL_EMBEDDING_DIMENSIONS,
  },
];
const CAPABILITIES: Capability[] = ['chat', 'completions', 'embeddings'];
const DEFAULT_TIMEOUT_MS = 60_000;

function fail(where: string, message: string): never {
  throw new CatalogError(`${where}: ${message}`);
}

function asString(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.trim() === '') fail(where, 'must be a non-empty string');
  return value.trim();
}

function readProvider(raw: unknown, index: number, env: Env, defaultTimeoutMs: number): ProviderSpec {
  const where = `providers[${index}]`;
  if (!raw || typeof raw !== 'object') fail(where, 'must be a mapping');
  const entry = raw as Record<string, unknown>;
  const type = entry.type;
  if (type !== 'openai-compatible' && type !== 'anthropic' && type !== 'local') {
    fail(`${where}.type`, 'must be openai-compatible, anthropic or local');
  }
  const keyEnv = entry.api_key_env === undefined ? undefined : asString(entry.api_key_env, `${where}.api_key_env`);
  if (keyEnv && !env[keyEnv]) fail(`${where}.api_key_env`, `names ${keyEnv}, which is not set`);
  if (type === 'anthropic' && !keyEnv) fail(`${where}.api_key_env`, 'is required for an anthropic provider');
  const timeout = entry.timeout_seconds === undefined ? defaultTimeoutMs / 1000 : Number(entry.timeout_seconds);
  if (!Number.isFinite(timeout) || timeout <= 0) fail(`${where}.timeout_seconds`, 'must be a positive number');
  return {
    name: asString(entry.name, `${where}.name`),
    type,
    ...(entry.base_url === undefined ? {} : { baseUrl: asString(entry.base_url, `${where}.base_url`) }),
    ...(keyEnv ? { apiKey: env[keyEnv]! } : {}),
    timeoutMs: timeout * 1000,
    discover: entry.discover === true,
  };
}

function readModel(raw: unknown, index: number): ModelSpec {
  const where = `models[${index}]`;
  if (!raw || typeof raw !== 'object') fail(where, 'must be a mapping');
  const entry = raw as Record<string, unknown>;
  const id = asString(entry.id, `${where}.id`);
  const capabilities = (entry.capabilities ?? ['chat']) as unknown;
  if (!Array.isArray(capabilities) || capabilities.some((c) => !CAPABILITIES.includes(c as Capability))) {
    fail(`${where}.capabilities`, `must list some of ${CAPABILITIES.join(', ')}`);
  }
  const fallbacks = (entry.fallbacks ?? []) as unknown;
  if (!Array.isArray(fallbacks)) fail(`${where}.fallbacks`, 'must be a list of model ids');
  return {
    id,
    provider: asString(entry.provider, `${where}.provider`),
    upstream: entry.upstream === undefined ? id : asString(entry.upstream, `${where}.upstream`),
    capabilities: capabilities as Capability[],
    fallbacks: fallbacks.map((f, i) => asString(f, `${where}.fallbacks[${i}]`)),
    ...(entry.dimensions === undefined ? {} : { dimensions: Number(entry.dimensions) }),
  };
}

function check(catalog: Catalog): Catalog {
  const providers = new Set(catalog.providers.map((p) => p.name));
  const ids = new Set<string>();
  for (const model of catalog.models) {
    if (ids.has(model.id)) fail(`model ${model.id}`, 'is defined twice');
    ids.add(model.id);
    if (!providers.has(model.provider)) fail(`model ${model.id}`, `names the unknown provider ${model.provider}`);
    const type = catalog.providers.find((p) => p.name === model.provider)?.type;
    if (type === 'anthropic' && model.capabilities.some((c) => c !== 'chat')) {
      fail(`model ${model.id}`, 'is served by an anthropic provider, which offers chat only');
    }
  }
  for (const model of catalog.models) {
    for (const fallback of model.fallbacks) if (!ids.has(fallback)) fail(`model ${model.id}`, `falls back to the unknown model ${fallback}`);
  }
  const byId = new Map(catalog.models.map((m) => [m.id, m]));
  if (!byId.get(catalog.defaults.chat)?.capabilities.includes('chat')) fail('defaults.chat', `${catalog.defaults.chat} is not a chat model`);
  if (!byId.get(catalog.defaults.embeddings)?.capabilities.includes('embeddings')) {
    fail('defaults.embeddings', `${catalog.defaults.embeddings} is not an embedding model`);
  }
  return catalog;
}

/**
 * The catalog from MODELS_FILE when set; otherwise the local models plus an `openai` provider when
 * OPENAI_API_KEY or OPENAI_BASE_URL is set and an `anthropic` one when ANTHROPIC_API_KEY is, whose models
 * are discovered from the upstream at start-up.
 */
export function loadCatalog(env: Env, options: { timeoutMs?: number } = {}): Catalog {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const file = env.MODELS_FILE?.trim();
  const defaults = {
    chat: env.DEFAULT_CHAT_MODEL?.trim() || 'local',
    embeddings: env.DEFAULT_EMBEDDING_MODEL?.trim() || 'local-embedding',
  };
  if (file) {
    let raw: Record<string, unknown>;
    try {
      raw = (parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
    } catch (error) {
      throw new CatalogError(`MODELS_FILE ${file} cannot be read: ${(error as Error).message}`);
    }
    const providers = ((raw.providers ?? []) as unknown[]).map((p, i) => readProvider(p, i, env, timeoutMs));
    const models = ((raw.models ?? []) as unknown[]).map(readModel);
    const fileDefaults = (raw.defaults ?? {}) as { chat?: string; embeddings?: string };
    return check({
      providers: [localProvider(env), ...providers.filter((p) => p.name !== 'local')],
      models: [...LOCAL_MODELS.filter((m) => !models.some((n) => n.id === m.id)), ...models],
      defaults: { chat: fileDefaults.chat ?? defaults.chat, embeddings: fileDefaults.embeddings ?? defaults.embeddings },
    });
  }
  const providers = [localProvider(env)];
  if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
    providers.push({
      name: 'openai',
      type: 'openai-compatible',
      baseUrl: env.OPENAI_BASE_URL?.trim() || 'https://api.openai.com/v1',
      ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
      timeoutMs,
      discover: true,
    });
  }
  if (env.ANTHROPIC_API_KEY) {
    providers.push({
      name: 'anthropic',
      type: 'anthropic',
      apiKey: env.ANTHROPIC_API_KEY,
      ...(env.ANTHROPIC_BASE_URL ? { baseUrl: env.ANTHROPIC_BASE_URL.trim() } : {}),
      timeoutMs,
      discover: true,
    });
  }
  // Defaults may name discovered models; they are checked once discovery has run.
  return { providers, models: [...LOCAL_MODELS], defaults };
}

/** Adds models an upstream listed, without replacing configured ones, and checks the result. */
export function withDiscovered(catalog: Catalog, provider: string, upstreamIds: string[]): Catalog {
  const known = new Set(catalog.models.map((m) => m.id));
  const chatOnly = catalog.providers.find((p) => p.name === provider)?.type === 'anthropic';
  const added: ModelSpec[] = upstreamIds
    .filter((id) => !known.has(id))
    .map((id) => ({
      id,
      provider,
      upstream: id,
      capabilities: chatOnly ? ['chat'] : /embed/i.test(id) ? ['embeddings'] : ['chat', 'completions'],
      fallbacks: [],
    }));
  return { ...catalog, models: [...catalog.models, ...added] };
}

export function validateCatalog(catalog: Catalog): Catalog {
  return check(catalog);
}
