// Each user's request rate, from their plan's requests_per_minute, through the shared limiter.
import type { PlanSpec } from '../billing/plans.ts';
import type { RateLimiter, RateLimitResult, RateLimitRule } from './rate-limiter.ts';

export interface RequestLimitOptions {
  limiter: RateLimiter;
  /** The window the plan's per-minute figure is scaled to (60 unless RATE_LIMIT_WINDOW_SECONDS says otherwise). */
  windowSeconds: number;
}

export function createRequestLimits({ limiter, windowSeconds }: RequestLimitOptions) {
  /** The plan's rule, or undefined when its requests are unlimited. */
  const ruleOf = (plan: PlanSpec): RateLimitRule | undefined => {
    const perMinute = plan.limits.requests_per_minute;
    if (perMinute === null) return undefined;
    return { name: 'requests', points: Math.max(1, Math.round((perMinute * windowSeconds) / 60)), windowSeconds };
  };
  return {
    windowSeconds,
    ruleOf,
    /** Counts one request; undefined when the plan does not limit requests. */
    async consume(userId: string, plan: PlanSpec): Promise<RateLimitResult | undefined> {
      const rule = ruleOf(plan);
      return rule ? limiter.consume(rule, userId) : undefined;
    },
    async peek(userId: string, plan: PlanSpec) {
      const rule = ruleOf(plan);
      if (!rule) return undefined;
      return { rule, state: await limiter.peek(rule, userId) };
    },
  };
}

export type RequestLimits = ReturnType<typeof createRequestLimits>;

/** A duration as OpenAI's `x-ratelimit-reset-*` headers write it: `12s`, `1m30s`. */
export function openAiDuration(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds));
  const minutes = Math.floor(whole / 60);
  return minutes > 0 ? `${minutes}m${whole % 60}s` : `${whole}s`;
}
