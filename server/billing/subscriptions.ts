// What Stripe's events mean for a user's plan. Events arrive late, twice and out of order, so each one is
// read as an observation of one subscription at the event's time; a subscription keeps its latest state,
// and the user's plan and status are recomputed from their subscriptions after every change.
//
// Ordering: an observation replaces the stored state only when it is at least as new (event `created`),
// with two rules that hold whatever the clocks say, because Stripe's subscription lifecycle guarantees
// them: `canceled` and `incomplete_expired` are final, and `incomplete` is only ever a starting state.
import type { Logger } from 'pino';
import type { components } from '../../generated/openapi.gen.ts';
import type { Queryable } from '../store/db.ts';
import type { PlanBook } from './plans.ts';

export type SubscriptionStatus = Exclude<components['schemas']['SubscriptionStatus'], 'none'>;

const STATUSES: readonly SubscriptionStatus[] = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'canceled',
  'unpaid',
  'paused',
];
const FINAL = new Set<SubscriptionStatus>(['canceled', 'incomplete_expired']);
/** Statuses that keep the paid plan; `past_due` keeps it while Stripe retries the payment. */
const ENTITLED = new Set<SubscriptionStatus>(['active', 'trialing', 'past_due']);

export interface SubscriptionRow {
  id: string;
  user_id: string | null;
  customer_id: string | null;
  status: SubscriptionStatus;
  price_id: string | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
  cancel_at_period_end: boolean;
  state_at: number;
}

/** What one event says about one subscription. */
export interface Observation {
  subscriptionId: string;
  /** Seconds: the event's `created`. */
  at: number;
  customerId?: string | undefined;
  /** A user the event names (client_reference_id or our metadata); checked to exist before use. */
  userId?: string | undefined;
  /** The status it reports, or how to derive it from what is stored (invoice events). */
  status: SubscriptionStatus | ((stored: SubscriptionRow, isNew: boolean) => SubscriptionStatus);
  priceId?: string | undefined;
  periodStart?: number | undefined;
  periodEnd?: number | undefined;
  cancelAtPeriodEnd?: boolean | undefined;
}

export function isSubscriptionStatus(value: unknown): value is SubscriptionStatus {
  return typeof value === 'string' && (STATUSES as readonly string[]).includes(value);
}

/** Whether an observation of `incoming` at `at` replaces the stored state. */
export function supersedes(stored: Pick<SubscriptionRow, 'status' | 'state_at'>, incoming: SubscriptionStatus, at: number): boolean {
  if (FINAL.has(stored.status)) return false;
  if (FINAL.has(incoming)) return true;
  if (incoming === 'incomplete' && stored.status !== 'incomplete') return false;
  return at >= stored.state_at;
}

const SUBSCRIPTION_COLUMNS =
  'id, user_id, customer_id, status, price_id, current_period_start, current_period_end, cancel_at_period_end, state_at';

const toDate = (seconds: number | undefined): Date | null => (seconds === undefined ? null : new Date(seconds * 1000));

