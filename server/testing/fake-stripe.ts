// A stand-in for Stripe's API on loopback, for tests: a real HTTP server that takes the form-encoded
// requests the `stripe` SDK sends (point it there with STRIPE_API_BASE) and answers with objects and errors
// shaped as Stripe's, honouring idempotency keys and recording every request. Also builds the event
// payloads Stripe's webhooks carry (checkout sessions, subscriptions, invoices) and signs them with the
// SDK's own test helper.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export interface RecordedStripeRequest {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  /** The decoded form body, brackets expanded: `line_items[0][price]` → `{ line_items: [{ price }] }`. */
  form: Record<string, unknown>;
}

export interface StripeErrorBody {
  type: 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error';
  message: string;
  code?: string;
  param?: string;
}

export interface FakeStripeOptions {
  /** Price ids that exist; Checkout with any other answers Stripe's `resource_missing`. */
  prices?: string[];
  secretKey?: string;
  webhookSecret?: string;
}

export interface FakeCheckoutSession {
  id: string;
  object: 'checkout.session';
  mode: string;
  customer: string | null;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  success_url: string;
  cancel_url: string;
  url: string;
  status: 'open' | 'complete';
  payment_status: 'unpaid' | 'paid';
  subscription: string | null;
  created: number;
  expires_at: number;
  livemode: false;
  price: string;
}

export interface FakeStripe {
  /** The base for STRIPE_API_BASE, e.g. `http://127.0.0.1:41234`. */
  url: string;
  secretKey: string;
  webhookSecret: string;
  /** STRIPE_API_BASE, STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET for a server that uses this fake. */
  env: Record<string, string>;
  requests: RecordedStripeRequest[];
  customers: Map<string, { id: string; email: string | null; metadata: Record<string, string> }>;
  checkoutSessions: Map<string, FakeCheckoutSession>;
  /** Answers the next request with this error instead of handling it. */
  failNext(status: number, error: StripeErrorBody): void;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;

/** Expands `a[b][0][c]=v` pairs into nested objects, with all-numeric keys as arrays, as Stripe reads them. */
export function parseStripeForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.replace(/\]/g, '').split('[');
    let node = root;
    parts.forEach((part, index) => {
      if (index === parts.length - 1) {
        node[part] = value;
      } else {
        node[part] ??= {};
        node = node[part] as Record<string, unknown>;
      }
    });
  }
  const arrays = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, arrays(v)] as const);
    const numeric = entries.length > 0 && entries.every(([k], i) => k === String(i));
    return numeric ? entries.map(([, v]) => v) : Object.fromEntries(entries);
  };
  return arrays(root) as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': id('req'), ...headers });
  res.end(text);
}

