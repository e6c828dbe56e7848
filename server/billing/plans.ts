// The plans users can be on: a built-in set (free / pro / enterprise) or PLANS_FILE (YAML), each with its
// limits (`null` = unlimited), a displayed price and, for paid plans, the Stripe price that sells it.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { components } from '../../generated/openapi.gen.ts';

export type PlanLimits = components['schemas']['PlanLimits'];
export type LimitMetric = keyof PlanLimits;
export type PlanPrice = NonNullable<components['schemas']['Plan']['price']>;
export type WirePlan = components['schemas']['Plan'];

export interface PlanSpec {
  id: string;
  name: string;
  description: string | null;
  limits: PlanLimits;
  /** What the plan costs, for display; Stripe's price is what is charged. */
  price: PlanPrice | null;
  stripePriceId: string | undefined;
}

export interface Plans {
  plans: PlanSpec[];
  /** Everyone's plan without a paying subscription, and everyone's when billing is off. */
  defaultPlanId: string;
}

export class PlanError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanError';
  }
}

export const LIMIT_METRICS: readonly LimitMetric[] = [
  'requests_per_minute',
  'tokens_per_month',
  'runs_per_day',
  'agents',
  'teams',
  'knowledge_documents',
  'knowledge_bytes',
];

const MiB = 1024 * 1024;

export const DEFAULT_PLANS: Plans = {
  defaultPlanId: 'free',
  plans: [
    {
      id: 'free',
      name: 'Free',
      description: 'For trying things out.',
      price: null,
      stripePriceId: undefined,
      limits: {
        requests_per_minute: 60,
        tokens_per_month: 100_000,
        runs_per_day: 200,
        agents: 5,
        teams: 2,
        knowledge_documents: 50,
        knowledge_bytes: 10 * MiB,
      },
    },
    {
      id: 'pro',
      name: 'Pro',
      description: 'For individuals and small teams shipping agents.',
      price: { amount: 2000, currency: 'usd', interval: 'month' },
      stripePriceId: undefined,
      limits: {
        requests_per_minute: 600,
        tokens_per_month: 5_000_000,
        runs_per_day: 5_000,
        agents: 100,
        teams: 50,
        knowledge_documents: 5_000,
        knowledge_bytes: 1024 * MiB,
      },
    },
    {
      id: 'enterprise',
      name: 'Enterprise',
      description: 'For organisations running agents in production.',
      price: { amount: 20000, currency: 'usd', interval: 'month' },
      stripePriceId: undefined,
      limits: {
        requests_per_minute: 6_000,
        tokens_per_month: null,
        runs_per_day: null,
        agents: null,
        teams: null,
        knowledge_documents: null,
        knowledge_bytes: null,
      },
    },
  ],
};

type Env = Readonly<Record<string, string | undefined>>;

const PLAN_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function fail(where: string, message: string): never {
  throw new PlanError(`${where}: ${message}`);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rejectUnknownKeys(entry: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(entry)) {
    if (!allowed.includes(key)) fail(`${where}.${key}`, `is not a known setting (known: ${allowed.join(', ')})`);
  }
}

function readLimits(raw: unknown, where: string): PlanLimits {
  if (!isMapping(raw)) fail(where, `must be a mapping of ${LIMIT_METRICS.join(', ')}`);
  rejectUnknownKeys(raw, LIMIT_METRICS, where);
  const limits = {} as Record<LimitMetric, number | null>;
  for (const metric of LIMIT_METRICS) {
    if (!(metric in raw)) fail(`${where}.${metric}`, 'is missing (use null for unlimited)');
    const value = raw[metric];
    if (value !== null && !(Number.isSafeInteger(value) && (value as number) >= 0)) {
      fail(`${where}.${metric}`, `must be a whole number of at least 0, or null for unlimited; got ${JSON.stringify(value)}`);
    }
    limits[metric] = value as number | null;
  }
  if (limits.requests_per_minute === 0) fail(`${where}.requests_per_minute`, 'must be at least 1 (or null for unlimited)');
  return limits;
}

function readPrice(raw: unknown, where: string): PlanPrice | null {
  if (raw === undefined || raw === null) return null;
  if (!isMapping(raw)) fail(where, 'must be a mapping with amount, currency and interval');
  rejectUnknownKeys(raw, ['amount', 'currency', 'interval'], where);
  if (!Number.isSafeInteger(raw.amount) || (raw.amount as number) < 0) fail(`${where}.amount`, "must be a whole number in the currency's minor unit");
  if (typeof raw.currency !== 'string' || !/^[a-z]{3}$/.test(raw.currency)) fail(`${where}.currency`, 'must be a lower-case ISO 4217 code such as usd');
  if (raw.interval !== 'month' && raw.interval !== 'year') fail(`${where}.interval`, 'must be month or year');
  return { amount: raw.amount as number, currency: raw.currency, interval: raw.interval };
}

function readOptionalString(raw: unknown, where: string): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string' || raw.trim() === '') fail(where, 'must be a non-empty string');
  return raw.trim();
}

