// Sign-in with any OpenID Connect provider: authorization code flow with PKCE (S256), `state` and `nonce`,
// ID token verified by openid-client, user found or created by verified email.
import type * as Oidc from 'openid-client';
import type { OAuthProviderConfig } from '../config.ts';
import { ApiError } from '../errors.ts';
import { one, type Queryable } from '../store/db.ts';
import { hashSecret } from './secrets.ts';
import type { AccessToken, SessionStore } from './sessions.ts';
import { findOrCreateUser, getUser, type UserRow } from './users.ts';

const STATE_TTL_MS = 10 * 60 * 1000;

// openid-client is loaded at the first sign-in, not at start-up: most requests never need it.
let oidcModule: Promise<typeof Oidc> | undefined;
const loadOidc = (): Promise<typeof Oidc> => (oidcModule ??= import('openid-client'));
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const DISCOVERY_TIMEOUT_SECONDS = 10;

/** What the provider says about the user: the ID token's claims, completed from UserInfo when needed. */
interface ProviderIdentity {
  sub: string;
  email?: unknown;
  email_verified?: unknown;
}

export interface OAuthOptions {
  publicUrl: string;
  clock: () => number;
  isAllowedRedirect: (url: string) => boolean;
}

export interface OAuthProviders {
  list(): string[];
  authorize(provider: string, redirectUrl: string | undefined): Promise<string>;
  complete(
    provider: string,
    query: Readonly<Record<string, string | undefined>>,
    headers: Readonly<Record<string, string | undefined>>,
  ): Promise<{ accessToken: AccessToken; redirectUrl: string | null }>;
}

/**
 * Checks of what the callback brought that fail (a nonce, audience or issuer that does not match, an ID
 * token expired or from the future, a state the response does not echo) are this sign-in's fault: an
 * old or replayed callback, a tampered link. They are a 400 and not logged as server errors.
 */
const SIGN_IN_CHECKS = new Set(['OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED', 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED']);

/** The envelope for a failed callback: the provider's refusal or a failed check is 400, anything else 502. */
/** Why a sign-in failed: the provider's or the sign-in's own fault (400), or ours to report (502). */
export function signInFailure(error: unknown, provider: string, oidc: typeof Oidc): ApiError {
  if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError) {
    return new ApiError('invalid_request', `The provider rejected the sign-in: ${error.error_description ?? error.error}.`);
  }
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && SIGN_IN_CHECKS.has(code)) {
    return new ApiError('invalid_request', `The sign-in with ${provider} did not pass its checks (${(error as Error).message}); start the sign-in again.`, { cause: error });
  }
  return new ApiError('upstream_error', `Signing in with ${provider} failed.`, { cause: error });
}

