// Plan quotas: tokens per month and runs per day from the usage meter, and counts of resources from
// counters that the resource modules register. A quota with no counter is not enforced, and says so.
import type { Logger } from 'pino';
import type { LimitMetric, PlanSpec } from '../billing/plans.ts';
import { ApiError } from '../errors.ts';
import type { Queryable } from '../store/db.ts';
import type { UsageMeter } from '../usage/meter.ts';

/** The quotas counted from resources that exist, rather than metered over a period. */
export type ResourceMetric = 'agents' | 'teams' | 'knowledge_documents' | 'knowledge_bytes';
export type QuotaMetric = Exclude<LimitMetric, 'requests_per_minute'>;
/** How much of a resource a user holds now. */
export type Counter = (userId: string) => Promise<number>;

export const RESOURCE_METRICS: readonly ResourceMetric[] = ['agents', 'teams', 'knowledge_documents', 'knowledge_bytes'];

export interface QuotaOptions {
  usage: Pick<UsageMeter, 'tokensThisMonth' | 'runsToday'>;
  counters: Partial<Record<ResourceMetric, Counter>>;
  clock: () => number;
  logger: Logger;
}

export interface QuotaReading {
  metric: QuotaMetric;
  used: number;
  limit: number | null;
  /** When the period ends and `used` starts again from 0; null for resources. */
  resetsAt: Date | null;
}

const WHAT: Record<QuotaMetric, string> = {
  tokens_per_month: 'tokens this month',
  runs_per_day: 'runs today',
  agents: 'agents',
  teams: 'teams',
  knowledge_documents: 'knowledge documents',
  knowledge_bytes: 'bytes of knowledge',
};

/** The UTC calendar month holding `time`. */
export function utcMonth(time: number): { start: Date; end: Date } {
  const date = new Date(time);
  return {
    start: new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)),
    end: new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)),
  };
}

function nextUtcMidnight(time: number): Date {
  const date = new Date(time);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1));
}

export function createQuotas(options: QuotaOptions) {
  const { usage, counters, clock } = options;
  const uncounted = RESOURCE_METRICS.filter((metric) => !counters[metric]);
  if (uncounted.length > 0) {
    options.logger.warn({ metrics: uncounted }, `quotas on ${uncounted.join(', ')} are not enforced: nothing counts them yet`);
  }
  const counted: QuotaMetric[] = ['tokens_per_month', 'runs_per_day', ...RESOURCE_METRICS.filter((metric) => counters[metric])];

  async function usedOf(metric: QuotaMetric, userId: string): Promise<number> {
    if (metric === 'tokens_per_month') return usage.tokensThisMonth(userId);
    if (metric === 'runs_per_day') return usage.runsToday(userId);
    return counters[metric]!(userId);
  }

  function resetOf(metric: QuotaMetric, now: number): Date | null {
    if (metric === 'tokens_per_month') return utcMonth(now).end;
    if (metric === 'runs_per_day') return nextUtcMidnight(now);
    return null;
  }

  /** Readings for the metrics that can be counted; the others are left out. */
  async function read(userId: string, plan: PlanSpec, metrics: readonly QuotaMetric[] = counted): Promise<QuotaReading[]> {
    const now = clock();
    const measurable = metrics.filter((metric) => counted.includes(metric));
    return Promise.all(
      measurable.map(async (metric) => ({
        metric,
        used: await usedOf(metric, userId),
        limit: plan.limits[metric],
        resetsAt: resetOf(metric, now),
      })),
    );
  }

  /**
   * Throws 402 `quota_exceeded` naming every reading that is used up: one whose limit one more would
   * pass (`used >= limit`).
   */
  function assertWithin(plan: PlanSpec, readings: readonly QuotaReading[]): void {
    const over = readings.filter((reading) => reading.limit !== null && reading.used >= reading.limit);
    if (over.length === 0) return;
    const details = over.map((reading) => ({
      metric: reading.metric,
      limit: reading.limit!,
      used: reading.used,
      message:
        `The ${plan.name} plan allows ${reading.limit} ${WHAT[reading.metric]}; ${reading.used} are used` +
        (reading.resetsAt ? `, until ${reading.resetsAt.toISOString()}.` : '.'),
    }));
    throw new ApiError('quota_exceeded', details.map((detail) => detail.message).join(' '), { details });
  }

  return {
    /** The quota metrics this server can count, in the order the usage report lists them. */
    counted: counted as readonly QuotaMetric[],
    read,
    assertWithin,

    /** Reads `metrics` and throws 402 when one is used up; for callers outside the guards (run engines). */
    async enforce(userId: string, plan: PlanSpec, metrics: readonly QuotaMetric[]): Promise<QuotaReading[]> {
      const readings = await read(userId, plan, metrics);
      assertWithin(plan, readings);
      return readings;
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;

/** The limit of a resource on a user's plan now; null when the plan sets none. */
export type ResourceLimit = (userId: string, metric: ResourceMetric) => Promise<number | null>;

/**
 * Makes room for `adding` more of a resource inside the transaction `tx` that will add it, or throws 402.
 * The guards check quotas before a request runs, but concurrent requests all pass that check together;
 * this one holds: a transaction-scoped advisory lock per user and resource makes every other creation
 * of the same resource by the same user, on any server of the database, wait until this transaction ends,
 * so the count it reads stays true until its insert commits.
 */
export async function holdQuota(
  tx: Queryable,
  request: { userId: string; metric: ResourceMetric; limit: number | null; adding?: number; count: () => Promise<number> },
): Promise<void> {
  if (request.limit === null) return;
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`quota:${request.metric}:${request.userId}`]);
  const used = await request.count();
  if (used + (request.adding ?? 1) <= request.limit) return;
  const message = `Your plan allows ${request.limit} ${WHAT[request.metric]}; ${used} are used.`;
  throw new ApiError('quota_exceeded', message, { details: [{ metric: request.metric, limit: request.limit, used, message }] });
}
