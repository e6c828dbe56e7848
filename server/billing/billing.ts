// Stripe: Checkout to buy a plan, the customer portal to manage it, and the webhook through which Stripe
// tells us what happened. Without STRIPE_SECRET_KEY all three refuse with `billing_disabled`.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type Stripe from 'stripe';
import type { StripeConfig } from '../config.ts';
import { ApiError, invalidRequest, notFound } from '../errors.ts';
import type { Db } from '../store/db.ts';
import type { PlanBook } from './plans.ts';
import { effectOf } from './stripe-events.ts';
import { createSubscriptionLedger } from './subscriptions.ts';

/** How old a signature may be, and how long a delivery is remembered to catch its replay. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface BillingOptions {
  db: Db;
  plans: PlanBook;
  stripe: StripeConfig | undefined;
  publicUrl: string;
  /** Where success, cancel and return URLs may point (PUBLIC_URL's origin and ALLOWED_REDIRECT_ORIGINS). */
  isAllowedRedirect(url: string): boolean;
  clock: () => number;
  logger: Logger;
  /** Told after a webhook changed a user's plan or status, so that cached plans are dropped. */
  onPlanChange(userId: string): void;
}

export interface CheckoutRequest {
  plan_id: string;
  success_url: string;
  cancel_url: string;
}

/** Subscriptions that are still billed: a second checkout would charge twice, so those go to the portal. */
const BILLED = "('active', 'trialing', 'past_due', 'unpaid', 'paused')";

function billingDisabled(): ApiError {
  return new ApiError('billing_disabled', 'Billing is not configured on this server (STRIPE_SECRET_KEY is not set).');
}

/** The signature time Stripe's SDK verified: the last `t=` of the header, as the SDK reads it. */
function signedAt(header: string): number {
  let timestamp = -1;
  for (const item of header.split(',')) {
    const [key, value] = item.split('=');
    if (key === 't') timestamp = Number.parseInt(value ?? '', 10);
  }
  return timestamp;
}

