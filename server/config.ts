// The one place that reads the environment. Everything else receives a Config.
import { isIP } from 'node:net';
import { loadPlans, PlanError, type Plans } from './billing/plans.ts';
import { CatalogError, loadCatalog, type Catalog } from './models/catalog.ts';
import type { KnowledgeConfig } from './knowledge/service.ts';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string | undefined;
  publicUrl: string;
  logLevel: LogLevel;
  /** Largest JSON body accepted, in bytes; larger answers 413. */
  bodyLimitBytes: number;
  /** Origins allowed by CORS; empty turns CORS off, `*` allows any. */
  corsOrigins: string[];
  /**
   * Host names, addresses and CIDR ranges that requests to user-given URLs (audio, MCP servers, A2A push)
   * may reach although they are private, loopback or link-local (OUTBOUND_ALLOW).
   */
  outboundAllow: string[];
  /** How long listing a remote MCP server's tools, or one call of them, may take. */
  mcpTimeoutSeconds: number;
  /** Validate every JSON response and SSE event against the contract (on outside production). */
  validateResponses: boolean;
  trustProxy: boolean;
  shutdownTimeoutMs: number;
  /** How long a new connection may stay silent before its first byte; then it is closed. */
  silentConnectionTimeoutMs: number;
  /** Seconds of silence after which an open event stream gets a keep-alive comment. */
  sseKeepAliveSeconds: number;
  /** PGlite's data directory (the embedded default), and where a generated JWT secret is kept. */
  dataDir: string;
  /** PostgreSQL instead of PGlite when set. */
  databaseUrl: string | undefined;
  /** PGLITE_SHARED_BUFFERS: PGlite's shared buffers in megabytes, or `auto`: sized at start-up to the tables it searches by vector. */
  pgliteSharedBuffers: number | 'auto';
  redisUrl: string | undefined;
  /** The deadline of every Redis command; past it the rate limiter counts on this server alone. */
  redisCommandTimeoutMs: number;
  /** Signs access tokens; generated once into DATA_DIR when unset. */
  jwtSecret: string | undefined;
  sessionTtlSeconds: number;
  /** How long an API key that authenticated is trusted from memory; a revocation reaches other instances within it. */
  apiKeyCacheSeconds: number;
  smtpUrl: string | undefined;
  /** The deadline of each SMTP step (connecting, the greeting, any answer); past it the mail fails with 503. */
  smtpTimeoutMs: number;
  mailFrom: string;
  magicLinkTtlSeconds: number;
  /** Origins that `redirect_url`s of the sign-in flows may point to; PUBLIC_URL's origin always may. */
  allowedRedirectOrigins: string[];
  oauthProviders: OAuthProviderConfig[];
  /** The model catalog (MODELS_FILE, or OPENAI_* / ANTHROPIC_*, plus the built-in local models). */
  models: Catalog;
  /** Knowledge documents: size limits, chunking and embedding batches. */
  knowledge: KnowledgeConfig;
  /** The plans (PLANS_FILE or the built-in free / pro / enterprise) with their Stripe prices. */
  plans: Plans;
  /** Undefined without STRIPE_SECRET_KEY: then checkout and the webhook refuse and everyone is on the default plan. */
  stripe: StripeConfig | undefined;
  /** Prefixes every key this server writes to Redis, so that deployments can share one. */
  redisKeyPrefix: string;
  /** OVERLOAD_EVENT_LOOP_DELAY_MS: new runs and model calls get 503 + Retry-After while the event loop is this late (0: never). */
  overloadDelayMs: number;
  /** The per-user request limit's window; a plan's requests_per_minute is scaled to it. */
  rateLimitWindowSeconds: number;
  /** How long the answer to a request with an Idempotency-Key is kept for retries. */
  idempotencyTtlSeconds: number;
  /** GET /metrics: off answers 404; with a token, scrapers must send it as a bearer token. */
  metrics: { enabled: boolean; token: string | undefined };
}

