// The usage report of an account: its plan, this month's usage against each limit, and tokens per model.
import type { components } from '../../generated/openapi.gen.ts';
import { utcMonth, type Quotas } from '../limits/quotas.ts';
import type { RequestLimits } from '../limits/request-limit.ts';
import type { UsageMeter } from '../usage/meter.ts';
import type { AccountPlans } from './account-plans.ts';

type UsageLimit = components['schemas']['UsageLimit'];
type AccountUsage = components['schemas']['AccountUsage'];

export interface UsageReportDeps {
  accountPlans: AccountPlans;
  quotas: Quotas;
  requestLimits: RequestLimits;
  usage: Pick<UsageMeter, 'byModel'>;
  clock: () => number;
}

export async function usageReport(deps: UsageReportDeps, userId: string): Promise<AccountUsage> {
  const plan = await deps.accountPlans.planOf(userId);
  const now = deps.clock();
  const period = utcMonth(now);
  const [readings, requests, models] = await Promise.all([
    deps.quotas.read(userId, plan),
    deps.requestLimits.peek(userId, plan),
    deps.usage.byModel(userId, period.start),
  ]);
  const limits: UsageLimit[] = [];
  if (requests) {
    const used = requests.state?.consumed ?? 0;
    limits.push({
      metric: 'requests_per_minute',
      used,
      limit: requests.rule.points,
      remaining: Math.max(0, requests.rule.points - used),
      resets_at: requests.state ? new Date(now + requests.state.resetMs).toISOString() : null,
    });
  }
  for (const reading of readings) {
    limits.push({
      metric: reading.metric,
      used: reading.used,
      limit: reading.limit,
      remaining: reading.limit === null ? null : Math.max(0, reading.limit - reading.used),
      resets_at: reading.resetsAt?.toISOString() ?? null,
    });
  }
  return {
    object: 'usage',
    plan_id: plan.id,
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    limits,
    models,
  };
}