export function createBilling(options: BillingOptions) {
  const { db, plans, logger, clock } = options;
  const config = options.stripe;
  // The SDK (about 35 MB resident) is loaded at the first billing request, not at start-up: most requests
  // never need it, and servers without Stripe never do.
  let client: Promise<Stripe> | undefined;
  let sdk: typeof Stripe | undefined;
  const clientOf = (stripeConfig: StripeConfig): Promise<Stripe> =>
    (client ??= import('stripe').then(({ default: StripeSdk }) => {
      sdk = StripeSdk;
      return new StripeSdk(stripeConfig.secretKey, {
        ...(stripeConfig.apiBase ?? {}),
        // Retries carry the SDK's idempotency keys, so a retried create never makes a second object. One
        // retry and a short deadline per attempt bound how long a hanging Stripe API holds a request:
        // checkout makes two calls, so at most four attempts (it was six of 20 s).
        maxNetworkRetries: 1,
        timeout: stripeConfig.timeoutMs,
        telemetry: false,
        appInfo: { name: 'open-agent-api' },
      });
    }));
  /** The SDK's own errors; only a loaded SDK makes them. */
  const isStripeError = (error: unknown): error is Stripe.errors.StripeError => sdk !== undefined && error instanceof sdk.errors.StripeError;
  const ledger = createSubscriptionLedger(plans, logger);

  async function stripeOf(): Promise<{ stripe: Stripe; webhookSecret: string }> {
    if (!config) throw billingDisabled();
    return { stripe: await clientOf(config), webhookSecret: config.webhookSecret };
  }

  function upstream(error: unknown, what: string): never {
    if (isStripeError(error)) {
      logger.error({ err: error, type: error.type, status: error.statusCode, stripeRequestId: error.requestId }, `Stripe failed to ${what}`);
      throw new ApiError('upstream_error', `Stripe failed to ${what}${error.requestId ? ` (request ${error.requestId})` : ''}; the server log has the details.`, {
        cause: error,
      });
    }
    throw error;
  }

  function checkRedirect(url: string, field: string): void {
    if (!options.isAllowedRedirect(url)) {
      throw invalidRequest(`${url} is not an allowed destination; allowed are PUBLIC_URL's origin and ALLOWED_REDIRECT_ORIGINS.`, field);
    }
  }

  async function userOf(userId: string) {
    const rows = await db.query<{ email: string; stripe_customer_id: string | null }>(
      'SELECT email, stripe_customer_id FROM users WHERE id = $1',
      [userId],
    );
    if (!rows[0]) throw new ApiError('unauthorized', 'The account behind this credential no longer exists.');
    return rows[0];
  }

  /** The user's Stripe customer, created on first use and kept on the user. */
  async function customerOf(stripe: Stripe, userId: string): Promise<string> {
    const user = await userOf(userId);
    if (user.stripe_customer_id) return user.stripe_customer_id;
    let customer: Stripe.Customer;
    try {
      // One key per user: two first checkouts at once get the same customer back from Stripe.
      customer = await stripe.customers.create({ email: user.email, metadata: { user_id: userId } }, { idempotencyKey: `oaa-customer-${userId}` });
    } catch (error) {
      upstream(error, 'create the customer');
    }
    const rows = await db.query<{ stripe_customer_id: string }>(
      'UPDATE users SET stripe_customer_id = COALESCE(stripe_customer_id, $2), updated_at = now() WHERE id = $1 RETURNING stripe_customer_id',
      [userId, customer.id],
    );
    return rows[0]?.stripe_customer_id ?? customer.id;
  }

  return {
    enabled: config !== undefined,

    async checkout(userId: string, request: CheckoutRequest): Promise<{ id: string; url: string }> {
      const { stripe } = await stripeOf();
      const plan = plans.get(request.plan_id);
      if (!plan) throw notFound('plan', request.plan_id);
      if (!plan.stripePriceId) {
        throw invalidRequest(`The ${plan.name} plan cannot be bought: it has no Stripe price.`, 'plan_id');
      }
      checkRedirect(request.success_url, 'success_url');
      checkRedirect(request.cancel_url, 'cancel_url');
      const billed = await db.query<{ id: string }>(`SELECT id FROM subscriptions WHERE user_id = $1 AND status IN ${BILLED} LIMIT 1`, [userId]);
      if (billed.length > 0) {
        throw new ApiError('conflict', 'You already have a subscription; change or cancel it in the customer portal (POST /v1/billing/portal).');
      }
      const customer = await customerOf(stripe, userId);
      const metadata = { user_id: userId, plan_id: plan.id };
      let session: Stripe.Checkout.Session;
      try {
        session = await stripe.checkout.sessions.create({
          mode: 'subscription',
          customer,
          client_reference_id: userId,
          line_items: [{ price: plan.stripePriceId, quantity: 1 }],
          success_url: request.success_url,
          cancel_url: request.cancel_url,
          metadata,
          subscription_data: { metadata },
        });
      } catch (error) {
        upstream(error, 'create the Checkout Session');
      }
      if (!session.url) throw new ApiError('upstream_error', 'Stripe created a Checkout Session without a URL.');
      return { id: session.id, url: session.url };
    },

    async portal(userId: string, returnUrl: string | undefined): Promise<{ url: string }> {
      const { stripe } = await stripeOf();
      if (returnUrl !== undefined) checkRedirect(returnUrl, 'return_url');
      const user = await userOf(userId);
      if (!user.stripe_customer_id) {
        throw new ApiError('not_found', 'You have no billing account yet; buy a plan first with POST /v1/billing/checkout.');
      }
      try {
        const session = await stripe.billingPortal.sessions.create({ customer: user.stripe_customer_id, return_url: returnUrl ?? options.publicUrl });
        return { url: session.url };
      } catch (error) {
        upstream(error, 'open the customer portal');
      }
    },

    /**
     * Verifies and applies one webhook delivery. A bad, missing, stale or replayed signature is a 400
     * and changes nothing; an event seen before answers `duplicate` and changes nothing.
     */
    async receive(rawBody: Buffer | undefined, signature: string | undefined): Promise<{ duplicate: boolean }> {
      const { stripe, webhookSecret } = await stripeOf();
      if (!rawBody || !signature) throw invalidRequest('A Stripe webhook needs the JSON body Stripe signed and its Stripe-Signature header.');
      const now = clock();
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret, SIGNATURE_TOLERANCE_SECONDS, undefined, now);
      } catch (error) {
        throw invalidRequest(`The Stripe-Signature does not verify: ${(error as Error).message}.`, '/headers/stripe-signature');
      }
      const signedTime = signedAt(signature);
      // The SDK bounds a signature's age only; one from the future would stay fresh for as long as it says.
      if (signedTime > Math.floor(now / 1000) + SIGNATURE_TOLERANCE_SECONDS) {
        throw invalidRequest('The Stripe-Signature is dated in the future.', '/headers/stripe-signature');
      }
      // A verified signature is a function of its time and the body, so those two name the delivery.
      const digest = createHash('sha256').update(`${signedTime}.`).update(rawBody).digest('hex');
      const changed: string[] = [];
      const duplicate = await db.transaction(async (tx) => {
        await tx.query('DELETE FROM stripe_deliveries WHERE expires_at < $1', [new Date(now)]);
        const fresh = await tx.query(
          'INSERT INTO stripe_deliveries (digest, expires_at) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING RETURNING digest',
          [digest, new Date((signedTime + SIGNATURE_TOLERANCE_SECONDS) * 1000)],
        );
        if (fresh.length === 0) throw invalidRequest('This signed delivery was received before: a replay.', '/headers/stripe-signature');
        const first = await tx.query('INSERT INTO stripe_events (id, type, created) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id', [
          event.id,
          event.type,
          event.created,
        ]);
        if (first.length === 0) return true;
        const effect = effectOf(event, plans);
        if (!effect) {
          logger.debug({ event: event.id, type: event.type }, 'a Stripe event that moves no plan was acknowledged');
          return false;
        }
        const users = new Set<string>();
        const owner = await ledger.observe(tx, effect.observation);
        if (owner) users.add(owner);
        if (effect.link && (await ledger.linkCustomer(tx, effect.link.userId, effect.link.customerId))) users.add(effect.link.userId);
        for (const userId of users) if (await ledger.settle(tx, userId)) changed.push(userId);
        return false;
      });
      for (const userId of changed) options.onPlanChange(userId);
      return { duplicate };
    },
  };
}

export type Billing = ReturnType<typeof createBilling>;
