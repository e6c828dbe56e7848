// Sign-in with OpenID Connect against a real provider (oidc-provider) on loopback. The "browser" is plain
// fetch with manual redirects and a cookie jar; the provider's login and consent pages are replaced by a
// handler that signs in whichever account the test asks for, so every step of the protocol is the real one.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
// @ts-expect-error -- oidc-provider ships no type declarations; the few parts used here are typed below.
import ProviderModule from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { one } from '../store/db.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { hashSecret } from './secrets.ts';

interface OidcInteraction {
  uid: string;
  params: Record<string, unknown>;
}

interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<OidcInteraction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options: { mergeWithLastSubmission: boolean },
  ): Promise<void>;
  Grant: new (init: { accountId: string; clientId: string }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
}

const Provider = ProviderModule as new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;

const CLIENT_ID = 'open-agent-api';
const CLIENT_SECRET = randomBytes(24).toString('base64url');

// The provider's user directory. Mixed case on purpose: our accounts keep emails normalized.
const accounts: Record<string, { email: string; email_verified: boolean; name: string }> = {
  ada: { email: 'Ada.Lovelace@Example.com', email_verified: true, name: 'Ada Lovelace' },
  grace: { email: 'grace@example.com', email_verified: true, name: 'Grace Hopper' },
  linus: { email: 'linus@example.com', email_verified: true, name: 'Linus' },
  margaret: { email: 'margaret@example.com', email_verified: true, name: 'Margaret Hamilton' },
  alan: { email: 'alan@example.com', email_verified: true, name: 'Alan Turing' },
  barbara: { email: 'barbara@example.com', email_verified: true, name: 'Barbara Liskov' },
  katherine: { email: 'katherine@example.com', email_verified: true, name: 'Katherine Johnson' },
  eve: { email: 'eve@example.com', email_verified: false, name: 'Eve' },
};

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A loopback port that nothing listens on: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A user agent: follows nothing by itself, and keeps each origin's cookies like a browser would. */
function newBrowser() {
  const jars = new Map<string, Map<string, string>>();
  return async (url: URL): Promise<Response> => {
    const jar = jars.get(url.origin) ?? new Map<string, string>();
    jars.set(url.origin, jar);
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const split = pair.indexOf('=');
      const name = pair.slice(0, split).trim();
      const value = pair.slice(split + 1).trim();
      const expires = attributes.find((attribute) => /^\s*expires=/i.test(attribute));
      const expired = expires !== undefined && Date.parse(expires.split('=')[1] ?? '') <= Date.now();
      if (!value || expired) jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  };
}

type Login = { account: keyof typeof accounts } | { deny: true; description?: string };

async function errorOf(response: Response): Promise<{ code: string; message: string; request_id: string }> {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  return body.error;
}

interface TestIdp {
  issuer: string;
  /** Requests the provider's UserInfo endpoint answered. */
  userinfoCalls: number;
  /** Builds the provider, now that our callback URL is known, and serves it on the reserved port. */
  serve(callbackUrl: string, options: { emailInIdToken: boolean; tokenAuthMethod?: 'client_secret_basic' | 'client_secret_post' }): Promise<void>;
  close(): Promise<void>;
}

/**
 * Our server needs the issuer when it starts, and the provider needs our callback URL, known only once our
 * server listens: so the provider's port is reserved first and the provider is attached to it afterwards.
 */
