// Builds every dependency of the app from the configuration: the store, the limiter, the mailer and the
// identity services. server/main.ts and the tests both start here; tests override what they need.
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createAccountPlans, type AccountPlans } from './billing/account-plans.ts';
import { createBilling, type Billing } from './billing/billing.ts';
import { createPlanBook, type PlanBook } from './billing/plans.ts';
import type { Config } from './config.ts';
import { createAgentStore, type AgentStore } from './agents/agents.ts';
import { createRunEngine, newInstanceId, type RunEngine } from './runs/engine.ts';
import { createRunLifecycle, type RunLifecycle } from './runs/lifecycle.ts';
import { EventSink } from './runs/recorder.ts';
import { createRunSignals } from './runs/signals.ts';
import { createServerTools } from './runs/tools.ts';
import { createOutboundPolicy, type OutboundPolicy } from './net/outbound.ts';
import { createSealer } from './mcp/secrets.ts';
import { createAudioResolver } from './protocols/audio.ts';
import type { AudioResolver } from './protocols/agentscope.ts';
import { createRunStore, type RunStore } from './runs/store.ts';
import { createSessionStore as createChatSessionStore, type SessionStore as ChatSessionStore } from './sessions/store.ts';
import { createTeamRunner, type TeamRunner } from './teams/runner.ts';
import { createTeamStore, type TeamStore } from './teams/teams.ts';
import type { KnowledgeSearcher } from './tools/registry.ts';
import { createKnowledge, type Knowledge } from './knowledge/service.ts';
import { createA2aPush, type A2aPush } from './a2a/push.ts';
import { createJobs, type Jobs } from './jobs/jobs.ts';
import type { Authenticator } from './http/auth.ts';
import { createIdempotencyStore, type IdempotencyStore } from './http/idempotency.ts';
import { createApiKeyStore, type ApiKeyStore } from './identity/api-keys.ts';
import { createAuthenticator } from './identity/authenticator.ts';
import { createMagicLinks, redirectPolicy, type MagicLinks } from './identity/magic-link.ts';
import { createMailer, type Mailer } from './identity/mailer.ts';
import { createOAuthProviders, type OAuthProviders } from './identity/oauth.ts';
import { createSessionStore, loadJwtSecret, type SessionStore } from './identity/sessions.ts';
import { createLifecycle, type Lifecycle } from './lifecycle.ts';
import { createQuotas, type Quotas, type ResourceLimit } from './limits/quotas.ts';
import { createLoadMonitor, type LoadMonitor } from './limits/load.ts';
import { createRateLimiter, type RateLimiter } from './limits/rate-limiter.ts';
import { createRequestLimits, type RequestLimits } from './limits/request-limit.ts';
import { createLogger } from './logger.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import type { ModelGateway } from './models/gateway.ts';
import { createModelGateway } from './models/providers.ts';
import { pgliteMemoryBytes, type Db } from './store/db.ts';
import { migrate } from './store/migrate.ts';
import { createUsageMeter, type UsageMeter } from './usage/meter.ts';

export interface Services {
  config: Config;
  logger: Logger;
  clock: () => number;
  lifecycle: Lifecycle;
  db: Db;
  redis: Redis | undefined;
  limiter: RateLimiter;
  mailer: Mailer;
  apiKeys: ApiKeyStore;
  sessions: SessionStore;
  /** Undefined in production without SMTP: links must not land in the log there. */
  magicLinks: MagicLinks | undefined;
  oauth: OAuthProviders;
  authenticator: Authenticator;
  models: ModelGateway;
  usage: UsageMeter;
  agents: AgentStore;
  /** Conversations with agents and teams (the API's sessions; `sessions` above are sign-in sessions). */
  chatSessions: ChatSessionStore;
  /** Requests to user-given URLs go through it. */
  outbound: OutboundPolicy;
  audio: AudioResolver;
  runs: RunStore;
  engine: RunEngine;
  runLifecycle: RunLifecycle;
  teams: TeamStore;
  teamRunner: TeamRunner;
  plans: PlanBook;
  /** Each user's current plan (cached briefly); the default plan for everyone without billing. */
  accountPlans: AccountPlans;
  billing: Billing;
  /** Per-user request rate from the plan. */
  requestLimits: RequestLimits;
  quotas: Quotas;
  /** Knowledge documents and search; agents reach it through the knowledge_search tool. */
  knowledge: Knowledge;
  /** A2A push notification configs and their delivery jobs. */
  a2aPush: A2aPush;
  /** This instance's Prometheus metrics, served at GET /metrics. */
  metrics: Metrics;
  /** The kept answers of requests with an Idempotency-Key. */
  idempotency: IdempotencyStore;
  /** The event loop's delay, which decides when new runs are refused (load shedding). */
  load: LoadMonitor;
  /** Durable background jobs (pg-boss): register a kind, enqueue jobs of it; they survive this process. */
  jobs: Jobs;
  databaseReady(): Promise<boolean>;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  db?: Db;
  logger?: Logger;
  clock?: () => number;
  mailer?: Mailer;
}

