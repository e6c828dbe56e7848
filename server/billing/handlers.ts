// The billing operations: plans, Checkout, the portal and Stripe's webhook.
import type { AppHandlers } from '../http/operations.ts';
import type { Billing } from './billing.ts';
import type { PlanBook } from './plans.ts';

export interface BillingHandlerDeps {
  plans: PlanBook;
  billing: Billing;
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
  } satisfies Partial<AppHandlers>;
}