async function reserveIdp(): Promise<TestIdp> {
  const http = createServer();
  const issuer = `http://127.0.0.1:${await listen(http)}`;
  const idp: TestIdp = {
    issuer,
    userinfoCalls: 0,
    async serve(callbackUrl, { emailInIdToken, tokenAuthMethod = 'client_secret_basic' }) {
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: [callbackUrl],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: tokenAuthMethod,
          },
        ],
        jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test', alg: 'RS256', use: 'sig' }] },
        cookies: { keys: [randomBytes(32).toString('hex')] },
        // Default on a confidential client is "PKCE optional"; requiring it makes a missing challenge fail here.
        pkce: { required: () => true },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        // true (the default) follows OIDC Core 5.4: with an access token issued, `email` is served by
        // UserInfo only. false puts it in the ID token too, as Google does.
        conformIdTokenClaims: !emailInIdToken,
        features: { devInteractions: { enabled: false } },
        ttl: { AuthorizationCode: 60, AccessToken: 600, IdToken: 600, Interaction: 600, Grant: 600, Session: 600 },
        interactions: { url: (_ctx: unknown, interaction: OidcInteraction) => `/interaction/${interaction.uid}` },
        async findAccount(_ctx: unknown, sub: string) {
          const account = accounts[sub];
          if (!account) return undefined;
          return { accountId: sub, claims: async () => ({ sub, ...account }) };
        },
      });

      // Stands in for the login and consent pages: signs in the account the browser names, or declines.
      const interact = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
        const details = await provider.interactionDetails(req, res);
        if (url.searchParams.has('deny')) {
          const description = url.searchParams.get('description');
          await provider.interactionFinished(
            req,
            res,
            { error: 'access_denied', ...(description ? { error_description: description } : {}) },
            { mergeWithLastSubmission: false },
          );
          return;
        }
        const accountId = url.searchParams.get('account') ?? '';
        const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
        grant.addOIDCScope(String(details.params.scope));
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId }, consent: { grantId: await grant.save() } },
          { mergeWithLastSubmission: false },
        );
      };
      const handle = provider.callback();
      http.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const url = new URL(req.url ?? '/', issuer);
        if (url.pathname === '/me') idp.userinfoCalls += 1;
        if (!url.pathname.startsWith('/interaction/')) return handle(req, res);
        interact(req, res, url).catch((error: unknown) => {
          res.statusCode = 500;
          res.end(String(error));
        });
      });
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  return idp;
}