function error(res: ServerResponse, status: number, body: StripeErrorBody): void {
  send(res, status, { error: body });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeStripe(options: FakeStripeOptions = {}): Promise<FakeStripe> {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(16).toString('hex')}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('hex')}`;
  const prices = new Set(options.prices ?? []);
  const requests: RecordedStripeRequest[] = [];
  const customers: FakeStripe['customers'] = new Map();
  const checkoutSessions: FakeStripe['checkoutSessions'] = new Map();
  const idempotent = new Map<string, { fingerprint: string; status: number; body: unknown }>();
  const failures: { status: number; error: StripeErrorBody }[] = [];
  const now = () => Math.floor(Date.now() / 1000);

  function handle(method: string, path: string, form: Record<string, unknown>): { status: number; body: unknown } {
    const metadata = (form.metadata ?? {}) as Record<string, string>;
    if (method === 'POST' && path === '/v1/customers') {
      const customer = { id: id('cus'), email: (form.email as string | undefined) ?? null, metadata };
      customers.set(customer.id, customer);
      return {
        status: 200,
        body: { ...customer, object: 'customer', created: now(), livemode: false, name: null, description: null, balance: 0, currency: null, delinquent: false },
      };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      const customer = form.customer as string | undefined;
      if (customer !== undefined && !customers.has(customer)) {
        return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'customer', message: `No such customer: '${customer}'` } } };
      }
      const items = (form.line_items ?? []) as { price?: string; quantity?: string }[];
      const price = items[0]?.price;
      if (!price || !prices.has(price)) {
        return {
          status: 400,
          body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'line_items[0][price]', message: `No such price: '${price}'` } },
        };
      }
      if (form.mode !== 'subscription' && form.mode !== 'payment' && form.mode !== 'setup') {
        return { status: 400, body: { error: { type: 'invalid_request_error', param: 'mode', message: 'Missing required param: mode.' } } };
      }
      const sessionId = `cs_test_${randomBytes(16).toString('hex')}`;
      const session: FakeCheckoutSession = {
        id: sessionId,
        object: 'checkout.session',
        mode: form.mode,
        customer: customer ?? null,
        client_reference_id: (form.client_reference_id as string | undefined) ?? null,
        metadata,
        success_url: form.success_url as string,
        cancel_url: form.cancel_url as string,
        url: `https://checkout.stripe.com/c/pay/${sessionId}`,
        status: 'open',
        payment_status: 'unpaid',
        subscription: null,
        created: now(),
        expires_at: now() + 24 * 3600,
        livemode: false,
        price,
      };
      checkoutSessions.set(sessionId, session);
      const { price: _price, ...wire } = session;
      return { status: 200, body: wire };
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      const customer = form.customer as string | undefined;
      if (!customer || !customers.has(customer)) {
        return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'customer', message: `No such customer: '${customer}'` } } };
      }
      return {
        status: 200,
        body: {
          id: id('bps'),
          object: 'billing_portal.session',
          configuration: id('bpc'),
          created: now(),
          customer,
          flow: null,
          livemode: false,
          locale: null,
          on_behalf_of: null,
          return_url: (form.return_url as string | undefined) ?? null,
          url: `https://billing.stripe.com/p/session/test_${randomBytes(12).toString('hex')}`,
        },
      };
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` } } };
  }

  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0]!;
    const form = parseStripeForm(text);
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    requests.push({ method, path, headers, form });
    if (req.headers.authorization !== `Bearer ${secretKey}`) {
      error(res, 401, { type: 'invalid_request_error', message: 'Invalid API Key provided.' });
      return;
    }
    const failure = failures.shift();
    if (failure) {
      error(res, failure.status, failure.error);
      return;
    }
    const key = headers['idempotency-key'];
    const fingerprint = `${method} ${path} ${text}`;
    const earlier = key ? idempotent.get(key) : undefined;
    if (earlier) {
      if (earlier.fingerprint !== fingerprint) {
        error(res, 400, {
          type: 'idempotency_error',
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
        });
        return;
      }
      send(res, earlier.status, earlier.body, { 'Idempotent-Replayed': 'true' });
      return;
    }
    const result = handle(method, path, form);
    if (key && result.status < 500) idempotent.set(key, { fingerprint, ...result });
    send(res, result.status, result.body, key ? { 'Idempotency-Key': key } : {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    secretKey,
    webhookSecret,
    env: { STRIPE_API_BASE: url, STRIPE_SECRET_KEY: secretKey, STRIPE_WEBHOOK_SECRET: webhookSecret },
    requests,
    customers,
    checkoutSessions,
    failNext(status, body) {
      failures.push({ status, error: body });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// Webhook events, shaped as Stripe sends them at the SDK's API version. Times are Unix seconds.

export interface StripeTestEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  data: { object: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
}

export function stripeEvent(type: string, object: Record<string, unknown>, options: { created: number; id?: string }): StripeTestEvent {
  return {
    id: options.id ?? id('evt'),
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: options.created,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

export interface SubscriptionShape {
  id: string;
  customer: string;
  status: string;
  price: string;
  periodStart: number;
  periodEnd: number;
  metadata?: Record<string, string>;
  cancelAtPeriodEnd?: boolean;
  canceledAt?: number | null;
}

export function subscriptionObject(shape: SubscriptionShape): Record<string, unknown> {
  return {
    id: shape.id,
    object: 'subscription',
    billing_cycle_anchor: shape.periodStart,
    cancel_at: null,
    cancel_at_period_end: shape.cancelAtPeriodEnd ?? false,
    canceled_at: shape.canceledAt ?? null,
    collection_method: 'charge_automatically',
    created: shape.periodStart,
    currency: 'usd',
    customer: shape.customer,
    ended_at: shape.status === 'canceled' ? (shape.canceledAt ?? shape.periodEnd) : null,
    items: {
      object: 'list',
      data: [
        {
          id: id('si'),
          object: 'subscription_item',
          current_period_start: shape.periodStart,
          current_period_end: shape.periodEnd,
          price: { id: shape.price, object: 'price', active: true, currency: 'usd', recurring: { interval: 'month', interval_count: 1 }, type: 'recurring', unit_amount: 2000 },
          quantity: 1,
          subscription: shape.id,
        },
      ],
      has_more: false,
      url: `/v1/subscription_items?subscription=${shape.id}`,
    },
    latest_invoice: null,
    livemode: false,
    metadata: shape.metadata ?? {},
    start_date: shape.periodStart,
    status: shape.status,
    trial_end: null,
    trial_start: null,
  };
}

export interface InvoiceShape {
  id?: string;
  customer: string;
  subscription: string;
  price: string;
  periodStart: number;
  periodEnd: number;
  status: 'paid' | 'open';
  amountPaid: number;
  billingReason: 'subscription_create' | 'subscription_cycle' | 'subscription_update';
  subscriptionMetadata?: Record<string, string>;
}

export function invoiceObject(shape: InvoiceShape): Record<string, unknown> {
  const invoiceId = shape.id ?? id('in');
  return {
    id: invoiceId,
    object: 'invoice',
    amount_due: 2000,
    amount_paid: shape.amountPaid,
    amount_remaining: 2000 - shape.amountPaid,
    attempt_count: 1,
    billing_reason: shape.billingReason,
    collection_method: 'charge_automatically',
    created: shape.periodStart,
    currency: 'usd',
    customer: shape.customer,
    lines: {
      object: 'list',
      data: [
        {
          id: id('il'),
          object: 'line_item',
          amount: 2000,
          currency: 'usd',
          invoice: invoiceId,
          parent: {
            type: 'subscription_item_details',
            subscription_item_details: { subscription: shape.subscription, subscription_item: id('si'), proration: false, invoice_item: null },
            invoice_item_details: null,
          },
          period: { start: shape.periodStart, end: shape.periodEnd },
          pricing: { type: 'price_details', price_details: { price: shape.price, product: id('prod') }, unit_amount_decimal: '2000' },
          quantity: 1,
        },
      ],
      has_more: false,
      url: `/v1/invoices/${invoiceId}/lines`,
    },
    livemode: false,
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { subscription: shape.subscription, metadata: shape.subscriptionMetadata ?? {} },
    },
    period_start: shape.periodStart,
    period_end: shape.periodEnd,
    status: shape.status,
  };
}

/** A Checkout Session the fake created, as `checkout.session.completed` carries it once paid. */
export function completedCheckoutSession(session: FakeCheckoutSession, subscriptionId: string): Record<string, unknown> {
  const { price: _price, ...wire } = session;
  return { ...wire, status: 'complete', payment_status: 'paid', subscription: subscriptionId, url: null };
}

/** A `Stripe-Signature` header for `payload`, from the SDK's own test helper. */
export function signStripePayload(payload: string, secret: string, timestampSeconds: number): string {
  return Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: timestampSeconds });
}
