// The per-operation guards the app runs after authentication and before the body is read: the user's
// request rate, then the plan quotas the operation would spend. Headers are set on the response here, so
// that they go out with whatever follows: the handler's JSON, a stream, or an error.
import type { RequestHandler, Response } from 'express';
import type { OperationId, RouteSpec } from '../../generated/server.gen.ts';
import type { PlanSpec } from '../billing/plans.ts';
import { ApiError } from '../errors.ts';
import type { LoadMonitor } from './load.ts';
import type { QuotaMetric, QuotaReading, Quotas } from './quotas.ts';
import { rateLimited, rateLimitHeaders } from './rate-limiter.ts';
import { openAiDuration, type RequestLimits } from './request-limit.ts';

export interface GuardDeps {
  /** Whether the server is too busy to start new runs and model calls. */
  load?: Pick<LoadMonitor, 'overloaded'> | undefined;
  planOf(userId: string): Promise<PlanSpec>;
  requestLimits: RequestLimits;
  quotas: Quotas;
}

const RUN_OPERATIONS: readonly OperationId[] = [
  'chatWithAgent',
  'chatWithTeam',
  'processAgentRequest',
  'processTeamRequest',
  'respondWithAgent',
  'respondWithTeam',
  'runAgentWithAgUi',
  'runTeamWithAgUi',
];
/** A run calls models too, so it spends tokens as well as a run. */
const MODEL_OPERATIONS: readonly OperationId[] = ['createChatCompletion', 'createCompletion', 'createEmbedding', 'createResponse', ...RUN_OPERATIONS];
const RESOURCE_OPERATIONS: Partial<Record<OperationId, readonly QuotaMetric[]>> = {
  createAgent: ['agents'],
  createTeam: ['teams'],
  createKnowledgeDocument: ['knowledge_documents', 'knowledge_bytes'],
};

/** The quotas an operation spends, checked before it runs. */
export function quotaMetricsOf(operationId: OperationId): QuotaMetric[] {
  return [
    ...(MODEL_OPERATIONS.includes(operationId) ? (['tokens_per_month'] as const) : []),
    ...(RUN_OPERATIONS.includes(operationId) ? (['runs_per_day'] as const) : []),
    ...(RESOURCE_OPERATIONS[operationId] ?? []),
  ];
}

/** OpenAI's clients read these on chat completions. */
const OPENAI_STYLE: OperationId = 'createChatCompletion';

const pass: RequestHandler = (_req, _res, next) => next();

function setHeaders(res: Response, headers: Record<string, string | number>): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, String(value));
}

export function rateLimitGuard(deps: GuardDeps) {
  return (route: RouteSpec): RequestHandler => {
    // Public operations have no user to count against; the sign-in flows limit themselves.
    if (!route.secured) return pass;
    const openAiStyle = route.operationId === OPENAI_STYLE;
    return async (req, res, next) => {
      const plan = await deps.planOf(req.principal!.userId);
      const result = await deps.requestLimits.consume(req.principal!.userId, plan);
      if (!result) {
        next();
        return;
      }
      setHeaders(res, rateLimitHeaders(result));
      if (openAiStyle) {
        setHeaders(res, {
          'x-ratelimit-limit-requests': result.rule.points,
          'x-ratelimit-remaining-requests': result.remaining,
          'x-ratelimit-reset-requests': openAiDuration(result.resetSeconds),
        });
      }
      if (!result.allowed) throw rateLimited(result, 'requests');
      next();
    };
  };
}

function tokenHeaders(readings: QuotaReading[]): Record<string, number> {
  const tokens = readings.find((reading) => reading.metric === 'tokens_per_month');
  if (!tokens || tokens.limit === null) return {};
  return {
    'x-ratelimit-limit-tokens': tokens.limit,
    'x-ratelimit-remaining-tokens': Math.max(0, tokens.limit - tokens.used),
  };
}

export function quotaGuard(deps: GuardDeps) {
  return (route: RouteSpec): RequestHandler => {
    const metrics = quotaMetricsOf(route.operationId);
    if (!route.secured || metrics.length === 0) return pass;
    const openAiStyle = route.operationId === OPENAI_STYLE;
    return async (req, res, next) => {
      const userId = req.principal!.userId;
      const plan = await deps.planOf(userId);
      // What the plan does not limit is not read: a run on an unlimited plan starts one statement sooner.
      const limited = metrics.filter((metric) => plan.limits[metric] !== null);
      const readings = await deps.quotas.read(userId, plan, limited);
      // Before the check, so that the token headers go out with a 402 as well.
      if (openAiStyle) setHeaders(res, tokenHeaders(readings));
      deps.quotas.assertWithin(plan, readings);
      next();
    };
  };
}

/** Seconds a client is asked to wait when the server sheds load. */
export const OVERLOAD_RETRY_SECONDS = 1;

/**
 * Refuses new runs and model calls while the server is overloaded, before anything is read or counted:
 * the work that would make it worse is what goes. Everything else (reads, writes, health) goes on.
 */
export function overloadGuard(deps: GuardDeps) {
  return (route: RouteSpec): RequestHandler => {
    const load = deps.load;
    if (!load || !MODEL_OPERATIONS.includes(route.operationId)) return pass;
    return (_req, _res, next) => {
      if (load.overloaded()) {
        throw new ApiError('service_unavailable', 'The server is too busy to start this now; retry shortly.', {
          headers: { 'Retry-After': String(OVERLOAD_RETRY_SECONDS) },
        });
      }
      next();
    };
  };
}

export function limitGuards(deps: GuardDeps): ((route: RouteSpec) => RequestHandler)[] {
  return [overloadGuard(deps), rateLimitGuard(deps), quotaGuard(deps)];
}
