// Stripe billing end to end: the SDK against a loopback fake of Stripe's API for Checkout and the portal,
// and signed webhook events (the SDK's test helper) for upgrades, renewals, failed payments, cancels,
// duplicates, out-of-order delivery and forged or replayed deliveries. Without Stripe, all of it refuses.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { availableEngines } from '../testing/database.ts';
import {
  completedCheckoutSession,
  invoiceObject,
  signStripePayload,
  startFakeStripe,
  stripeEvent,
  subscriptionObject,
  type FakeStripe,
  type StripeTestEvent,
} from '../testing/fake-stripe.ts';

const APP = 'https://app.example.com';
const DAY = 24 * 3600;

describe.each(await availableEngines())('billing with Stripe on %s', (engine) => {
  let fake: FakeStripe;
  let server: TestServer;
  let now = Date.UTC(2026, 10, 15, 12);
  const seconds = () => Math.floor(now / 1000);

  beforeAll(async () => {
    fake = await startFakeStripe({ prices: ['price_pro', 'price_ent'] });
    server = await startTestServer({
      engine,
      clock: () => now,
      env: { ...fake.env, STRIPE_PRICE_PRO: 'price_pro', STRIPE_PRICE_ENTERPRISE: 'price_ent', ALLOWED_REDIRECT_ORIGINS: APP },
    });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  async function deliver(event: StripeTestEvent, options: { timestamp?: number; signature?: string | null; body?: string } = {}) {
    const payload = JSON.stringify(event);
    const signature = options.signature === undefined ? signStripePayload(payload, fake.webhookSecret, options.timestamp ?? seconds()) : options.signature;
    const response = await fetch(`${server.url}/v1/stripe/webhook`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(signature === null ? {} : { 'Stripe-Signature': signature }) },
      body: options.body ?? payload,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> & { error?: { code: string; message: string } } };
  }

  async function account(user: TestUser) {
    const { data } = await user.client.GET('/v1/account');
    return { plan: data!.plan_id, status: data!.subscription_status };
  }

  const checkoutBody = (plan_id = 'pro') => ({ plan_id, success_url: `${APP}/billing/success`, cancel_url: `${APP}/billing` });

  /** Checkout through the API, then the events Stripe sends when it is paid, in Stripe's usual order. */
  async function subscribe(user: TestUser, at: number) {
    const { data } = await user.client.POST('/v1/billing/checkout', { body: checkoutBody() });
    const session = fake.checkoutSessions.get(data!.id)!;
    const subscription = `sub_${randomBytes(8).toString('hex')}`;
    const customer = session.customer!;
    const shape = { id: subscription, customer, price: 'price_pro', periodStart: at, periodEnd: at + 30 * DAY, metadata: { user_id: user.userId, plan_id: 'pro' } };
    expect((await deliver(stripeEvent('checkout.session.completed', completedCheckoutSession(session, subscription), { created: at }))).status).toBe(200);
    expect((await deliver(stripeEvent('customer.subscription.created', subscriptionObject({ ...shape, status: 'active' }), { created: at }))).status).toBe(200);
    const invoice = invoiceObject({ customer, subscription, price: 'price_pro', periodStart: at, periodEnd: at + 30 * DAY, status: 'paid', amountPaid: 2000, billingReason: 'subscription_create' });
    expect((await deliver(stripeEvent('invoice.paid', invoice, { created: at }))).status).toBe(200);
    return { subscription, customer, shape };
  }

  it('lists the plans, the paid ones purchasable', async () => {
    const user = await server.signUp();
    const { data } = await user.client.GET('/v1/billing/plans');
    expect(data?.data.map((plan) => [plan.id, plan.purchasable, plan.is_default])).toEqual([
      ['free', false, true],
      ['pro', true, false],
      ['enterprise', true, false],
    ]);
  });

  it('creates one Stripe customer per user and a subscription Checkout Session for the plan price', async () => {
    const user = await server.signUp();
    const before = fake.requests.length;
    const first = await user.client.POST('/v1/billing/checkout', { body: checkoutBody() });
    expect(first.response.status).toBe(201);
    expect(first.data).toEqual({ object: 'checkout_session', id: expect.stringMatching(/^cs_test_/), url: expect.stringMatching(/^https:\/\/checkout\.stripe\.com\//) });
    const second = await user.client.POST('/v1/billing/checkout', { body: checkoutBody('enterprise') });
    expect(second.response.status).toBe(201);

    const sent = fake.requests.slice(before);
    expect(sent.map((request) => `${request.method} ${request.path}`)).toEqual(['POST /v1/customers', 'POST /v1/checkout/sessions', 'POST /v1/checkout/sessions']);
    expect(sent[0]!.headers['idempotency-key']).toBe(`oaa-customer-${user.userId}`);
    expect(sent[0]!.form).toEqual({ email: user.email, metadata: { user_id: user.userId } });
    const customer = [...fake.customers.values()].find((c) => c.metadata.user_id === user.userId)!.id;
    expect(sent[1]!.form).toEqual({
      mode: 'subscription',
      customer,
      client_reference_id: user.userId,
      line_items: [{ price: 'price_pro', quantity: '1' }],
      success_url: `${APP}/billing/success`,
      cancel_url: `${APP}/billing`,
      metadata: { user_id: user.userId, plan_id: 'pro' },
      subscription_data: { metadata: { user_id: user.userId, plan_id: 'pro' } },
    });
    expect(sent[2]!.form).toMatchObject({ customer, line_items: [{ price: 'price_ent' }] });
  });

  it('refuses a plan that is unknown or not for sale, a foreign redirect, and reports Stripe failing', async () => {
    const user = await server.signUp();
    const unknown = await user.client.POST('/v1/billing/checkout', { body: checkoutBody('gold') });
    expect([unknown.response.status, unknown.error?.error.code]).toEqual([404, 'not_found']);
    const free = await user.client.POST('/v1/billing/checkout', { body: checkoutBody('free') });
    expect([free.response.status, free.error?.error.details?.[0]?.path]).toEqual([400, '/body/plan_id']);
    const foreign = await user.client.POST('/v1/billing/checkout', { body: { ...checkoutBody(), success_url: 'https://evil.example/phish' } });
    expect([foreign.response.status, foreign.error?.error.details?.[0]?.path]).toEqual([400, '/body/success_url']);

    fake.failNext(400, { type: 'invalid_request_error', message: 'No such price', code: 'resource_missing' });
    const failed = await user.client.POST('/v1/billing/checkout', { body: checkoutBody() });
    expect(failed.response.status).toBe(502);
    expect(failed.error?.error.code).toBe('upstream_error');
    expect(failed.error?.error.message).not.toContain(fake.secretKey);
  });

  it('opens the customer portal only for a Stripe customer', async () => {
    const user = await server.signUp();
    const none = await user.client.POST('/v1/billing/portal', { body: {} });
    expect([none.response.status, none.error?.error.code]).toEqual([404, 'not_found']);

    await user.client.POST('/v1/billing/checkout', { body: checkoutBody() });
    const portal = await user.client.POST('/v1/billing/portal', { body: { return_url: `${APP}/settings` } });
    expect(portal.response.status).toBe(201);
    expect(portal.data).toEqual({ object: 'portal_session', url: expect.stringMatching(/^https:\/\/billing\.stripe\.com\//) });
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe('/v1/billing_portal/sessions');
    expect(sent.form).toEqual({ customer: expect.stringMatching(/^cus_/), return_url: `${APP}/settings` });

    const defaulted = await user.client.POST('/v1/billing/portal');
    expect(defaulted.response.status).toBe(201);
    expect(fake.requests.at(-1)!.form.return_url).toBe(server.url);
    const foreign = await user.client.POST('/v1/billing/portal', { body: { return_url: 'https://evil.example/' } });
    expect(foreign.response.status).toBe(400);
  });

  it('upgrades on payment, applies the new limits at once, and sends a subscriber to the portal instead of a second checkout', async () => {
    const user = await server.signUp();
    // Reads (and caches) the free plan first, so that the webhook must drop the cached plan.
    expect((await user.client.GET('/v1/account/usage')).response.headers.get('ratelimit-policy')).toBe('"requests";q=60;w=60');
    await subscribe(user, seconds());
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });
    const usage = await user.client.GET('/v1/account/usage');
    expect(usage.data?.plan_id).toBe('pro');
    expect(usage.response.headers.get('ratelimit-policy')).toBe('"requests";q=600;w=60');
    expect(usage.data?.limits.find((limit) => limit.metric === 'tokens_per_month')?.limit).toBe(5_000_000);

    const again = await user.client.POST('/v1/billing/checkout', { body: checkoutBody('enterprise') });
    expect([again.response.status, again.error?.error.code]).toEqual([409, 'conflict']);
  });

  it('renews, goes past due on a failed payment keeping the plan, recovers, and falls back to the default plan on cancel', async () => {
    const user = await server.signUp();
    const start = seconds();
    const { subscription, customer, shape } = await subscribe(user, start);
    const periodEnd = async () =>
      (await server.services.db.query<{ current_period_end: Date }>('SELECT current_period_end FROM subscriptions WHERE id = $1', [subscription]))[0]!.current_period_end;
    const renewal = (status: 'paid' | 'open', at: number) =>
      invoiceObject({ customer, subscription, price: 'price_pro', periodStart: at, periodEnd: at + 30 * DAY, status, amountPaid: status === 'paid' ? 2000 : 0, billingReason: 'subscription_cycle' });

    const renewed = start + 30 * DAY;
    expect((await deliver(stripeEvent('invoice.paid', renewal('paid', renewed), { created: renewed + 10 }))).body).toEqual({ received: true, duplicate: false });
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });
    expect((await periodEnd()).getTime()).toBe((renewed + 30 * DAY) * 1000);

    const failedAt = renewed + 30 * DAY;
    await deliver(stripeEvent('invoice.payment_failed', renewal('open', failedAt), { created: failedAt + 10 }));
    expect(await account(user)).toEqual({ plan: 'pro', status: 'past_due' });
    await deliver(stripeEvent('invoice.paid', renewal('paid', failedAt), { created: failedAt + 3 * DAY }));
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });

    const canceledAt = failedAt + 10 * DAY;
    const canceled = subscriptionObject({ ...shape, status: 'canceled', canceledAt });
    await deliver(stripeEvent('customer.subscription.deleted', canceled, { created: canceledAt }));
    expect(await account(user)).toEqual({ plan: 'free', status: 'canceled' });
    // A new subscription is a new checkout now.
    expect((await user.client.POST('/v1/billing/checkout', { body: checkoutBody() })).response.status).toBe(201);
  });

  it('processes each event once: a redelivery answers duplicate and changes nothing', async () => {
    const user = await server.signUp();
    const start = seconds();
    const { customer, subscription } = await subscribe(user, start);
    const failed = stripeEvent(
      'invoice.payment_failed',
      invoiceObject({ customer, subscription, price: 'price_pro', periodStart: start, periodEnd: start + 30 * DAY, status: 'open', amountPaid: 0, billingReason: 'subscription_cycle' }),
      { created: start + 100 },
    );
    expect((await deliver(failed)).body).toEqual({ received: true, duplicate: false });
    const paid = stripeEvent(
      'invoice.paid',
      invoiceObject({ customer, subscription, price: 'price_pro', periodStart: start, periodEnd: start + 30 * DAY, status: 'paid', amountPaid: 2000, billingReason: 'subscription_cycle' }),
      { created: start + 200 },
    );
    await deliver(paid);
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });
    // Stripe retries with a fresh signature; the event id was seen, so nothing moves.
    expect((await deliver(failed, { timestamp: seconds() + 1 })).body).toEqual({ received: true, duplicate: true });
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });
    const stored = await server.services.db.query('SELECT id FROM stripe_events WHERE id = $1', [failed.id]);
    expect(stored).toHaveLength(1);
  });

  it('decides by the subscription state, not arrival order', async () => {
    const user = await server.signUp();
    const start = seconds();
    const { shape } = await subscribe(user, start);
    const laterPastDue = stripeEvent('customer.subscription.updated', subscriptionObject({ ...shape, status: 'past_due' }), { created: start + 500 });
    const earlierActive = stripeEvent('customer.subscription.updated', subscriptionObject({ ...shape, status: 'active' }), { created: start + 400 });
    await deliver(laterPastDue);
    await deliver(earlierActive);
    expect(await account(user)).toEqual({ plan: 'pro', status: 'past_due' });

    // An update older than the cancellation arrives after it, even within the same second: canceled is final.
    const deleted = stripeEvent('customer.subscription.deleted', subscriptionObject({ ...shape, status: 'canceled', canceledAt: start + 900 }), { created: start + 900 });
    const staleUpdate = stripeEvent('customer.subscription.updated', subscriptionObject({ ...shape, status: 'active' }), { created: start + 900 });
    await deliver(deleted);
    expect((await deliver(staleUpdate)).body).toEqual({ received: true, duplicate: false });
    expect(await account(user)).toEqual({ plan: 'free', status: 'canceled' });
  });

  it('applies subscription events that arrive before the checkout completion once it links the customer', async () => {
    const user = await server.signUp();
    const { data } = await user.client.POST('/v1/billing/checkout', { body: checkoutBody() });
    const session = fake.checkoutSessions.get(data!.id)!;
    const at = seconds();
    // No metadata and a customer no user row holds yet (the checkout flow stores it, so drop it here).
    await server.services.db.query('UPDATE users SET stripe_customer_id = NULL WHERE id = $1', [user.userId]);
    const shape = { id: `sub_${randomBytes(8).toString('hex')}`, customer: session.customer!, price: 'price_ent', periodStart: at, periodEnd: at + 30 * DAY };
    await deliver(stripeEvent('customer.subscription.created', subscriptionObject({ ...shape, status: 'active' }), { created: at + 1 }));
    expect(await account(user)).toEqual({ plan: 'free', status: 'none' });
    await deliver(stripeEvent('checkout.session.completed', completedCheckoutSession(session, shape.id), { created: at }));
    // The completion is older than the subscription's own state, so the subscription's price decides.
    expect(await account(user)).toEqual({ plan: 'enterprise', status: 'active' });
    const linked = await server.services.db.query<{ stripe_customer_id: string }>('SELECT stripe_customer_id FROM users WHERE id = $1', [user.userId]);
    expect(linked[0]!.stripe_customer_id).toBe(session.customer);
  });

  it('refuses tampered, unsigned, stale, future-dated and replayed deliveries with 400, changing nothing', async () => {
    const user = await server.signUp();
    const start = seconds();
    const { shape } = await subscribe(user, start);
    const upgrade = stripeEvent('customer.subscription.updated', subscriptionObject({ ...shape, price: 'price_ent', status: 'active' }), { created: start + 50 });
    const payload = JSON.stringify(upgrade);
    const signature = signStripePayload(payload, fake.webhookSecret, seconds());

    const tampered = await deliver(upgrade, { signature, body: payload.replace('price_ent', 'price_pro') });
    expect([tampered.status, tampered.body.error?.code]).toEqual([400, 'invalid_request']);
    const unsigned = await deliver(upgrade, { signature: null });
    expect(unsigned.status).toBe(400);
    const wrongSecret = await deliver(upgrade, { signature: signStripePayload(payload, 'whsec_not_ours', seconds()) });
    expect(wrongSecret.status).toBe(400);
    const stale = await deliver(upgrade, { timestamp: seconds() - 301 });
    expect([stale.status, stale.body.error?.message]).toEqual([400, expect.stringContaining('tolerance')]);
    const future = await deliver(upgrade, { timestamp: seconds() + 301 });
    expect([future.status, future.body.error?.message]).toEqual([400, expect.stringContaining('future')]);
    expect(await account(user)).toEqual({ plan: 'pro', status: 'active' });
    expect(await server.services.db.query('SELECT id FROM stripe_events WHERE id = $1', [upgrade.id])).toEqual([]);

    // The genuine delivery goes through once; the same signed request again is a replay.
    expect((await deliver(upgrade, { signature })).body).toEqual({ received: true, duplicate: false });
    expect(await account(user)).toEqual({ plan: 'enterprise', status: 'active' });
    const replay = await deliver(upgrade, { signature });
    expect([replay.status, replay.body.error?.message]).toEqual([400, expect.stringContaining('replay')]);

    // Remembered deliveries are dropped once their signature is too old to pass anyway.
    now += 301_000;
    try {
      await deliver(stripeEvent('customer.created', { id: 'cus_x', object: 'customer' }, { created: seconds() }));
      expect(await server.services.db.query('SELECT digest FROM stripe_deliveries WHERE expires_at < $1', [new Date(now)])).toEqual([]);
    } finally {
      now -= 301_000;
    }
  });

  it('acknowledges and ignores events it does not handle', async () => {
    const user = await server.signUp();
    const event = stripeEvent('customer.updated', { id: 'cus_y', object: 'customer', metadata: { user_id: user.userId } }, { created: seconds() });
    expect(await deliver(event)).toEqual({ status: 200, body: { received: true, duplicate: false } });
    expect(await account(user)).toEqual({ plan: 'free', status: 'none' });
    expect((await deliver(event, { timestamp: seconds() + 1 })).body).toEqual({ received: true, duplicate: true });
  });
});

