// The limiter on both backends: counting, the 429 it builds, recovery after the window, and (on Redis)
// two limiters with their own connections sharing one count, as two servers do.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { availableLimiterBackends, redisUrl, uniqueRedisPrefix } from '../testing/redis.ts';
import { createRateLimiter, rateLimited, rateLimitHeaders, type RateLimiter } from './rate-limiter.ts';
import { openAiDuration } from './request-limit.ts';

const clients: Redis[] = [];
afterAll(() => clients.forEach((client) => client.disconnect()));

function limiterOn(backend: 'memory' | 'redis', keyPrefix: string): RateLimiter {
  if (backend === 'memory') return createRateLimiter({ keyPrefix });
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  clients.push(redis);
  return createRateLimiter({ redis, keyPrefix });
}

describe.each(await availableLimiterBackends())('rate limiter on %s', (backend) => {
  it('counts down, refuses past the limit, and recovers after the window', async () => {
    const limiter = limiterOn(backend, uniqueRedisPrefix());
    expect(limiter.backend).toBe(backend);
    const rule = { name: 'test', points: 2, windowSeconds: 1 };
    const first = await limiter.consume(rule, 'user-a');
    expect(first).toMatchObject({ allowed: true, remaining: 1 });
    expect((await limiter.consume(rule, 'user-a')).remaining).toBe(0);
    const refused = await limiter.consume(rule, 'user-a');
    expect(refused.allowed).toBe(false);
    expect(refused.resetSeconds).toBeGreaterThanOrEqual(1);
    // Another key has its own count.
    expect((await limiter.consume(rule, 'user-b')).allowed).toBe(true);
    expect(await limiter.peek(rule, 'user-a')).toMatchObject({ consumed: 3 });

    await sleep(1100);
    expect(await limiter.peek(rule, 'user-a')).toBeUndefined();
    expect(await limiter.consume(rule, 'user-a')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('builds the 429 with Retry-After and the IETF RateLimit fields', async () => {
    const limiter = limiterOn(backend, uniqueRedisPrefix());
    const rule = { name: 'requests', points: 1, windowSeconds: 60 };
    await limiter.consume(rule, 'k');
    const refused = await limiter.consume(rule, 'k');
    const error = rateLimited(refused, 'requests');
    expect(error.status).toBe(429);
    expect(error.code).toBe('rate_limited');
    expect(error.headers['Retry-After']).toBe(String(refused.resetSeconds));
    expect(error.headers['RateLimit-Policy']).toBe('"requests";q=1;w=60');
    expect(error.headers.RateLimit).toMatch(/^"requests";r=0;t=\d+$/);
    expect(rateLimitHeaders(await limiter.consume({ ...rule, name: 'other' }, 'k')).RateLimit).toMatch(/^"other";r=0;t=(59|60)$/);
  });
});

describe.runIf((await availableLimiterBackends()).includes('redis'))('rate limiter on Redis across servers', () => {
  it('shares one count between limiters on separate connections', async () => {
    const prefix = uniqueRedisPrefix();
    const one = limiterOn('redis', prefix);
    const two = limiterOn('redis', prefix);
    const rule = { name: 'shared', points: 3, windowSeconds: 60 };
    expect((await one.consume(rule, 'u')).remaining).toBe(2);
    expect((await two.consume(rule, 'u')).remaining).toBe(1);
    expect((await one.consume(rule, 'u')).remaining).toBe(0);
    expect((await two.consume(rule, 'u')).allowed).toBe(false);
  });

  it('falls back to counting in memory while Redis is unreachable', async () => {
    // A port nothing listens on: the limiter must keep answering rather than fail every request.
    const redis = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    clients.push(redis);
    const limiter = createRateLimiter({ redis, keyPrefix: uniqueRedisPrefix() });
    const rule = { name: 'insured', points: 1, windowSeconds: 60 };
    expect((await limiter.consume(rule, 'u')).allowed).toBe(true);
    expect((await limiter.consume(rule, 'u')).allowed).toBe(false);
  });
});

describe('openAiDuration', () => {
  it('writes seconds and minutes as OpenAI does', () => {
    expect(openAiDuration(0.2)).toBe('1s');
    expect(openAiDuration(12)).toBe('12s');
    expect(openAiDuration(90)).toBe('1m30s');
  });
});