describe.each(await availableEngines())('sign-in with OpenID Connect (%s)', (engine) => {
  let server: TestServer;
  let idp: TestIdp;
  let eager: TestIdp;
  let offlineIssuer: string;
  // Our server's clock runs this far ahead of the real one; the provider keeps real time.
  let skewMs = 0;

  const authorizePath = (provider: string) => `/v1/auth/oauth/${provider}/authorize`;
  const callbackUrl = (provider = 'idp') => `${server.url}/v1/auth/oauth/${provider}/callback`;
  const count = async (sql: string, params: string[] = []) =>
    (await one<{ n: number }>(server.services.db, `SELECT count(*)::int AS n FROM ${sql}`, params))?.n;

  beforeAll(async () => {
    idp = await reserveIdp();
    eager = await reserveIdp();
    offlineIssuer = `http://127.0.0.1:${await closedPort()}`;
    server = await startTestServer({
      engine,
      clock: () => Date.now() + skewMs,
      env: {
        ALLOWED_REDIRECT_ORIGINS: 'http://app.example',
        OAUTH_IDP_ISSUER: idp.issuer,
        OAUTH_IDP_CLIENT_ID: CLIENT_ID,
        OAUTH_IDP_CLIENT_SECRET: CLIENT_SECRET,
        OAUTH_EAGER_ISSUER: eager.issuer,
        OAUTH_EAGER_CLIENT_ID: CLIENT_ID,
        OAUTH_EAGER_CLIENT_SECRET: CLIENT_SECRET,
        OAUTH_EAGER_TOKEN_AUTH_METHOD: 'client_secret_post',
        OAUTH_OFFLINE_ISSUER: offlineIssuer,
        OAUTH_OFFLINE_CLIENT_ID: CLIENT_ID,
      },
    });
    await idp.serve(callbackUrl('idp'), { emailInIdToken: false });
    // One provider takes the secret by HTTP Basic (the default), the other in the body, as configured.
    await eager.serve(callbackUrl('eager'), { emailInIdToken: true, tokenAuthMethod: 'client_secret_post' });
  });

  afterAll(async () => {
    await server?.close();
    await idp?.close();
    await eager?.close();
  });

  /**
   * Walks a fresh browser from our authorize endpoint through the provider and its interaction to the
   * point where the provider sends it back to our callback, and stops there so tests decide what to send.
   */
  async function reachCallback(login: Login, options: { redirectUrl?: string; provider?: string } = {}): Promise<{ callback: URL }> {
    const { redirectUrl, provider = 'idp' } = options;
    const browse = newBrowser();
    const start = new URL(authorizePath(provider), server.url);
    if (redirectUrl) start.searchParams.set('redirect_url', redirectUrl);
    const first = await browse(start);
    expect(first.status, await first.clone().text()).toBe(302);
    let next = new URL(first.headers.get('location') ?? '');
    for (let hop = 0; hop < 10; hop++) {
      if (next.href.startsWith(`${callbackUrl(provider)}?`)) return { callback: next };
      if (next.pathname.startsWith('/interaction/')) {
        if ('account' in login) next.searchParams.set('account', login.account);
        else {
          next.searchParams.set('deny', '1');
          if (login.description) next.searchParams.set('description', login.description);
        }
      }
      const response = await browse(next);
      const location = response.headers.get('location');
      if (![302, 303].includes(response.status) || !location) {
        throw new Error(`the provider stopped at ${next.href} with ${response.status}: ${await response.text()}`);
      }
      await response.body?.cancel();
      next = new URL(location, next);
    }
    throw new Error(`no way back to our callback after 10 redirects; last at ${next.href}`);
  }

  async function signIn(account: keyof typeof accounts, provider = 'idp') {
    const { callback } = await reachCallback({ account }, { provider });
    const response = await fetch(callback, { redirect: 'manual' });
    expect(response.status, await response.clone().text()).toBe(200);
    return (await response.json()) as {
      object: string;
      access_token: string;
      token_type: string;
      expires_in: number;
      expires_at: string;
      new_user: boolean;
      account: { id: string; email: string };
    };
  }

  const accountWith = (token: string) => fetch(`${server.url}/v1/account`, { headers: { Authorization: `Bearer ${token}` } });

  it('lists the configured providers', async () => {
    const response = await fetch(`${server.url}/v1/auth/providers`);
    const body = (await response.json()) as { data: { id: string; authorize_url: string }[] };
    expect(body.data.map((provider) => [provider.id, provider.authorize_url])).toEqual([
      ['eager', authorizePath('eager')],
      ['idp', authorizePath('idp')],
      ['offline', authorizePath('offline')],
    ]);
  });

  it('sends the browser to the provider with PKCE S256, state, nonce and the openid and email scopes', async () => {
    const response = await fetch(new URL(authorizePath('idp'), server.url), { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(`${idp.issuer}/auth`);
    const params = location.searchParams;
    expect(params.get('response_type')).toBe('code');
    expect(params.get('client_id')).toBe(CLIENT_ID);
    expect(params.get('redirect_uri')).toBe(callbackUrl());
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(params.get('state')).toMatch(/^[\w-]{22,}$/);
    expect(params.get('nonce')).toMatch(/^[\w-]{22,}$/);
    expect(params.get('scope')?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email']));
    // Only a hash of the state is stored, so the database alone cannot finish someone's sign-in; the
    // stored verifier is the one the challenge was computed from, and the nonce is the one sent.
    const state = params.get('state') ?? '';
    expect(await count('oauth_states WHERE state_hash = $1', [state])).toBe(0);
    const stored = await one<{ code_verifier: string; nonce: string; used_at: Date | null }>(
      server.services.db,
      'SELECT code_verifier, nonce, used_at FROM oauth_states WHERE state_hash = $1 AND provider = $2',
      [hashSecret(state), 'idp'],
    );
    expect(stored).toMatchObject({ nonce: params.get('nonce'), used_at: null });
    expect(createHash('sha256').update(stored?.code_verifier ?? '').digest('base64url')).toBe(params.get('code_challenge'));
  });

  it('signs a user in, creates the account once, and finds it again by subject', async () => {
    const userinfoCalls = idp.userinfoCalls;
    const first = await signIn('ada');
    // This provider keeps `email` out of the ID token, so it can only have come from UserInfo.
    expect(idp.userinfoCalls).toBe(userinfoCalls + 1);
    expect(first).toMatchObject({
      object: 'access_token',
      token_type: 'Bearer',
      new_user: true,
      account: { object: 'account', email: 'ada.lovelace@example.com' },
    });
    expect(first.expires_in).toBeGreaterThan(0);
    expect(Date.parse(first.expires_at)).toBeGreaterThan(Date.now());

    const account = await accountWith(first.access_token);
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ id: first.account.id, email: 'ada.lovelace@example.com' });

    const second = await signIn('ada');
    expect(second.new_user).toBe(false);
    expect(second.account.id).toBe(first.account.id);
    expect(second.access_token).not.toBe(first.access_token);
    expect((await accountWith(second.access_token)).status).toBe(200);
    expect(await count('oauth_identities WHERE provider = $1 AND subject = $2', ['idp', 'ada'])).toBe(1);
    expect(await count('users WHERE email = $1', ['ada.lovelace@example.com'])).toBe(1);
  });

  it('takes the email from the ID token when the provider puts it there, without calling UserInfo', async () => {
    const token = await signIn('katherine', 'eager');
    expect(token).toMatchObject({ new_user: true, account: { email: 'katherine@example.com' } });
    expect(eager.userinfoCalls).toBe(0);
    expect(await count('oauth_identities WHERE provider = $1 AND subject = $2', ['eager', 'katherine'])).toBe(1);
  });

  it('links a provider identity to the existing account with the same email', async () => {
    const existing = await server.signUp('margaret@example.com');
    const token = await signIn('margaret');
    expect(token.new_user).toBe(false);
    expect(token.account.id).toBe(existing.userId);
  });

  it('redirects to an allowed redirect_url with the token in the fragment, and refuses other origins', async () => {
    const { callback } = await reachCallback({ account: 'grace' }, { redirectUrl: `${server.url}/signed-in?from=test` });
    const response = await fetch(callback, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = response.headers.get('location') ?? '';
    expect(location.startsWith(`${server.url}/signed-in?from=test#`)).toBe(true);
    const fragment = new URLSearchParams(new URL(location).hash.slice(1));
    expect(fragment.get('token_type')).toBe('Bearer');
    expect(Number(fragment.get('expires_in'))).toBeGreaterThan(0);
    const account = await accountWith(fragment.get('access_token') ?? '');
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ email: 'grace@example.com' });

    const app = new URL(authorizePath('idp'), server.url);
    app.searchParams.set('redirect_url', 'http://app.example/signed-in');
    expect((await fetch(app, { redirect: 'manual' })).headers.get('location')).toMatch(`${idp.issuer}/auth?`);

    const states = await count('oauth_states');
    const elsewhere = new URL(authorizePath('idp'), server.url);
    elsewhere.searchParams.set('redirect_url', 'https://attacker.example/signed-in');
    const refused = await fetch(elsewhere, { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
    expect((await errorOf(refused)).code).toBe('invalid_request');
    expect(await count('oauth_states')).toBe(states);
  });

  it('refuses a forged state without creating a session, and the genuine state still works', async () => {
    const { callback } = await reachCallback({ account: 'linus' });
    const sessions = await count('auth_sessions');
    const forged = new URL(callback);
    forged.searchParams.set('state', randomBytes(32).toString('base64url'));
    const response = await fetch(forged, { redirect: 'manual' });
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.request_id).toMatch(/^req_/);
    expect(await count('auth_sessions')).toBe(sessions);
    expect(await count('users WHERE email = $1', ['linus@example.com'])).toBe(0);

    const genuine = await fetch(callback, { redirect: 'manual' });
    expect(genuine.status).toBe(200);
  });

  it('refuses a replayed callback, and the first token keeps working', async () => {
    const { callback } = await reachCallback({ account: 'alan' });
    const first = await fetch(callback, { redirect: 'manual' });
    expect(first.status).toBe(200);
    const { access_token: token } = (await first.json()) as { access_token: string };
    const sessions = await count('auth_sessions');

    const replay = await fetch(callback, { redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect((await errorOf(replay)).code).toBe('invalid_request');
    expect(await count('auth_sessions')).toBe(sessions);
    expect((await accountWith(token)).status).toBe(200);
  });

  it('refuses a state older than ten minutes', async () => {
    const { callback } = await reachCallback({ account: 'barbara' });
    skewMs = 11 * 60 * 1000;
    try {
      const response = await fetch(callback, { redirect: 'manual' });
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_request');
    } finally {
      skewMs = 0;
    }
    expect((await fetch(callback, { redirect: 'manual' })).status).toBe(200);
  });

  it("refuses a code presented with another sign-in's state, because the provider checks the PKCE verifier", async () => {
    const stolen = await reachCallback({ account: 'alan' });
    const victim = await reachCallback({ account: 'grace' });
    const sessions = await count('auth_sessions');
    const injected = new URL(victim.callback);
    injected.searchParams.set('code', stolen.callback.searchParams.get('code') ?? '');
    const response = await fetch(injected, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_request');
    expect(await count('auth_sessions')).toBe(sessions);
  });

  it('answers 404 not_found for a provider that is not configured', async () => {
    const authorize = await fetch(new URL(authorizePath('nowhere'), server.url), { redirect: 'manual' });
    expect(authorize.status).toBe(404);
    expect((await errorOf(authorize)).code).toBe('not_found');
    const callback = await fetch(`${server.url}/v1/auth/oauth/nowhere/callback?code=abc&state=def`, { redirect: 'manual' });
    expect(callback.status).toBe(404);
    expect((await errorOf(callback)).code).toBe('not_found');
  });

  it('answers 400 invalid_request when the user declines at the provider', async () => {
    const { callback } = await reachCallback({ deny: true });
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('code')).toBeNull();
    const sessions = await count('auth_sessions');
    const response = await fetch(callback, { redirect: 'manual' });
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('access_denied');
    expect(await count('auth_sessions')).toBe(sessions);
  });

  // KNOWN BUG, in the contract: providers form-encode error_description ("The+user+declined."), and `+` is a
  // reserved character that express-openapi-validator refuses in a query parameter without
  // `allowReserved: true`, so the answer is validation_error instead of the provider's reason. Turn this
  // into a plain `it` once the callback's parameters allow reserved characters.
  it('passes on the reason the provider gives for declining', async () => {
    const { callback } = await reachCallback({ deny: true, description: 'The user declined.' });
    expect(callback.searchParams.get('error_description')).toBe('The user declined.');
    const response = await fetch(callback, { redirect: 'manual' });
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('The user declined.');
  });

  it('answers 400, not 502, when the ID token fails the checks of this sign-in (a nonce that does not match)', async () => {
    const first = Object.keys(accounts)[0] as keyof typeof accounts;
    const { callback } = await reachCallback({ account: first });
    // As if the callback belonged to another sign-in: the nonce kept for this state is not the token's.
    await server.services.db.query("UPDATE oauth_states SET nonce = 'another-nonce' WHERE provider = 'idp' AND used_at IS NULL");
    const response = await fetch(callback, { redirect: 'manual' });
    const error = await errorOf(response);
    expect(response.status).toBe(400);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('did not pass its checks');
  });

  it('refuses an account whose email the provider has not verified, and creates no user', async () => {
    const users = await count('users');
    const { callback } = await reachCallback({ account: 'eve' });
    const response = await fetch(callback, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_request');
    expect(await count('users')).toBe(users);
    expect(await count('users WHERE email = $1', ['eve@example.com'])).toBe(0);
    expect(await count('oauth_identities WHERE subject = $1', ['eve'])).toBe(0);
  });

  it('answers 502 upstream_error when the issuer cannot be reached, and stores no state', async () => {
    const response = await fetch(new URL(authorizePath('offline'), server.url), { redirect: 'manual' });
    expect(response.status).toBe(502);
    const error = await errorOf(response);
    expect(error.code).toBe('upstream_error');
    expect(await count('oauth_states WHERE provider = $1', ['offline'])).toBe(0);
  });
});