export function createSubscriptionLedger(plans: PlanBook, logger: Logger) {
  async function existingUser(tx: Queryable, userId: string | undefined): Promise<string | undefined> {
    if (!userId) return undefined;
    const rows = await tx.query<{ id: string }>('SELECT id FROM users WHERE id = $1', [userId]);
    return rows[0]?.id;
  }

  async function userOfCustomer(tx: Queryable, customerId: string | undefined): Promise<string | undefined> {
    if (!customerId) return undefined;
    const rows = await tx.query<{ id: string }>('SELECT id FROM users WHERE stripe_customer_id = $1', [customerId]);
    return rows[0]?.id;
  }

  return {
    /**
     * Records an observation; answers the user whose plan may have changed, if the subscription is
     * linked to one. Runs inside the webhook's transaction.
     */
    async observe(tx: Queryable, observation: Observation): Promise<string | undefined> {
      // A placeholder that any observation supersedes, so that the row can be locked whether or not it existed.
      const inserted = await tx.query<{ id: string }>(
        `INSERT INTO subscriptions (id, status, state_at) VALUES ($1, 'incomplete', 0) ON CONFLICT (id) DO NOTHING RETURNING id`,
        [observation.subscriptionId],
      );
      const rows = await tx.query<SubscriptionRow>(`SELECT ${SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = $1 FOR UPDATE`, [
        observation.subscriptionId,
      ]);
      const stored = rows[0]!;
      const userId =
        stored.user_id ?? (await existingUser(tx, observation.userId)) ?? (await userOfCustomer(tx, observation.customerId ?? stored.customer_id ?? undefined));
      const customerId = stored.customer_id ?? observation.customerId ?? null;
      const incoming = typeof observation.status === 'function' ? observation.status(stored, inserted.length > 0) : observation.status;
      const applies = supersedes(stored, incoming, observation.at);
      if (!applies) {
        logger.info(
          { subscription: stored.id, stored: stored.status, storedAt: stored.state_at, incoming, at: observation.at },
          'a Stripe event older than the subscription state it would replace was ignored',
        );
      }
      await tx.query(
        `UPDATE subscriptions SET user_id = $2, customer_id = $3, status = $4, price_id = $5, current_period_start = $6,
                current_period_end = $7, cancel_at_period_end = $8, state_at = $9, updated_at = now()
         WHERE id = $1`,
        applies
          ? [
              stored.id,
              userId ?? null,
              customerId,
              incoming,
              observation.priceId ?? stored.price_id,
              toDate(observation.periodStart) ?? stored.current_period_start,
              toDate(observation.periodEnd) ?? stored.current_period_end,
              observation.cancelAtPeriodEnd ?? stored.cancel_at_period_end,
              Math.max(stored.state_at, observation.at),
            ]
          : [
              stored.id,
              userId ?? null,
              customerId,
              stored.status,
              stored.price_id,
              stored.current_period_start,
              stored.current_period_end,
              stored.cancel_at_period_end,
              stored.state_at,
            ],
      );
      return userId;
    },

    /**
     * Links a Stripe customer to a user (checkout completion), and with it every subscription of that
     * customer that arrived before anyone knew whose it was. Answers false when the user does not exist.
     */
    async linkCustomer(tx: Queryable, userId: string, customerId: string): Promise<boolean> {
      if (!(await existingUser(tx, userId))) return false;
      // Subscriptions before the user row: every path locks subscriptions first and the user last.
      await tx.query('UPDATE subscriptions SET user_id = $1 WHERE customer_id = $2 AND user_id IS NULL', [userId, customerId]);
      await tx.query('UPDATE users SET stripe_customer_id = COALESCE(stripe_customer_id, $2), updated_at = now() WHERE id = $1', [
        userId,
        customerId,
      ]);
      return true;
    },

    /**
     * Recomputes a user's plan and subscription status from their subscriptions: the newest one still
     * alive decides, else the newest one. Answers whether anything changed.
     */
    async settle(tx: Queryable, userId: string): Promise<boolean> {
      // Locked first, so that two events for the same user settle one after the other.
      const users = await tx.query<{ plan_id: string; subscription_status: string }>(
        'SELECT plan_id, subscription_status FROM users WHERE id = $1 FOR UPDATE',
        [userId],
      );
      const user = users[0];
      if (!user) return false;
      const subscriptions = await tx.query<Pick<SubscriptionRow, 'status' | 'price_id'>>(
        'SELECT status, price_id FROM subscriptions WHERE user_id = $1 ORDER BY state_at DESC, id DESC',
        [userId],
      );
      const current = subscriptions.find((subscription) => !FINAL.has(subscription.status)) ?? subscriptions[0];
      const status = current?.status ?? 'none';
      let plan = plans.defaultPlan;
      if (current && ENTITLED.has(current.status) && current.price_id) {
        const paid = plans.byPriceId(current.price_id);
        if (paid) plan = paid;
        else logger.warn({ userId, price: current.price_id }, 'a subscription has a Stripe price no plan has; the user gets the default plan');
      }
      if (plan.id === user.plan_id && status === user.subscription_status) return false;
      await tx.query('UPDATE users SET plan_id = $2, subscription_status = $3, updated_at = now() WHERE id = $1', [userId, plan.id, status]);
      logger.info({ userId, plan: plan.id, status, before: user }, 'plan changed');
      return true;
    },
  };
}

export type SubscriptionLedger = ReturnType<typeof createSubscriptionLedger>;
