// Sign-in by emailed link: a single-use token with 256 random bits, stored only as a hash, that expires.
import { ApiError } from '../errors.ts';
import { enforce, type RateLimiter } from '../limits/rate-limiter.ts';
import { one, type Queryable } from '../store/db.ts';
import type { Mailer } from './mailer.ts';
import { hashSecret, randomSecret } from './secrets.ts';
import type { AccessToken, SessionStore } from './sessions.ts';
import { findOrCreateUser, normalizeEmail } from './users.ts';

export interface MagicLinkOptions {
  publicUrl: string;
  ttlSeconds: number;
  clock: () => number;
  isAllowedRedirect: (url: string) => boolean;
}

// Three limits: per requester, per requester and target, and a looser one per target. Counting the
// target alone let anyone lock an address out of sign-in by asking for its links from elsewhere; the
// target's own limit only stops many requesters together from flooding one mailbox.
const perAddress = { name: 'magic-link-ip', points: 20, windowSeconds: 15 * 60 };
const perRequesterAndEmail = { name: 'magic-link-requester-email', points: 5, windowSeconds: 15 * 60 };
const perEmail = { name: 'magic-link-email', points: 50, windowSeconds: 15 * 60 };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function createMagicLinks(
  db: Queryable,
  deps: { mailer: Mailer; sessions: SessionStore; limiter: RateLimiter },
  options: MagicLinkOptions,
) {
  return {
    /** Sends the link; answers it too, for a development server that may show it to a local caller. */
    async request(input: { email: string; redirect_url?: string }, clientAddress: string): Promise<{ expiresIn: number; link: string }> {
      const email = normalizeEmail(input.email);
      await enforce(deps.limiter, perAddress, clientAddress, 'sign-in requests from this address');
      await enforce(deps.limiter, perRequesterAndEmail, `${clientAddress} ${email}`, 'sign-in requests for this address');
      await enforce(deps.limiter, perEmail, email, 'sign-in requests for this address');
      if (input.redirect_url && !options.isAllowedRedirect(input.redirect_url)) {
        throw new ApiError('invalid_request', 'redirect_url is not on an allowed origin.', {
          details: [{ field: 'redirect_url', message: 'not an allowed origin' }],
        });
      }
      const token = randomSecret('mlt');
      const now = options.clock();
      await db.query('DELETE FROM magic_links WHERE expires_at < $1', [new Date(now - 24 * 3600 * 1000)]);
      await db.query('INSERT INTO magic_links (token_hash, email, redirect_url, expires_at) VALUES ($1, $2, $3, $4)', [
        hashSecret(token),
        email,
        input.redirect_url ?? null,
        new Date(now + options.ttlSeconds * 1000),
      ]);
      const link = `${options.publicUrl}/v1/auth/magic-link/verify?token=${encodeURIComponent(token)}`;
      const minutes = Math.round(options.ttlSeconds / 60);
      await deps.mailer.send({
        to: email,
        subject: 'Your Open Agent API sign-in link',
        text: `Sign in to Open Agent API with this link:\n\n${link}\n\nIt works once and expires in ${minutes} minutes. If you did not ask for it, ignore this message.\n`,
        html: `<p>Sign in to Open Agent API:</p><p><a href="${escapeHtml(link)}">Sign in</a></p><p>The link works once and expires in ${minutes} minutes. If you did not ask for it, ignore this message.</p>`,
      });
      return { expiresIn: options.ttlSeconds, link };
    },

    /** Redeems a token once; answers the access token and where the browser should go. */
    async verify(token: string): Promise<{ accessToken: AccessToken; redirectUrl: string | null }> {
      const link = await one<{ email: string; redirect_url: string | null }>(
        db,
        `UPDATE magic_links SET used_at = $2
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2
         RETURNING email, redirect_url`,
        [hashSecret(token), new Date(options.clock())],
      );
      if (!link) throw new ApiError('invalid_token', 'The sign-in link is invalid, expired or already used.');
      const { user, created } = await findOrCreateUser(db, link.email);
      const accessToken = await deps.sessions.issue(user, 'magic_link', created);
      return { accessToken, redirectUrl: link.redirect_url };
    },
  };
}

export type MagicLinks = ReturnType<typeof createMagicLinks>;

/** `redirect_url#access_token=…`: the fragment never reaches a server log or a Referer header. */
export function redirectWithToken(redirectUrl: string, token: AccessToken): string {
  const url = new URL(redirectUrl);
  url.hash = new URLSearchParams({
    access_token: token.access_token,
    token_type: token.token_type,
    expires_in: String(token.expires_in),
  }).toString();
  return url.toString();
}

export function redirectPolicy(publicUrl: string, allowedOrigins: string[]): (url: string) => boolean {
  const allowed = new Set([new URL(publicUrl).origin, ...allowedOrigins]);
  return (candidate) => {
    try {
      const url = new URL(candidate);
      return (url.protocol === 'https:' || url.protocol === 'http:') && allowed.has(url.origin);
    } catch {
      return false;
    }
  };
}

const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'];

function isLoopbackAddress(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name === '[::1]' || isLoopbackAddress(name);
}

/**
 * Whether a request came straight from this machine: over loopback, addressed to a loopback name, and
 * through no proxy. A tunnel or a reverse proxy on the same machine also connects over loopback, but it
 * forwards the public Host or adds its headers, so what it relays does not pass.
 */
export function isDirectLocalRequest(peerAddress: string, headers: Record<string, string | undefined>): boolean {
  return isLoopbackAddress(peerAddress) && isLoopbackHost(headers.host) && PROXY_HEADERS.every((name) => headers[name] === undefined);
}
