// Credential extraction and the 401 answer. Who a credential belongs to is the identity module's job.
import type { Request } from 'express';
import { ApiError } from '../errors.ts';
import type { Authenticator, Principal } from '../identity/principal.ts';

export type { Authenticator, Principal } from '../identity/principal.ts';

/** The caller as the domain knows it: the user, and the API key the request came with (null for a session). */
export function callerOf(principal: Principal): { userId: string; apiKeyId: string | null } {
  return { userId: principal.userId, apiKeyId: principal.credential.kind === 'api_key' ? principal.credential.id : null };
}

const REALM = 'Bearer realm="open-agent-api"';

/**
 * The credential from `Authorization: Bearer …`, `Authorization: Basic …` (the key as user name or as
 * password, the other empty, as Stripe takes keys: clients that can only put a credential in a URL's
 * userinfo send it so), or `X-API-Key`; undefined when none is sent.
 */
export function credentialOf(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const value = header.trim();
    const bearer = /^Bearer +([\x21-\x7e]{1,4096})$/i.exec(value);
    if (bearer?.[1]) return bearer[1];
    const basic = /^Basic +([A-Za-z0-9+/=]{1,8192})$/i.exec(value);
    if (basic?.[1]) return basicCredential(basic[1]);
    throw unauthorized('The Authorization header must be "Bearer <credential>", or Basic with the key as user name or password.', true);
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') {
    const value = apiKey.trim();
    if (!/^[\x21-\x7e]{1,4096}$/.test(value)) throw unauthorized('The X-API-Key header is malformed.', true);
    return value;
  }
  return undefined;
}

function basicCredential(encoded: string): string {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  const password = colon === -1 ? '' : decoded.slice(colon + 1);
  // With both given, the key is the one that looks like ours (Stripe's way: key as user name), or else the
  // password (the usual place of a secret beside a user name).
  const credential = user && password ? (user.startsWith('oaa_') ? user : password) : user || password;
  if (!/^[\x21-\x7e]{1,4096}$/.test(credential)) {
    throw unauthorized('HTTP Basic must carry the credential as the user name or the password.', true);
  }
  return credential;
}

export function unauthorized(message: string, credentialSent: boolean): ApiError {
  const challenge = credentialSent ? `${REALM}, error="invalid_token"` : REALM;
  return new ApiError('unauthorized', message, { headers: { 'WWW-Authenticate': challenge } });
}

export async function authenticateRequest(req: Request, authenticator: Authenticator): Promise<Principal> {
  const credential = credentialOf(req);
  if (credential === undefined) {
    throw unauthorized('A credential is required: send "Authorization: Bearer <key or token>" or "X-API-Key".', false);
  }
  const principal = await authenticator.authenticate(credential);
  if (!principal) throw unauthorized('The credential is invalid, expired or revoked.', true);
  return principal;
}
