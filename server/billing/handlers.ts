// The billing operations (plans, Checkout, the portal, Stripe's webhook) and the usage report.
import type { components } from '../../generated/openapi.gen.ts';
import type { AppHandlers } from '../http/operations.ts';
import { utcMonth, type Quotas } from '../limits/quotas.ts';
import type { RequestLimits } from '../limits/request-limit.ts';
import type { UsageMeter } from '../usage/meter.ts';
import type { AccountPlans } from './account-plans.ts';
import type { Billing } from './billing.ts';
import type { PlanBook } from './plans.ts';

type UsageLimit = components['schemas']['UsageLimit'];

export interface BillingHandlerDeps {
  plans: PlanBook;
  accountPlans: AccountPlans;
  billing: Billing;
  quotas: Quotas;
  requestLimits: RequestLimits;
  usage: Pick<UsageMeter, 'byModel'>;
  clock: () => number;
}

export function billingHandlers(deps: BillingHandlerDeps) {
  return {
    async listPlans() {
      return {
        status: 200,
        body: {
          object: 'list',
          data: deps.plans.all.map((plan) => deps.plans.toWire(plan, deps.billing.enabled)),
          has_more: false,
          next_cursor: null,
        },
      };
    },

    async createCheckoutSession({ auth, body }) {
      const session = await deps.billing.checkout(auth.userId, body);
      return { status: 201, body: { object: 'checkout_session', id: session.id, url: session.url } };
    },

    async createPortalSession({ auth, body }) {
      const session = await deps.billing.portal(auth.userId, body?.return_url);
      return { status: 201, body: { object: 'portal_session', url: session.url } };
    },

    async receiveStripeEvent({ rawBody, headers }) {
      const { duplicate } = await deps.billing.receive(rawBody, headers['stripe-signature']);
      return { status: 200, body: { received: true, duplicate } };
    },

    async getAccountUsage({ auth }) {
      const plan = await deps.accountPlans.planOf(auth.userId);
      const now = deps.clock();
      const period = utcMonth(now);
      const [readings, requests, models] = await Promise.all([
        deps.quotas.read(auth.userId, plan),
        deps.requestLimits.peek(auth.userId, plan),
        deps.usage.byModel(auth.userId, period.start),
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
        status: 200,
        body: {
          object: 'usage',
          plan_id: plan.id,
          period: { start: period.start.toISOString(), end: period.end.toISOString() },
          limits,
          models,
        },
      };
    },
  } satisfies Partial<AppHandlers>;
}
