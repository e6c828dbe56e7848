// Plans from the built-in set or PLANS_FILE, Stripe prices from the file or the environment, and the
// configuration errors an operator sees for a bad file or half a Stripe setup.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';
import { createPlanBook, DEFAULT_PLANS, loadPlans, PlanError } from './plans.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'oaa-plans-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function plansFile(yaml: string): string {
  const file = path.join(dir, `plans-${++files}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

const LIMITS = `
      requests_per_minute: 10
      tokens_per_month: 1000
      runs_per_day: 5
      agents: 1
      teams: 1
      knowledge_documents: 3
      knowledge_bytes: null`;

describe('plans', () => {
  it('defaults to free, pro and enterprise, with free the default and no prices without configuration', () => {
    const plans = loadPlans({});
    expect(plans.plans.map((plan) => plan.id)).toEqual(['free', 'pro', 'enterprise']);
    expect(plans.defaultPlanId).toBe('free');
    expect(plans.plans.every((plan) => plan.stripePriceId === undefined)).toBe(true);
    expect(plans.plans.find((plan) => plan.id === 'enterprise')!.limits.tokens_per_month).toBeNull();
  });

  it('takes Stripe prices from STRIPE_PRICE_<PLAN> and finds plans by price', () => {
    const book = createPlanBook(loadPlans({ STRIPE_PRICE_PRO: 'price_pro', STRIPE_PRICE_ENTERPRISE: 'price_ent' }));
    expect(book.byPriceId('price_pro')?.id).toBe('pro');
    expect(book.byPriceId('price_ent')?.id).toBe('enterprise');
    expect(book.byPriceId('price_other')).toBeUndefined();
    expect(book.toWire(book.get('pro')!, true)).toMatchObject({ id: 'pro', object: 'plan', purchasable: true, is_default: false });
    // Without billing nothing can be bought, price or not.
    expect(book.toWire(book.get('pro')!, false).purchasable).toBe(false);
    expect(book.toWire(book.defaultPlan, true)).toMatchObject({ id: 'free', is_default: true, purchasable: false, price: null });
  });

  it('reads PLANS_FILE with its own default plan, prices and limits', () => {
    const file = plansFile(`
default_plan: hobby
plans:
  - id: hobby
    name: Hobby
    limits:${LIMITS}
  - id: team-plus
    name: Team Plus
    description: Bigger.
    price: { amount: 4900, currency: eur, interval: year }
    stripe_price_id: price_file
    limits:${LIMITS}
`);
    const plans = loadPlans({ PLANS_FILE: file });
    expect(plans.defaultPlanId).toBe('hobby');
    expect(plans.plans[1]).toEqual({
      id: 'team-plus',
      name: 'Team Plus',
      description: 'Bigger.',
      price: { amount: 4900, currency: 'eur', interval: 'year' },
      stripePriceId: 'price_file',
      limits: {
        requests_per_minute: 10,
        tokens_per_month: 1000,
        runs_per_day: 5,
        agents: 1,
        teams: 1,
        knowledge_documents: 3,
        knowledge_bytes: null,
      },
    });
    // The environment wins over the file, with `-` written as `_`.
    expect(loadPlans({ PLANS_FILE: file, STRIPE_PRICE_TEAM_PLUS: 'price_env' }).plans[1]!.stripePriceId).toBe('price_env');
  });

  it.each([
    ['a missing limit', `plans:\n  - id: a\n    limits: { requests_per_minute: 1 }\n`, /plans\[0\]\.limits\.tokens_per_month: is missing/],
    ['a negative limit', `plans:\n  - id: a\n    limits:${LIMITS.replace('agents: 1', 'agents: -1')}\n`, /plans\[0\]\.limits\.agents: must be a whole number/],
    ['an unknown setting', `plans:\n  - id: a\n    limit: {}\n`, /plans\[0\]\.limit: is not a known setting/],
    ['a duplicate id', `plans:\n  - id: a\n    limits:${LIMITS}\n  - id: a\n    limits:${LIMITS}\n`, /plan a: is defined twice/],
    ['an unknown default', `default_plan: b\nplans:\n  - id: a\n    limits:${LIMITS}\n`, /default_plan: names the unknown plan b/],
    ['a priced default plan', `plans:\n  - id: a\n    stripe_price_id: price_a\n    limits:${LIMITS}\n`, /default plan.*cannot have a Stripe price/],
    ['a bad currency', `plans:\n  - id: a\n    price: { amount: 1, currency: USD, interval: month }\n    limits:${LIMITS}\n`, /price\.currency/],
    ['no plans', `plans: []\n`, /plans: must list at least one plan/],
  ])('rejects %s with a message that says where', (_what, yaml, message) => {
    expect(() => loadPlans({ PLANS_FILE: plansFile(yaml) })).toThrow(message);
  });

  it('rejects two plans on one price, an unreadable file and a price for no plan', () => {
    expect(() => loadPlans({ STRIPE_PRICE_PRO: 'price_x', STRIPE_PRICE_ENTERPRISE: 'price_x' })).toThrow(/price_x, which plan pro has too/);
    expect(() => loadPlans({ PLANS_FILE: path.join(dir, 'missing.yaml') })).toThrow(PlanError);
    expect(() => loadPlans({ STRIPE_PRICE_GOLD: 'price_gold' })).toThrow(/STRIPE_PRICE_GOLD: names no plan/);
  });

  it('surfaces plan and Stripe mistakes as ConfigError at start-up', () => {
    expect(() => loadConfig({ STRIPE_PRICE_GOLD: 'price_gold' })).toThrow(ConfigError);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x' })).toThrow(/STRIPE_WEBHOOK_SECRET must be set too/);
    expect(() => loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_x' })).toThrow(/STRIPE_SECRET_KEY must be set too/);
    expect(() => loadConfig({ STRIPE_API_BASE: 'ftp://127.0.0.1' })).toThrow(/STRIPE_API_BASE must be an http\(s\) origin/);
    expect(loadConfig({}).stripe).toBeUndefined();
    expect(
      loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x', STRIPE_API_BASE: 'http://127.0.0.1:12111' }).stripe,
    ).toEqual({ secretKey: 'sk_test_x', webhookSecret: 'whsec_x', apiBase: { protocol: 'http', host: '127.0.0.1', port: 12111 }, timeoutMs: 8000 });
    expect(loadConfig({}).plans).toEqual(DEFAULT_PLANS);
  });
});