export interface StripeConfig {
  secretKey: string;
  webhookSecret: string;
  /** STRIPE_API_BASE split for the SDK; undefined means Stripe's own API. */
  apiBase: { protocol: 'http' | 'https'; host: string; port: number } | undefined;
  /** The deadline of each attempt of a Stripe API call (one retry after a network failure). */
  timeoutMs: number;
}

export interface OAuthProviderConfig {
  /** The lower-case name from `OAUTH_<NAME>_ISSUER`, used in the URLs. */
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  /** How the client authenticates at the token endpoint; HTTP Basic is the OAuth 2.0 default. */
  tokenAuthMethod: 'client_secret_basic' | 'client_secret_post';
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function readString(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}; got "${raw}".`);
  }
  return value;
}

/** `auto`, or a size as PostgreSQL writes it (`256MB`, `1GB`), from 16 MB to 16 GB; in megabytes. */
function readSharedBuffers(env: Env): number | 'auto' {
  const raw = readString(env, 'PGLITE_SHARED_BUFFERS') ?? 'auto';
  if (raw === 'auto') return raw;
  const match = /^(\d+)\s*(MB|GB)$/i.exec(raw);
  const megabytes = match ? Number(match[1]) * (match[2]!.toUpperCase() === 'GB' ? 1024 : 1) : Number.NaN;
  if (!(megabytes >= 16 && megabytes <= 16 * 1024)) {
    throw new ConfigError(`PGLITE_SHARED_BUFFERS must be auto or a size from 16MB to 16GB (such as 256MB); got "${raw}".`);
  }
  return megabytes;
}

function readSecret(env: Env, name: string): string | undefined {
  const value = readString(env, name);
  if (value !== undefined && Buffer.byteLength(value) < 32) {
    throw new ConfigError(`${name} must be at least 32 bytes long.`);
  }
  return value;
}

function readMetricsToken(env: Env): string | undefined {
  const value = readString(env, 'METRICS_TOKEN');
  // Scrapes are not rate-limited, so a short token could be guessed.
  if (value !== undefined && (Buffer.byteLength(value) < 16 || /\s/.test(value))) {
    throw new ConfigError('METRICS_TOKEN must be at least 16 bytes long, without spaces.');
  }
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = readString(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false; got "${raw}".`);
}