export function createOAuthProviders(
  db: Queryable,
  providers: OAuthProviderConfig[],
  deps: { sessions: SessionStore },
  options: OAuthOptions,
): OAuthProviders {
  const byName = new Map(providers.map((provider) => [provider.name, provider]));
  const discovered = new Map<string, Promise<Oidc.Configuration>>();

  const providerOf = (name: string): OAuthProviderConfig => {
    const provider = byName.get(name);
    if (!provider) throw new ApiError('not_found', `No sign-in provider named ${name}.`);
    return provider;
  };

  const discover = async (provider: OAuthProviderConfig): Promise<Oidc.Configuration> => {
    const oidc = await loadOidc();
    const issuer = new URL(provider.issuer);
    // Plain http only for loopback issuers (local development and tests); anywhere else the code and
    // the ID token would cross the network in the clear, so discovery refuses it (502 on authorize).
    const execute = issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname) ? [oidc.allowInsecureRequests] : [];
    const secret = provider.clientSecret;
    const authentication = !secret
      ? oidc.None()
      : provider.tokenAuthMethod === 'client_secret_post'
        ? oidc.ClientSecretPost(secret)
        : oidc.ClientSecretBasic(secret);
    return oidc.discovery(issuer, provider.clientId, secret, authentication, { execute, timeout: DISCOVERY_TIMEOUT_SECONDS });
  };

  const configurationOf = (provider: OAuthProviderConfig): Promise<Oidc.Configuration> => {
    let pending = discovered.get(provider.name);
    if (!pending) {
      pending = discover(provider).catch((error: unknown) => {
        discovered.delete(provider.name);
        throw new ApiError('upstream_error', `The sign-in provider ${provider.name} could not be reached.`, { cause: error });
      });
      discovered.set(provider.name, pending);
    }
    return pending;
  };

  const callbackUrl = (name: string) => `${options.publicUrl}/v1/auth/oauth/${name}/callback`;

  /**
   * The user behind a provider identity: the one linked to its subject, or else the one with its verified
   * email (created when new). `verifiedEmail` is asked only when the subject is not linked yet.
   */
  async function userFor(
    provider: string,
    subject: string,
    verifiedEmail: () => Promise<ProviderIdentity>,
  ): Promise<{ user: UserRow; created: boolean }> {
    const linked = await one<{ user_id: string }>(
      db,
      'SELECT user_id FROM oauth_identities WHERE provider = $1 AND subject = $2',
      [provider, subject],
    );
    if (linked) {
      const user = await getUser(db, linked.user_id);
      if (user) return { user, created: false };
    }
    const claims = await verifiedEmail();
    // Some providers send the flag as a string.
    const verified = claims.email_verified === true || claims.email_verified === 'true';
    if (typeof claims.email !== 'string' || !verified) {
      throw new ApiError('invalid_request', `The provider ${provider} did not vouch for an email address; it cannot sign you in.`);
    }
    const result = await findOrCreateUser(db, claims.email);
    await db.query(
      `INSERT INTO oauth_identities (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)
       ON CONFLICT (provider, subject) DO UPDATE SET user_id = EXCLUDED.user_id, email = EXCLUDED.email`,
      [provider, subject, result.user.id, claims.email],
    );
    return result;
  }

  return {
    list: () => [...byName.keys()],

    async authorize(name, redirectUrl) {
      const provider = providerOf(name);
      if (redirectUrl && !options.isAllowedRedirect(redirectUrl)) {
        throw new ApiError('invalid_request', 'redirect_url is not on an allowed origin.', {
          details: [{ field: 'redirect_url', message: 'not an allowed origin' }],
        });
      }
      const configuration = await configurationOf(provider);
      const oidc = await loadOidc();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const verifier = oidc.randomPKCECodeVerifier();
      await db.query(
        `INSERT INTO oauth_states (state_hash, provider, code_verifier, nonce, redirect_url, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [hashSecret(state), name, verifier, nonce, redirectUrl ?? null, new Date(options.clock() + STATE_TTL_MS)],
      );
      return oidc
        .buildAuthorizationUrl(configuration, {
          redirect_uri: callbackUrl(name),
          scope: 'openid email profile',
          code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
          code_challenge_method: 'S256',
          state,
          nonce,
        })
        .toString();
    },

    async complete(name, query) {
      const provider = providerOf(name);
      if (query.error) {
        throw new ApiError('invalid_request', `The provider refused the sign-in: ${query.error_description ?? query.error}.`);
      }
      if (!query.code || !query.state) throw new ApiError('invalid_request', 'The callback needs code and state.');
      const pending = await one<{ code_verifier: string; nonce: string; redirect_url: string | null }>(
        db,
        `UPDATE oauth_states SET used_at = $3
         WHERE state_hash = $1 AND provider = $2 AND used_at IS NULL AND expires_at > $3
         RETURNING code_verifier, nonce, redirect_url`,
        [hashSecret(query.state), name, new Date(options.clock())],
      );
      if (!pending) throw new ApiError('invalid_request', 'Unknown, expired or already used state; start the sign-in again.');
      const configuration = await configurationOf(provider);
      const oidc = await loadOidc();
      const currentUrl = new URL(callbackUrl(name));
      for (const [key, value] of Object.entries(query)) if (value !== undefined) currentUrl.searchParams.set(key, value);
      const upstreamFailure = (error: unknown): ApiError => signInFailure(error, name, oidc);
      let tokens: Awaited<ReturnType<typeof Oidc.authorizationCodeGrant>>;
      try {
        tokens = await oidc.authorizationCodeGrant(configuration, currentUrl, {
          pkceCodeVerifier: pending.code_verifier,
          expectedState: query.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        throw upstreamFailure(error);
      }
      const claims = tokens.claims();
      if (!claims) throw new ApiError('upstream_error', `The provider ${name} sent no ID token.`);
      const { user, created } = await userFor(name, claims.sub, async () => {
        // OIDC Core 5.4: when an access token is issued, claims of scopes like `email` may be served by
        // UserInfo only, not put in the ID token (oidc-provider's default). The pair is taken from one
        // source so that `email_verified` always speaks of that `email`; fetchUserInfo checks the `sub`.
        const complete = typeof claims.email === 'string' && claims.email_verified !== undefined;
        if (complete || !configuration.serverMetadata().userinfo_endpoint) return claims;
        try {
          const info = await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
          return { sub: claims.sub, email: info.email, email_verified: info.email_verified };
        } catch (error) {
          throw upstreamFailure(error);
        }
      });
      const accessToken = await deps.sessions.issue(user, `oauth:${name}`, created);
      return { accessToken, redirectUrl: pending.redirect_url };
    },
  };
}
