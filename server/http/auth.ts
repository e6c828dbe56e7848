// Credential extraction and the 401 answer. Who a credential belongs to is the identity module's job.
import type { Request } from 'express';
import { ApiError } from '../errors.ts';

export interface Principal {
  userId: string;
  credential: { kind: 'api_key' | 'session'; id: string };
}

export interface Authenticator {
  /** The principal behind a credential, or null when it is unknown, expired, revoked or forged. */
  authenticate(credential: string): Promise<Principal | null>;
}

const REALM = 'Bearer realm="open-agent-api"';

/** The credential from `Authorization: Bearer …` or `X-API-Key`, or undefined when neither is sent. */
export function credentialOf(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer +([\x21-\x7e]{1,4096})$/i.exec(header.trim());
    if (!match?.[1]) throw unauthorized('The Authorization header must be "Bearer <credential>".', true);
    return match[1];
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') {
    const value = apiKey.trim();
    if (!/^[\x21-\x7e]{1,4096}$/.test(value)) throw unauthorized('The X-API-Key header is malformed.', true);
    return value;
  }
  return undefined;
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
