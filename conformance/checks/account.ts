// The account, its usage, API keys from creation to revocation, sign-out, and billing.
import type { Check, Context, Schemas } from '../context.ts';
import { pageThrough } from './pagination.ts';

async function accountOf(t: Context, as: { bearer: string } | { apiKey: string } | 'primary') {
  return (await t.call('getAccount', { as, expect: 200 })).json as Schemas['Account'];
}

export const accountChecks: Check[] = [
  {
    name: 'account and usage',
    operations: ['getAccount', 'updateAccount', 'getAccountUsage'],
    async run(t) {
      const account = await accountOf(t, 'primary');
      const viaHeader = await t.call('getAccount', { as: { apiKey: t.client.options.primaryKey }, expect: 200, halt: false });
      t.check('getAccount', (viaHeader.json as Schemas['Account'] | undefined)?.id === account.id, 'the key sent as X-API-Key does not give the same account');

      const usage = (await t.call('getAccountUsage', { expect: 200 })).json as Schemas['AccountUsage'];
      t.check('getAccountUsage', usage.plan_id === account.plan_id, `usage is for plan ${usage.plan_id}, the account is on ${account.plan_id}`);

      const name = `Conformance ${t.nonce}`;
      const updated = (await t.call('updateAccount', { body: { name }, expect: 200 })).json as Schemas['Account'];
      t.check('updateAccount', updated.name === name, `PATCH /v1/account answered name ${JSON.stringify(updated.name)}, not ${JSON.stringify(name)}`);
      t.check('updateAccount', updated.id === account.id && updated.email === account.email, 'PATCH /v1/account changed the id or email');
      const restored = (await t.call('updateAccount', { body: { name: account.name }, expect: 200 })).json as Schemas['Account'];
      t.check('updateAccount', restored.name === account.name, 'the name could not be set back');
      await t.call('updateAccount', { body: {}, expect: 400, halt: false });
    },
  },
  {
    name: 'API keys',
    operations: ['createApiKey', 'listApiKeys', 'getApiKey', 'deleteApiKey', 'logOut'],
    async run(t) {
      const account = await accountOf(t, 'primary');
      const created = await t.createApiKey(`conformance ${t.nonce}`);
      t.require('createApiKey', typeof created.secret === 'string' && created.secret.length > 0, 'the new key has no secret');
      const owner = await t.call('getAccount', { as: { bearer: created.secret }, expect: 200, halt: false });
      t.check('createApiKey', (owner.json as Schemas['Account'] | undefined)?.id === account.id, 'the new key does not authenticate as its creator');

      const key = (await t.call('getApiKey', { params: { keyId: created.id }, expect: 200 })).json as Schemas['ApiKey'];
      t.check('getApiKey', key.id === created.id && !('secret' in key), 'GET /v1/api-keys/{keyId} answers another key or shows the secret');
      t.check('getApiKey', created.secret.startsWith(key.prefix), `the prefix ${key.prefix} does not start the secret`);
      const listed = await pageThrough(t, 'listApiKeys', {});
      t.check('listApiKeys', listed.ids.includes(created.id), 'the new key is not listed');

      // A session token cannot be had without a sign-in; with an API key the server must not sign anything out.
      const logout = await t.call('logOut', { as: { bearer: created.secret }, expect: [204, 400], halt: false });
      if (logout.status === 400) t.note('logOut', 'checked with an API key, which is refused with 400 as declared; signing out a session needs a sign-in');
      if (logout.status === 204) {
        const still = await t.call('getAccount', { as: { bearer: created.secret }, expect: [200, 401], halt: false });
        t.check('logOut', still.status === 200, 'POST /v1/auth/logout with an API key revoked the key; keys are revoked with DELETE /v1/api-keys/{keyId}');
      }

      await t.call('deleteApiKey', { params: { keyId: created.id }, expect: 204 });
      const revoked = await t.call('getAccount', { as: { bearer: created.secret }, expect: 401, halt: false });
      t.check('deleteApiKey', revoked.status === 401, `a revoked key still authenticates (${revoked.status})`);
      await t.call('getApiKey', { params: { keyId: created.id }, expect: 404, halt: false });
      await t.call('deleteApiKey', { params: { keyId: created.id }, expect: 404, halt: false });
      await t.call('createApiKey', { body: { name: '' }, expect: 400, halt: false });
    },
  },
  {
    name: 'billing',
    operations: ['listPlans', 'createCheckoutSession', 'createPortalSession', 'receiveStripeEvent'],
    async run(t) {
      const plans = ((await t.call('listPlans', { expect: 200 })).json as Schemas['PlanList']).data;
      t.check('listPlans', plans.length > 0, 'GET /v1/billing/plans lists no plan');
      t.check('listPlans', plans.some((plan) => plan.is_default), 'no plan is the default');
      const account = await accountOf(t, 'primary');
      const plan = plans.find((candidate) => candidate.purchasable && candidate.id !== account.plan_id) ?? plans.find((candidate) => !candidate.is_default) ?? plans[0];

      const origin = new URL(t.client.options.baseUrl).origin;
      const checkout = await t.call('createCheckoutSession', {
        body: { plan_id: plan?.id ?? 'conformance', success_url: `${origin}/conformance/success`, cancel_url: `${origin}/conformance/cancel` },
        expect: [201, 400, 404, 409, 503],
      });
      billingAnswer(t, 'createCheckoutSession', checkout.status, checkout.json, plan?.purchasable === true && account.subscription_status === 'none');
      const portal = await t.call('createPortalSession', { body: { return_url: `${origin}/conformance/billing` }, expect: [201, 404, 503] });
      billingAnswer(t, 'createPortalSession', portal.status, portal.json, true);

      // Unsigned and forged deliveries change nothing: 400, or 503 when billing is off.
      const event = { id: `evt_conformance_${t.nonce}`, object: 'event', type: 'customer.subscription.updated', data: { object: { id: 'sub_conformance' } } };
      const unsigned = await t.call('receiveStripeEvent', { body: event, expect: [400, 503], halt: false });
      const forged = await t.call('receiveStripeEvent', { body: event, headers: { 'Stripe-Signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` }, expect: [400, 503], halt: false });
      for (const answer of [unsigned, forged]) {
        if (answer.status === 503) {
          t.check('receiveStripeEvent', (answer.json as Schemas['Error'] | undefined)?.error.code === 'billing_disabled', 'a 503 from the webhook is not billing_disabled');
        }
      }
      if (unsigned.status === 503) t.note('receiveStripeEvent', 'billing is not configured (503 billing_disabled, as declared); signature checks were not reached');
    },
  },
];

function billingAnswer(t: Context, id: 'createCheckoutSession' | 'createPortalSession', status: number, body: unknown, expectSuccess: boolean): void {
  const code = (body as Schemas['Error'] | undefined)?.error?.code;
  if (status === 503) {
    if (t.check(id, code === 'billing_disabled', `503 with code ${code}, not billing_disabled`)) {
      t.skip(id, 'billing is not configured: 503 billing_disabled is the declared answer, and it matched the contract');
    }
  } else if (status === 201) {
    t.note(id, 'a real session was created; it expires unused');
  } else if (id === 'createCheckoutSession' && expectSuccess) {
    t.check(id, false, `checkout of a purchasable plan answered ${status} ${code}`);
  } else {
    t.note(id, `answered ${status} ${code} as declared (no purchasable plan, or not a Stripe customer yet)`);
  }
}