export async function openDatabase(config: Config, logger?: Logger): Promise<Db> {
  // Only the store in use is loaded: pg on PostgreSQL, PGlite and its WebAssembly build without DATABASE_URL.
  if (config.databaseUrl) {
    const { openPostgres } = await import('./store/postgres.ts');
    return openPostgres(config.databaseUrl, { onListenerError: (error) => logger?.warn({ err: error }, 'the database listener failed; reconnecting') });
  }
  const { openPglite, MIN_SHARED_BUFFERS_MB } = await import('./store/pglite.ts');
  const db = await openPglite({ dataDir: path.join(config.dataDir, 'pglite'), sharedBuffers: config.pgliteSharedBuffers });
  if (config.pgliteSharedBuffers === 'auto' && db.sharedBuffersMb > MIN_SHARED_BUFFERS_MB) {
    logger?.info({ sharedBuffersMb: db.sharedBuffersMb }, 'PGlite shared buffers sized to hold the tables it searches by vector');
  }
  return db;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? Date.now;
  const db = overrides.db ?? (await openDatabase(config, logger));
  await migrate(db);
  const instanceId = newInstanceId();
  const jobs = createJobs({ db, logger, instanceId });
  await jobs.start();
  // Every command has a deadline (a Redis that accepts connections and never answers would otherwise
  // hold each request); a connection that cannot be made is given up as quickly.
  const redis = config.redisUrl
    ? new (await import('ioredis')).Redis(config.redisUrl, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
        commandTimeout: config.redisCommandTimeoutMs,
        connectTimeout: Math.max(1000, config.redisCommandTimeoutMs),
      })
    : undefined;
  redis?.on('error', (error: unknown) => logger.debug({ err: error }, 'Redis connection error'));
  const metrics = createMetrics();
  const limiter = createRateLimiter({
    ...(redis ? { redis } : {}),
    keyPrefix: `${config.redisKeyPrefix}:rl`,
    onStoreFailure(error, total) {
      metrics.rateLimitStoreFailures.inc();
      // One line per failure would flood the log while Redis is away; the metric counts every one.
      if (total === 1 || total % 100 === 0) {
        logger.warn({ err: error, failures: total }, 'Redis failed a rate-limit command; limiting on this server alone until it answers');
      }
    },
  });
  const mailer = overrides.mailer ?? createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, logger, timeoutMs: config.smtpTimeoutMs });
  const isAllowedRedirect = redirectPolicy(config.publicUrl, config.allowedRedirectOrigins);
  const apiKeys = createApiKeyStore(db, { clock, cacheTtlMs: config.apiKeyCacheSeconds * 1000 });
  const secret = loadJwtSecret(config.jwtSecret, config.dataDir);
  const sessions = createSessionStore(db, {
    secret,
    issuer: config.publicUrl,
    ttlSeconds: config.sessionTtlSeconds,
    clock,
  });
  const magicLinks =
    mailer.transport === 'log' && config.env === 'production'
      ? undefined
      : createMagicLinks(db, { mailer, sessions, limiter }, {
          publicUrl: config.publicUrl,
          ttlSeconds: config.magicLinkTtlSeconds,
          clock,
          isAllowedRedirect,
        });
  const load = createLoadMonitor(config.overloadDelayMs);
  const models = await createModelGateway(config.models, { logger, clock, metrics });
  const oauth = createOAuthProviders(db, config.oauthProviders, { sessions }, { publicUrl: config.publicUrl, clock, isAllowedRedirect });
  // Every model call is metered and every quota check reads the month's tokens: writes go out in batches
  // every 100 ms, and a second's staleness of other instances' usage is fine for quotas.
  const usage = createUsageMeter(db, clock, { monthlyCacheMs: 1000, batchWindowMs: 100 });
  const lifecycle = createLifecycle();
  // Read when a resource is created, after accountPlans exists below.
  const resourceLimit: ResourceLimit = async (userId, metric) => (await accountPlans.planOf(userId)).limits[metric];
  const knowledge = await createKnowledge({ db, models, usage, logger, clock, config: config.knowledge, jobs, limitOf: resourceLimit });
  const outbound = createOutboundPolicy({ allow: config.outboundAllow });
  const sealer = createSealer(secret);
  const agents = createAgentStore({ db, models, knowledge, sealer, checkUrl: (url) => void outbound.check(url), limitOf: resourceLimit });
  const chatSessions = createChatSessionStore(db);
  const runs = createRunStore(db);
  await knowledge.start();
  const knowledgeSearcher: KnowledgeSearcher = {
    // No collections means all of the owner's, as an agent without a list searches everything.
    search: async (userId, { collections, ...request }, call) =>
      (await knowledge.search(userId, { ...request, collections: collections?.length ? collections : undefined }, call)).results,
  };
  const runLifecycle = createRunLifecycle({ runs, sink: new EventSink(runs, logger), clock, logger, metrics, owner: instanceId });
  const serverTools = createServerTools({ clock, knowledge: knowledgeSearcher });
  const remoteTools = { fetch: outbound.fetch, logger, listTimeoutMs: config.mcpTimeoutSeconds * 1000, callTimeoutMs: config.mcpTimeoutSeconds * 1000 };
  const engine = createRunEngine({
    db,
    agents,
    sessions: chatSessions,
    runs,
    models,
    usage,
    lifecycle: runLifecycle,
    serverTools,
    remoteTools,
    instanceId,
    signals: createRunSignals(db, logger),
    jobs,
    clock,
    logger,
  });
  metrics.countLiveRuns(engine.liveRuns);
  const native = db.native;
  if (native.engine === 'pglite') metrics.measureEmbeddedDatabase(() => pgliteMemoryBytes(native.pglite));
  await engine.start();
  const teams = createTeamStore({ db, agents, models, sealer, checkUrl: (url) => void outbound.check(url), limitOf: resourceLimit });
  const teamRunner = createTeamRunner({ startTurn: engine.startTurn, lifecycle: runLifecycle, serverTools, remoteTools, teams, agents, runs, logger });
  const a2aPush = createA2aPush({ db, jobs, outbound, engine, runs, logger, sealer, options: { timeoutMs: 10_000, retryDelaySeconds: 1, retryLimit: 10 } });
  await a2aPush.start();
  // Open streams end with a final event as soon as shutdown begins, so that draining does not wait on them.
  lifecycle.shuttingDown.addEventListener('abort', () => void engine.stop(), { once: true });
  const plans = createPlanBook(config.plans);
  const accountPlans = createAccountPlans({ db, plans, billingEnabled: config.stripe !== undefined, logger });
  const billing = createBilling({
    db,
    plans,
    stripe: config.stripe,
    publicUrl: config.publicUrl,
    isAllowedRedirect,
    clock,
    logger,
    onPlanChange: (userId) => accountPlans.invalidate(userId),
  });
  const quotas = createQuotas({
    usage,
    counters: {
      agents: (userId) => agents.count(userId),
      teams: (userId) => teams.count(userId),
      knowledge_documents: async (userId) => (await knowledge.countForUser(userId)).documents,
      knowledge_bytes: async (userId) => (await knowledge.countForUser(userId)).bytes,
    },
    clock,
    logger,
  });
  return {
    config,
    logger,
    clock,
    lifecycle,
    db,
    redis,
    limiter,
    mailer,
    apiKeys,
    sessions,
    magicLinks,
    oauth,
    authenticator: createAuthenticator(apiKeys, sessions),
    models,
    usage,
    agents,
    chatSessions,
    outbound,
    audio: createAudioResolver(outbound),
    runs,
    engine,
    runLifecycle,
    teams,
    teamRunner,
    plans,
    accountPlans,
    billing,
    requestLimits: createRequestLimits({ limiter, windowSeconds: config.rateLimitWindowSeconds }),
    quotas,
    knowledge,
    a2aPush,
    metrics,
    idempotency: createIdempotencyStore(db, { clock, ttlSeconds: config.idempotencyTtlSeconds }),
    jobs,
    load,
    async databaseReady() {
      await db.query('SELECT 1');
      return true;
    },
    async close() {
      load.stop();
      await engine.stop();
      await a2aPush.close();
      await jobs.stop(config.shutdownTimeoutMs);
      await knowledge.close();
      mailer.close();
      redis?.disconnect();
      await usage.flush();
      await db.close();
    },
  };
}
