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

export interface RateLimiterOptions {
  redis?: Redis;
  keyPrefix?: string;
  /**
   * Told each time Redis fails a command or misses its deadline, with the count so far. The limiter then
   * fails open: the request is counted by this server alone, in memory, so limits still hold per server
   * and no request waits on, or fails because of, a Redis that is away.
   */
  onStoreFailure?: (error: unknown, total: number) => void;
}

interface Limiters {
  shared: RateLimiterAbstract;
  /** This server's own counters, used while the shared store fails. */
  local: RateLimiterAbstract;
}

export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const limiters = new Map<string, Limiters>();
  const prefix = options.keyPrefix ?? 'oaa-rl';
  let failures = 0;
  const limitersFor = (rule: RateLimitRule): Limiters => {
    const id = `${rule.name}:${rule.points}:${rule.windowSeconds}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      const settings = { points: rule.points, duration: rule.windowSeconds, keyPrefix: `${prefix}:${id}` };
      const local = new RateLimiterMemory(settings);
      limiter = { shared: options.redis ? new RateLimiterRedis({ ...settings, storeClient: options.redis }) : local, local };
      limiters.set(id, limiter);
    }
    return limiter;
  };
  /** Runs `use` on the shared store, and on this server's counters when the store fails. */
  async function withFallback<T>(rule: RateLimitRule, use: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    const { shared, local } = limitersFor(rule);
    try {
      return await use(shared);
    } catch (error) {
      if (error instanceof RateLimiterRes || shared === local) throw error;
      options.onStoreFailure?.(error, ++failures);
      return use(local);
    }
  }
  return {
    backend: options.redis ? 'redis' : 'memory',
    async consume(rule, key, points = 1) {
      try {
        const res = await withFallback(rule, (limiter) => limiter.consume(key, points));
        return { allowed: true, rule, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (rejection) {
        // Rejections over the limit are RateLimiterRes; anything else is a store failure and propagates.
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return { allowed: false, rule, remaining: 0, resetSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
      }
    },
    async peek(rule, key) {
      const res = await withFallback(rule, (limiter) => limiter.get(key));
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
