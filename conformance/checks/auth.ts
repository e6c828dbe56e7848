// Credentials: every secured operation refuses a request without one, or with a bad one, with 401, the
// envelope and a WWW-Authenticate challenge; the public sign-in operations answer as declared without
// the kit completing a sign-in.
import type { OperationSpec, ParameterSpec } from '../contract.ts';
import type { Check, Context, Schemas } from '../context.ts';

const PLACEHOLDERS = ['cnf_0000000000000000000000000000', 'conformance'];

function placeholder(parameter: ParameterSpec): string {
  const pattern = typeof parameter.schema.pattern === 'string' ? new RegExp(parameter.schema.pattern, 'u') : undefined;
  return PLACEHOLDERS.find((candidate) => !pattern || pattern.test(candidate)) ?? 'conformance';
}

/** A request that would be valid but for its credential, so that only authentication can refuse it. */
function requestOf(operation: OperationSpec) {
  const params: Record<string, string> = {};
  const query: Record<string, string> = {};
  for (const parameter of operation.parameters) {
    if (parameter.in === 'path') params[parameter.name] = placeholder(parameter);
    else if (parameter.in === 'query' && parameter.required) query[parameter.name] = placeholder(parameter);
  }
  const hasBody = ['POST', 'PUT', 'PATCH'].includes(operation.method);
  return { params, query, ...(hasBody ? { body: operation.requestExample ?? {} } : {}) };
}

async function refuses(t: Context, operation: OperationSpec, credential: 'none' | 'garbage'): Promise<void> {
  const id = operation.operationId;
  const answer = await t.call(id, {
    ...requestOf(operation),
    as: credential === 'none' ? 'none' : { bearer: 'oaa_conformance_not_a_real_key' },
    expect: 401,
    halt: false,
    probe: true,
  });
  if (answer.status !== 401) return;
  const what = credential === 'none' ? 'without a credential' : 'with a bad credential';
  // An operation of a protocol with its own error shape (A2A) answers 401 in that shape; its body is
  // checked against the contract's declared 401 response like every answer, not against our envelope.
  if (!operation.errorFormat) {
    const code = (answer.json as Schemas['Error'] | undefined)?.error?.code;
    t.check(id, code === 'unauthorized', `${operation.method} ${operation.path} ${what} answered 401 with code ${code}, not unauthorized`);
  }
  const challenge = answer.headers.get('www-authenticate') ?? '';
  t.check(id, /^Bearer\b/i.test(challenge), `${operation.method} ${operation.path} ${what}: WWW-Authenticate "${challenge}" is not a Bearer challenge`);
  if (credential === 'garbage') {
    t.check(id, /error=/.test(challenge), `${operation.method} ${operation.path} ${what}: WWW-Authenticate "${challenge}" names no error`);
  }
}

export const authChecks: Check[] = [
  {
    name: 'secured operations refuse missing and bad credentials',
    operations: [],
    async run(t) {
      for (const operation of t.contract.operations) {
        if (!operation.secured || !t.selected(operation.operationId)) continue;
        await refuses(t, operation, 'none');
        await refuses(t, operation, 'garbage');
      }
      if (t.selected('getAccount')) {
        const answer = await t.call('getAccount', { as: { apiKey: 'oaa_conformance_not_a_real_key' }, expect: 401, halt: false, probe: true });
        t.check('getAccount', answer.status === 401, 'a bad X-API-Key is not refused with 401');
      }
    },
  },
  {
    name: 'sign-in methods',
    operations: ['listAuthProviders', 'authorizeOAuth', 'completeOAuth'],
    async run(t) {
      const list = await t.call('listAuthProviders', { expect: 200 });
      const providers = (list.json as Schemas['AuthProviderList'] | undefined)?.data ?? [];
      const unknown = `conformance-${t.nonce.toLowerCase()}`;
      await t.call('authorizeOAuth', { params: { provider: unknown }, redirect: 'manual', expect: 404, halt: false });
      await t.call('completeOAuth', {
        params: { provider: unknown },
        query: { code: 'conformance', state: 'conformance' },
        redirect: 'manual',
        expect: 404,
        halt: false,
      });
      const provider = providers[0];
      if (!provider) {
        t.note('authorizeOAuth', 'no OAuth provider is configured; only the answer for an unknown provider was checked');
        t.note('completeOAuth', 'no OAuth provider is configured; only the answer for an unknown provider was checked');
        return;
      }
      const start = await t.call('authorizeOAuth', { params: { provider: provider.id }, redirect: 'manual', expect: 302, halt: false });
      if (start.status === 302) {
        const location = start.headers.get('location') ?? '';
        t.check('authorizeOAuth', /^https?:\/\//.test(location), `the redirect to ${provider.id} has no absolute Location (${location})`);
      }
      await t.call('completeOAuth', {
        params: { provider: provider.id },
        query: { code: 'conformance', state: `conformance-forged-${t.nonce}` },
        redirect: 'manual',
        expect: 400,
        halt: false,
      });
      t.note('completeOAuth', 'only a forged state was sent; the kit does not complete sign-ins');
    },
  },
  {
    name: 'magic links',
    operations: ['requestMagicLink', 'verifyMagicLink', 'followMagicLink'],
    async run(t) {
      await t.call('requestMagicLink', { body: { email: `conformance-${t.nonce.toLowerCase()}@example.com` }, expect: 202, halt: false });
      await t.call('requestMagicLink', { body: { email: 'not an address' }, expect: 400, halt: false });
      await t.call('verifyMagicLink', { body: { token: `mlt_conformance_${t.nonce}` }, expect: 400, halt: false });
      await t.call('followMagicLink', { query: { token: `mlt_conformance_${t.nonce}` }, redirect: 'manual', expect: 400, halt: false });
      for (const id of ['verifyMagicLink', 'followMagicLink'] as const) {
        t.note(id, 'only an invalid token was sent; the kit does not complete sign-ins');
      }
    },
  },
];