describe('billing without Stripe', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('refuses checkout, the portal and the webhook with billing_disabled, and sells nothing', async () => {
    const user = await server.signUp();
    const checkout = await user.client.POST('/v1/billing/checkout', { body: { plan_id: 'pro', success_url: `${server.url}/ok`, cancel_url: `${server.url}/no` } });
    expect([checkout.response.status, checkout.error?.error.code]).toEqual([503, 'billing_disabled']);
    const portal = await user.client.POST('/v1/billing/portal');
    expect([portal.response.status, portal.error?.error.code]).toEqual([503, 'billing_disabled']);

    const event = JSON.stringify(stripeEvent('customer.subscription.updated', { id: 'sub_x', object: 'subscription', status: 'active' }, { created: 1 }));
    const webhook = await fetch(`${server.url}/v1/stripe/webhook`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Stripe-Signature': signStripePayload(event, 'whsec_anything', Math.floor(Date.now() / 1000)) },
      body: event,
    });
    expect(webhook.status).toBe(503);
    expect(((await webhook.json()) as { error: { code: string } }).error.code).toBe('billing_disabled');

    const plans = await user.client.GET('/v1/billing/plans');
    expect(plans.data?.data.every((plan) => !plan.purchasable)).toBe(true);
  });

  it('keeps everyone on the default plan whatever plan a user row holds', async () => {
    const user = await server.signUp();
    await server.services.db.query("UPDATE users SET plan_id = 'enterprise' WHERE id = $1", [user.userId]);
    const usage = await user.client.GET('/v1/account/usage');
    expect(usage.data?.plan_id).toBe('free');
    expect(usage.response.headers.get('ratelimit-policy')).toBe('"requests";q=60;w=60');
  });
});