function readPlan(raw: unknown, index: number): PlanSpec {
  const where = `plans[${index}]`;
  if (!isMapping(raw)) fail(where, 'must be a mapping');
  rejectUnknownKeys(raw, ['id', 'name', 'description', 'limits', 'price', 'stripe_price_id'], where);
  if (typeof raw.id !== 'string' || !PLAN_ID.test(raw.id)) fail(`${where}.id`, 'must be lower-case letters, digits, - or _ (up to 64)');
  return {
    id: raw.id,
    name: readOptionalString(raw.name, `${where}.name`) ?? raw.id,
    description: readOptionalString(raw.description, `${where}.description`) ?? null,
    limits: readLimits(raw.limits, `${where}.limits`),
    price: readPrice(raw.price, `${where}.price`),
    stripePriceId: readOptionalString(raw.stripe_price_id, `${where}.stripe_price_id`),
  };
}

function readPlansFile(file: string): Plans {
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new PlanError(`PLANS_FILE ${file} cannot be read: ${(error as Error).message}`);
  }
  if (!isMapping(raw)) fail(`PLANS_FILE ${file}`, 'must be a mapping with `plans` (and optionally `default_plan`)');
  rejectUnknownKeys(raw, ['plans', 'default_plan'], 'PLANS_FILE');
  if (!Array.isArray(raw.plans) || raw.plans.length === 0) fail('plans', 'must list at least one plan');
  const plans = raw.plans.map(readPlan);
  const defaultPlanId = raw.default_plan === undefined ? plans[0]!.id : raw.default_plan;
  if (typeof defaultPlanId !== 'string') fail('default_plan', 'must be a plan id');
  return { plans, defaultPlanId };
}

/** `STRIPE_PRICE_<PLAN>` (the plan id upper-cased, `-` as `_`) sets or replaces a plan's Stripe price. */
function priceEnvName(planId: string): string {
  return `STRIPE_PRICE_${planId.toUpperCase().replaceAll('-', '_')}`;
}

function check(result: Plans, env: Env): Plans {
  const ids = new Set<string>();
  for (const plan of result.plans) {
    if (ids.has(plan.id)) fail(`plan ${plan.id}`, 'is defined twice');
    ids.add(plan.id);
  }
  if (!ids.has(result.defaultPlanId)) fail('default_plan', `names the unknown plan ${result.defaultPlanId}`);
  const envNames = new Map(result.plans.map((plan) => [priceEnvName(plan.id), plan.id]));
  for (const name of Object.keys(env)) {
    if (name.startsWith('STRIPE_PRICE_') && env[name]?.trim() && !envNames.has(name)) {
      fail(name, `names no plan; the plans are ${[...ids].join(', ')}`);
    }
  }
  const plans = result.plans.map((plan) => {
    const fromEnv = env[priceEnvName(plan.id)]?.trim();
    return fromEnv ? { ...plan, stripePriceId: fromEnv } : plan;
  });
  const byPrice = new Map<string, string>();
  for (const plan of plans) {
    if (!plan.stripePriceId) continue;
    if (plan.id === result.defaultPlanId) {
      fail(`plan ${plan.id}`, 'is the default plan, which everyone falls back to, so it cannot have a Stripe price');
    }
    const other = byPrice.get(plan.stripePriceId);
    if (other) fail(`plan ${plan.id}`, `has the Stripe price ${plan.stripePriceId}, which plan ${other} has too`);
    byPrice.set(plan.stripePriceId, plan.id);
  }
  return { plans, defaultPlanId: result.defaultPlanId };
}

/** The plans from PLANS_FILE when set, else the built-in set; prices from the file or STRIPE_PRICE_<PLAN>. */
export function loadPlans(env: Env): Plans {
  const file = env.PLANS_FILE?.trim();
  return check(file ? readPlansFile(file) : DEFAULT_PLANS, env);
}

/** Look-ups over the configured plans. */
export function createPlanBook(config: Plans) {
  const byId = new Map(config.plans.map((plan) => [plan.id, plan]));
  const byPrice = new Map(config.plans.filter((plan) => plan.stripePriceId).map((plan) => [plan.stripePriceId!, plan]));
  const defaultPlan = byId.get(config.defaultPlanId)!;
  return {
    all: config.plans,
    defaultPlan,
    get: (id: string): PlanSpec | undefined => byId.get(id),
    byPriceId: (priceId: string): PlanSpec | undefined => byPrice.get(priceId),
    toWire(plan: PlanSpec, billingEnabled: boolean): WirePlan {
      return {
        id: plan.id,
        object: 'plan',
        name: plan.name,
        description: plan.description,
        is_default: plan.id === defaultPlan.id,
        purchasable: billingEnabled && plan.stripePriceId !== undefined,
        price: plan.price,
        limits: plan.limits,
      };
    },
  };
}

export type PlanBook = ReturnType<typeof createPlanBook>;
