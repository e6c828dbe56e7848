// Fixed-window rate limits through rate-limiter-flexible: in memory by default, in Redis when REDIS_URL is
// set, so that several servers share one limit.
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ApiError } from '../errors.ts';

export interface RateLimitRule {
  /** Names the policy in the `RateLimit-Policy` header and separates counters. */
  name: string;
  points: number;
  windowSeconds: number;
}

export interface RateLimitResult {
  allowed: boolean;
  rule: RateLimitRule;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimiter {
  readonly backend: 'memory' | 'redis';
  consume(rule: RateLimitRule, key: string, points?: number): Promise<RateLimitResult>;
  /** Where `key` stands in the current window, without consuming; undefined when no window is open. */
  peek(rule: RateLimitRule, key: string): Promise<{ consumed: number; resetMs: number } | undefined>;
}

export function createRateLimiter(options: { redis?: Redis; keyPrefix?: string } = {}): RateLimiter {
  const limiters = new Map<string, RateLimiterAbstract>();
  const prefix = options.keyPrefix ?? 'oaa-rl';
  const limiterFor = (rule: RateLimitRule): RateLimiterAbstract => {
    const id = `${rule.name}:${rule.points}:${rule.windowSeconds}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      const settings = { points: rule.points, duration: rule.windowSeconds, keyPrefix: `${prefix}:${id}` };
      // When Redis fails a command each server limits on its own rather than failing every request.
      limiter = options.redis
        ? new RateLimiterRedis({ ...settings, storeClient: options.redis, insuranceLimiter: new RateLimiterMemory(settings) })
        : new RateLimiterMemory(settings);
      limiters.set(id, limiter);
    }
    return limiter;
  };
  return {
    backend: options.redis ? 'redis' : 'memory',
    async consume(rule, key, points = 1) {
      try {
        const res = await limiterFor(rule).consume(key, points);
        return { allowed: true, rule, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (rejection) {
        // Rejections over the limit are RateLimiterRes; anything else is a store failure and propagates.
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return { allowed: false, rule, remaining: 0, resetSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
      }
    },
    async peek(rule, key) {
      const res = await limiterFor(rule).get(key);
      return res ? { consumed: res.consumedPoints, resetMs: Math.max(0, res.msBeforeNext) } : undefined;
    },
  };
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) for a result. */
export function rateLimitHeaders(result: RateLimitResult): Record<string, string> {
  const { rule } = result;
  return {
    'RateLimit-Policy': `"${rule.name}";q=${rule.points};w=${rule.windowSeconds}`,
    RateLimit: `"${rule.name}";r=${result.remaining};t=${result.resetSeconds}`,
  };
}

export function rateLimited(result: RateLimitResult, what: string): ApiError {
  return new ApiError('rate_limited', `Too many ${what}; retry in ${result.resetSeconds} seconds.`, {
    headers: { 'Retry-After': String(result.resetSeconds), ...rateLimitHeaders(result) },
  });
}

/** Consumes one point, throwing the 429 envelope when over the limit. */
export async function enforce(limiter: RateLimiter, rule: RateLimitRule, key: string, what: string): Promise<RateLimitResult> {
  const result = await limiter.consume(rule, key);
  if (!result.allowed) throw rateLimited(result, what);
  return result;
}