function readEnum<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}; got "${raw}".`);
  }
  return raw as T;
}

function readUrl(env: Env, name: string, fallback: string): string {
  const raw = readString(env, name) ?? fallback;
  try {
    return new URL(raw).toString().replace(/\/$/, '');
  } catch {
    throw new ConfigError(`${name} must be an absolute URL; got "${raw}".`);
  }
}

function readOrigins(env: Env, name: string): string[] {
  const raw = readString(env, name);
  if (!raw) return [];
  return raw.split(',').map((item) => {
    try {
      return new URL(item.trim()).origin;
    } catch {
      throw new ConfigError(`${name} must list absolute URLs separated by commas; "${item.trim()}" is not one.`);
    }
  });
}

function readOAuthProviders(env: Env): OAuthProviderConfig[] {
  const providers: OAuthProviderConfig[] = [];
  for (const key of Object.keys(env).sort()) {
    const match = /^OAUTH_([A-Z0-9][A-Z0-9_]*)_ISSUER$/.exec(key);
    if (!match) continue;
    const prefix = `OAUTH_${match[1]}`;
    const clientId = readString(env, `${prefix}_CLIENT_ID`);
    if (!clientId) throw new ConfigError(`${prefix}_ISSUER is set, so ${prefix}_CLIENT_ID must be set too.`);
    providers.push({
      name: match[1]!.toLowerCase().replaceAll('_', '-'),
      issuer: readUrl(env, key, ''),
      clientId,
      clientSecret: readString(env, `${prefix}_CLIENT_SECRET`),
      tokenAuthMethod: readEnum(env, `${prefix}_TOKEN_AUTH_METHOD`, ['client_secret_basic', 'client_secret_post'] as const, 'client_secret_basic'),
    });
  }
  return providers;
}

function readCatalog(env: Env): Catalog {
  // The default for providers that do not set timeout_seconds in MODELS_FILE, and for OPENAI_*/ANTHROPIC_*.
  const timeoutMs = readInt(env, 'MODEL_TIMEOUT_SECONDS', 60, 1, 3600) * 1000;
  try {
    return loadCatalog(env, { timeoutMs });
  } catch (error) {
    if (error instanceof CatalogError) throw new ConfigError(`the model catalog is invalid: ${error.message}`);
    throw error;
  }
}

function readPlans(env: Env): Plans {
  try {
    return loadPlans(env);
  } catch (error) {
    if (error instanceof PlanError) throw new ConfigError(`the plans are invalid: ${error.message}`);
    throw error;
  }
}

function readStripe(env: Env): StripeConfig | undefined {
  const secretKey = readString(env, 'STRIPE_SECRET_KEY');
  const webhookSecret = readString(env, 'STRIPE_WEBHOOK_SECRET');
  const base = readString(env, 'STRIPE_API_BASE');
  let apiBase: StripeConfig['apiBase'];
  if (base !== undefined) {
    const url = URL.canParse(base) ? new URL(base) : undefined;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '')) {
      throw new ConfigError(`STRIPE_API_BASE must be an http(s) origin such as http://127.0.0.1:12111; got "${base}".`);
    }
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    apiBase = { protocol, host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443 };
  }
  if (!secretKey && !webhookSecret) return undefined;
  // Half a configuration would sell plans that never arrive (no webhook) or take events it cannot act on.
  if (!secretKey) throw new ConfigError('STRIPE_WEBHOOK_SECRET is set, so STRIPE_SECRET_KEY must be set too.');
  if (!webhookSecret) throw new ConfigError('STRIPE_SECRET_KEY is set, so STRIPE_WEBHOOK_SECRET must be set too: the webhook is how plans change.');
  return { secretKey, webhookSecret, apiBase, timeoutMs: readInt(env, 'STRIPE_TIMEOUT_MS', 8_000, 100, 120_000) };
}

function readKnowledge(env: Env): KnowledgeConfig {
  const maxBytes = readInt(env, 'KNOWLEDGE_MAX_BYTES', 10 * 1024 * 1024, 1024, 512 * 1024 * 1024);
  const chunkTokens = readInt(env, 'KNOWLEDGE_CHUNK_TOKENS', 300, 32, 8192);
  return {
    maxBytes,
    inlineMaxBytes: readInt(env, 'KNOWLEDGE_INLINE_MAX_BYTES', 64 * 1024, 0, maxBytes),
    chunkTokens,
    // Up to a quarter of a chunk: more would embed the same text over and over.
    chunkOverlapTokens: readInt(env, 'KNOWLEDGE_CHUNK_OVERLAP_TOKENS', 40, 0, Math.floor(chunkTokens / 4)),
    embedBatchSize: readInt(env, 'KNOWLEDGE_EMBED_BATCH_SIZE', 64, 1, 2048),
    // 800: at 100k chunks of the knowledge benchmark, recall@10 0.96–0.98 against 0.82–0.85 at 200, for
    // about 5 ms more a vector query (README, Benchmarks, target 5). Only searches pay for it.
    hnswEfSearch: readInt(env, 'KNOWLEDGE_HNSW_EF_SEARCH', 800, 10, 1000),
    ...readHnswBuild(env),
  };
}

