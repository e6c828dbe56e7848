import { usageReport, type UsageReportDeps } from '../billing/usage-report.ts';
import type { AppHandlers } from '../http/operations.ts';
import { ApiError } from '../errors.ts';
import type { Queryable } from '../store/db.ts';
import type { ApiKeyStore } from './api-keys.ts';
import { isDirectLocalRequest, redirectWithToken, type MagicLinks } from './magic-link.ts';
import type { OAuthProviders } from './oauth.ts';
import type { SessionStore } from './sessions.ts';
import { getUser, toAccount, updateUserName } from './users.ts';

export interface IdentityDeps {
  db: Queryable;
  apiKeys: ApiKeyStore;
  sessions: SessionStore;
  magicLinks: MagicLinks | undefined;
  oauth: OAuthProviders;
  clock: () => number;
  /** The plan a user is on now (the default one for everybody while billing is off), and its usage. */
  accountPlans: UsageReportDeps['accountPlans'];
  quotas: UsageReportDeps['quotas'];
  requestLimits: UsageReportDeps['requestLimits'];
  usage: UsageReportDeps['usage'];
  /** Whether sign-in links may be answered to local callers (`dev_link`): development without mail. */
  devLinks: boolean;
}

function magicLinksOf(deps: IdentityDeps): MagicLinks {
  if (!deps.magicLinks) {
    throw new ApiError('service_unavailable', 'Sign-in by email is not configured on this server (SMTP_URL is not set).');
  }
  return deps.magicLinks;
}

async function accountOf(deps: IdentityDeps, userId: string) {
  const user = await getUser(deps.db, userId);
  // A credential outlived its user: treat it like any other dead credential.
  if (!user) throw new ApiError('unauthorized', 'The account behind this credential no longer exists.');
  return user;
}

export function identityHandlers(deps: IdentityDeps) {
  return {
    async listAuthProviders() {
      return {
        status: 200,
        body: {
          object: 'list',
          magic_link: deps.magicLinks !== undefined,
          data: deps.oauth.list().map((name) => ({
            id: name,
            object: 'auth_provider',
            type: 'oidc',
            authorize_url: `/v1/auth/oauth/${name}/authorize`,
          })),
        },
      };
    },

    async requestMagicLink({ body, ip, peerAddress, headers }) {
      const { expiresIn, link } = await magicLinksOf(deps).request(body, ip);
      const showLink = deps.devLinks && isDirectLocalRequest(peerAddress, headers);
      return {
        status: 202,
        body: {
          object: 'magic_link',
          message: showLink
            ? 'This server has no mail configured: the sign-in link is in dev_link (and in the server log).'
            : 'If that address can receive mail, a sign-in link is on its way.',
          expires_in: expiresIn,
          ...(showLink ? { dev_link: link } : {}),
        },
      };
    },

    async verifyMagicLink({ body }) {
      const { accessToken } = await magicLinksOf(deps).verify(body.token);
      return { status: 200, body: accessToken };
    },

    async followMagicLink({ query }) {
      const { accessToken, redirectUrl } = await magicLinksOf(deps).verify(query.token);
      if (redirectUrl) return { status: 302, headers: { Location: redirectWithToken(redirectUrl, accessToken) } };
      return { status: 200, body: accessToken };
    },

    async authorizeOAuth({ params, query }) {
      const location = await deps.oauth.authorize(params.provider, query.redirect_url);
      return { status: 302, headers: { Location: location } };
    },

    async completeOAuth({ params, query, headers }) {
      const { accessToken, redirectUrl } = await deps.oauth.complete(params.provider, query, headers);
      if (redirectUrl) return { status: 302, headers: { Location: redirectWithToken(redirectUrl, accessToken) } };
      return { status: 200, body: accessToken };
    },

    async logOut({ auth }) {
      if (auth.credential.kind !== 'session') {
        throw new ApiError('invalid_request', 'Sign out with a session access token; revoke API keys with DELETE /v1/api-keys/{keyId}.');
      }
      await deps.sessions.revoke(auth.credential.id);
      return { status: 204 };
    },

    async getAccount({ auth }) {
      const account = toAccount(await accountOf(deps, auth.userId));
      return { status: 200, body: { ...account, plan_id: (await deps.accountPlans.planOf(auth.userId)).id } };
    },

    async getAccountUsage({ auth }) {
      return { status: 200, body: await usageReport(deps, auth.userId) };
    },

    async updateAccount({ auth, body }) {
      await accountOf(deps, auth.userId);
      const account = toAccount((await updateUserName(deps.db, auth.userId, body.name ?? null))!);
      return { status: 200, body: { ...account, plan_id: (await deps.accountPlans.planOf(auth.userId)).id } };
    },

    async createApiKey({ auth, body }) {
      if (body.expires_at && Date.parse(body.expires_at) <= deps.clock()) {
        throw new ApiError('invalid_request', 'expires_at must be in the future.', {
          details: [{ field: 'expires_at', message: 'in the past' }],
        });
      }
      return { status: 201, body: await deps.apiKeys.create(auth.userId, body) };
    },

    async listApiKeys({ auth, query }) {
      return { status: 200, body: await deps.apiKeys.list(auth.userId, query) };
    },

    async getApiKey({ auth, params }) {
      return { status: 200, body: await deps.apiKeys.get(auth.userId, params.keyId) };
    },

    async deleteApiKey({ auth, params }) {
      await deps.apiKeys.remove(auth.userId, params.keyId);
      return { status: 204 };
    },
  } satisfies Partial<AppHandlers>;
}
