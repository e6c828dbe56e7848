// Which plan a user is on, read on every limited request. Plans change rarely (a webhook, now and then),
// so a short per-process cache keyed by user saves a query per request; the webhook drops the entry in
// the process that handled it, and other processes see the change within the TTL.
import type { Logger } from 'pino';
import type { Queryable } from '../store/db.ts';
import type { PlanBook, PlanSpec } from './plans.ts';

export interface AccountPlanOptions {
  db: Queryable;
  plans: PlanBook;
  /** Without billing every user is on the default plan, whatever plan_id says. */
  billingEnabled: boolean;
  logger: Logger;
  ttlMs?: number;
  maxEntries?: number;
  /** A monotonic clock in milliseconds for the cache's TTL. */
  now?: () => number;
}

export function createAccountPlans(options: AccountPlanOptions) {
  const { db, plans, billingEnabled, logger } = options;
  const ttlMs = options.ttlMs ?? 5_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? (() => performance.now());
  const cache = new Map<string, { plan: PlanSpec; expiresAt: number }>();
  const warned = new Set<string>();

  async function load(userId: string): Promise<PlanSpec> {
    const rows = await db.query<{ plan_id: string }>('SELECT plan_id FROM users WHERE id = $1', [userId]);
    const planId = rows[0]?.plan_id;
    if (planId === undefined) return plans.defaultPlan;
    const plan = plans.get(planId);
    if (!plan) {
      if (!warned.has(planId)) {
        warned.add(planId);
        logger.warn({ planId }, 'users are on a plan the configuration no longer has; they get the default plan');
      }
      return plans.defaultPlan;
    }
    return plan;
  }

  return {
    async planOf(userId: string): Promise<PlanSpec> {
      if (!billingEnabled) return plans.defaultPlan;
      const hit = cache.get(userId);
      if (hit && hit.expiresAt > now()) return hit.plan;
      const plan = await load(userId);
      cache.delete(userId);
      // Maps iterate in insertion order, so the first key is the oldest entry.
      if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
      cache.set(userId, { plan, expiresAt: now() + ttlMs });
      return plan;
    },
    invalidate(userId: string): void {
      cache.delete(userId);
    },
  };
}

export type AccountPlans = ReturnType<typeof createAccountPlans>;