/** pgvector's bounds: m from 2 to 100, ef_construction from 4 to 1,000 and at least twice m. */
function readHnswBuild(env: Env): Pick<KnowledgeConfig, 'hnswM' | 'hnswEfConstruction'> {
  const hnswM = readInt(env, 'KNOWLEDGE_HNSW_M', 16, 2, 100);
  const hnswEfConstruction = readInt(env, 'KNOWLEDGE_HNSW_EF_CONSTRUCTION', 64, 4, 1000);
  if (hnswEfConstruction < 2 * hnswM) {
    throw new ConfigError(`KNOWLEDGE_HNSW_EF_CONSTRUCTION must be at least twice KNOWLEDGE_HNSW_M (${2 * hnswM}); got ${hnswEfConstruction}.`);
  }
  return { hnswM, hnswEfConstruction };
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = readEnum(env, 'NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const port = readInt(env, 'PORT', 3000, 0, 65535);
  const logLevel = readEnum(
    env,
    'LOG_LEVEL',
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
    nodeEnv === 'test' ? 'silent' : 'info',
  );
  const cors = readString(env, 'CORS_ORIGINS');
  return {
    env: nodeEnv,
    port,
    host: readString(env, 'HOST'),
    publicUrl: readUrl(env, 'PUBLIC_URL', `http://localhost:${port}`),
    logLevel,
    bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 512 * 1024 * 1024),
    corsOrigins: cors ? cors.split(',').map((origin) => origin.trim()).filter(Boolean) : [],
    outboundAllow: readOutboundAllow(env),
    mcpTimeoutSeconds: readInt(env, 'MCP_TIMEOUT_SECONDS', 30, 1, 600),
    validateResponses: readBool(env, 'VALIDATE_RESPONSES', nodeEnv !== 'production'),
    trustProxy: readBool(env, 'TRUST_PROXY', false),
    shutdownTimeoutMs: readInt(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    silentConnectionTimeoutMs: readInt(env, 'SILENT_CONNECTION_TIMEOUT_MS', 30_000, 100, 600_000),
    sseKeepAliveSeconds: readInt(env, 'SSE_KEEPALIVE_SECONDS', 15, 1, 3600),
    dataDir: readString(env, 'DATA_DIR') ?? './data',
    databaseUrl: readString(env, 'DATABASE_URL'),
    pgliteSharedBuffers: readSharedBuffers(env),
    redisUrl: readString(env, 'REDIS_URL'),
    redisCommandTimeoutMs: readInt(env, 'REDIS_COMMAND_TIMEOUT_MS', 500, 10, 60_000),
    jwtSecret: readSecret(env, 'JWT_SECRET'),
    sessionTtlSeconds: readInt(env, 'SESSION_TTL_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    apiKeyCacheSeconds: readInt(env, 'API_KEY_CACHE_SECONDS', 10, 0, 3600),
    // Off in tests: a shared, busy test machine is not an overloaded server.
    overloadDelayMs: readInt(env, 'OVERLOAD_EVENT_LOOP_DELAY_MS', nodeEnv === 'test' ? 0 : 250, 0, 60_000),
    smtpUrl: readString(env, 'SMTP_URL'),
    smtpTimeoutMs: readInt(env, 'SMTP_TIMEOUT_MS', 10_000, 100, 300_000),
    mailFrom: readString(env, 'MAIL_FROM') ?? 'Open Agent API <no-reply@localhost>',
    magicLinkTtlSeconds: readInt(env, 'MAGIC_LINK_TTL_SECONDS', 15 * 60, 60, 24 * 3600),
    allowedRedirectOrigins: readOrigins(env, 'ALLOWED_REDIRECT_ORIGINS'),
    oauthProviders: readOAuthProviders(env),
    models: readCatalog(env),
    knowledge: readKnowledge(env),
    plans: readPlans(env),
    stripe: readStripe(env),
    redisKeyPrefix: readString(env, 'REDIS_KEY_PREFIX') ?? 'oaa',
    rateLimitWindowSeconds: readInt(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 3600),
    idempotencyTtlSeconds: readInt(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 60, 30 * 24 * 3600),
    metrics: { enabled: readBool(env, 'METRICS_ENABLED', true), token: readMetricsToken(env) },
  };
}

/** OUTBOUND_ALLOW: comma-separated host names, addresses and CIDR ranges. */
function readOutboundAllow(env: NodeJS.ProcessEnv): string[] {
  const entries = (readString(env, 'OUTBOUND_ALLOW') ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address!);
    const hostname = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(entry);
    const cidr = family !== 0 && extra === undefined && (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)));
    if (!hostname && !cidr) throw new Error(`OUTBOUND_ALLOW: ${entry} is not a host name, an address or a CIDR range.`);
  }
  return entries;
}
