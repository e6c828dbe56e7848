// Reads the Stripe events that move plans into observations of one subscription. Stripe's payloads follow
// the API version of the webhook endpoint, so fields are read where the current version puts them and
// where older ones did (an invoice's subscription, a subscription's billing period).
import type { Observation, SubscriptionRow, SubscriptionStatus } from './subscriptions.ts';
import { isSubscriptionStatus } from './subscriptions.ts';
import type { PlanBook } from './plans.ts';

type Obj = Record<string, unknown>;

export interface StripeEventLike {
  id: string;
  type: string;
  created: number;
  data: { object: unknown };
}

/** What an event asks of the ledger; `link` ties a customer to a user (checkout completion). */
export interface EventEffect {
  observation: Observation;
  link?: { userId: string; customerId: string };
}

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
const objOf = (value: unknown): Obj | undefined => (isObj(value) ? value : undefined);
const strOf = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const numOf = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
/** An id from a field that is either the id or the expanded object. */
const idOf = (value: unknown): string | undefined => strOf(value) ?? strOf(objOf(value)?.id);
const listOf = (value: unknown): Obj[] => {
  const data = objOf(value)?.data;
  return Array.isArray(data) ? data.filter(isObj) : [];
};

function fromCheckoutSession(session: Obj, at: number, plans: PlanBook): EventEffect | undefined {
  if (session.mode !== 'subscription') return undefined;
  const subscriptionId = idOf(session.subscription);
  if (!subscriptionId) return undefined;
  const metadata = objOf(session.metadata);
  const userId = strOf(session.client_reference_id) ?? strOf(metadata?.user_id);
  const customerId = idOf(session.customer);
  const planId = strOf(metadata?.plan_id);
  const paid = session.payment_status === 'paid' || session.payment_status === 'no_payment_required';
  return {
    observation: {
      subscriptionId,
      at,
      customerId,
      userId,
      status: paid ? 'active' : 'incomplete',
      priceId: planId ? plans.get(planId)?.stripePriceId : undefined,
    },
    ...(userId && customerId ? { link: { userId, customerId } } : {}),
  };
}

function fromSubscription(subscription: Obj, at: number, deleted: boolean): EventEffect | undefined {
  const subscriptionId = strOf(subscription.id);
  if (!subscriptionId || !isSubscriptionStatus(subscription.status)) return undefined;
  // A deleted subscription is over whatever the snapshot says.
  const status: SubscriptionStatus =
    deleted && subscription.status !== 'canceled' && subscription.status !== 'incomplete_expired' ? 'canceled' : subscription.status;
  const item = listOf(subscription.items)[0];
  return {
    observation: {
      subscriptionId,
      at,
      customerId: idOf(subscription.customer),
      userId: strOf(objOf(subscription.metadata)?.user_id),
      status,
      priceId: idOf(item?.price),
      periodStart: numOf(item?.current_period_start) ?? numOf(subscription.current_period_start),
      periodEnd: numOf(item?.current_period_end) ?? numOf(subscription.current_period_end),
      cancelAtPeriodEnd: typeof subscription.cancel_at_period_end === 'boolean' ? subscription.cancel_at_period_end : undefined,
    },
  };
}

function fromInvoice(invoice: Obj, at: number, paid: boolean): EventEffect | undefined {
  const details = objOf(objOf(invoice.parent)?.subscription_details);
  const lines = listOf(invoice.lines);
  const subscriptionId = idOf(details?.subscription) ?? idOf(invoice.subscription) ?? lines.map((line) => idOf(line.subscription)).find(Boolean);
  // An invoice outside a subscription does not move a plan.
  if (!subscriptionId) return undefined;
  const line = lines.find((candidate) => idOf(candidate.subscription) === subscriptionId || objOf(candidate.parent)?.type === 'subscription_item_details') ?? lines[0];
  const period = objOf(line?.period);
  const priceId =
    idOf(objOf(objOf(line?.pricing)?.price_details)?.price) ?? idOf(line?.price) ?? idOf(line?.plan);
  const amountPaid = numOf(invoice.amount_paid) ?? 0;
  const creating = invoice.billing_reason === 'subscription_create';
  const status = paid
    ? (stored: SubscriptionRow): SubscriptionStatus => (stored.status === 'trialing' && amountPaid === 0 ? 'trialing' : 'active')
    : (stored: SubscriptionRow, isNew: boolean): SubscriptionStatus =>
        // A first payment that fails leaves a new subscription incomplete; a renewal that fails is past due.
        stored.status === 'incomplete' && (creating || !isNew) ? 'incomplete' : 'past_due';
  return {
    observation: {
      subscriptionId,
      at,
      customerId: idOf(invoice.customer),
      userId: strOf(objOf(details?.metadata)?.user_id),
      status,
      priceId,
      periodStart: numOf(period?.start),
      periodEnd: numOf(period?.end),
    },
  };
}

/** The effect of an event, or undefined for events that do not move plans. */
export function effectOf(event: StripeEventLike, plans: PlanBook): EventEffect | undefined {
  const object = objOf(event.data.object);
  if (!object) return undefined;
  switch (event.type) {
    case 'checkout.session.completed':
      return fromCheckoutSession(object, event.created, plans);
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
      return fromSubscription(object, event.created, false);
    case 'customer.subscription.deleted':
      return fromSubscription(object, event.created, true);
    case 'invoice.paid':
      return fromInvoice(object, event.created, true);
    case 'invoice.payment_failed':
      return fromInvoice(object, event.created, false);
    default:
      return undefined;
  }
}
