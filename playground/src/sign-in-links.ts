// Where sign-in comes back to, and the token it brings: in the URL fragment after a redirect, or pasted.
import { apiRoot, type Credential } from './api.ts';

/** Where sign-in links and providers send the browser back to: this page, which reads the fragment. */
export function returnUrl(): string {
  return `${apiRoot()}/playground/`;
}

/** An access token in the URL fragment (`#access_token=…&expires_in=…`), as sign-in redirects deliver it. */
export function credentialFromFragment(hash: string, now = Date.now()): Credential | null {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const token = params.get('access_token');
  if (!token) return null;
  const expiresIn = Number(params.get('expires_in'));
  return { token, kind: 'session', ...(expiresIn > 0 ? { expiresAt: new Date(now + expiresIn * 1000).toISOString() } : {}) };
}

/** The token of a pasted sign-in link, or the pasted token itself. */
export function tokenOf(pasted: string): string {
  const text = pasted.trim();
  try {
    return new URL(text).searchParams.get('token') ?? text;
  } catch {
    return text;
  }
}
