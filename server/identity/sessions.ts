// Access tokens are JWTs (HS256) naming a stored session, so that signing out revokes one at once.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type * as Jose from 'jose';
import type { components } from '../../generated/openapi.gen.ts';
import type { Principal } from './principal.ts';
import { one, type Queryable } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { toAccount, type UserRow } from './users.ts';

export type AccessToken = components['schemas']['AccessToken'];

/** jose, loaded with the first sign-in or session token: API keys never need it (0.08 s of start-up). */
let joseModule: Promise<typeof Jose> | undefined;
const loadJose = (): Promise<typeof Jose> => (joseModule ??= import('jose'));

const AUDIENCE = 'open-agent-api';

/** JWT_SECRET, or a secret generated once and kept in DATA_DIR so that tokens survive restarts. */
export function loadJwtSecret(configured: string | undefined, dataDir: string): Uint8Array {
  if (configured) return new TextEncoder().encode(configured);
  const file = path.resolve(dataDir, 'jwt-secret');
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(32);
    // `wx` fails if another process wrote it meanwhile; then its secret wins.
    try {
      writeFileSync(file, secret.toString('base64url'), { mode: 0o600, flag: 'wx' });
      return secret;
    } catch {
      return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
    }
  }
}

export interface SessionOptions {
  secret: Uint8Array;
  issuer: string;
  ttlSeconds: number;
  clock: () => number;
}

export function createSessionStore(db: Queryable, options: SessionOptions) {
  return {
    /** Starts a session for `user` and answers its access token. */
    async issue(user: UserRow, method: string, newUser: boolean): Promise<AccessToken> {
      const now = options.clock();
      const expiresAt = new Date(now + options.ttlSeconds * 1000);
      const sessionId = newId('sess');
      await db.query('INSERT INTO auth_sessions (id, user_id, method, expires_at) VALUES ($1, $2, $3, $4)', [
        sessionId,
        user.id,
        method,
        expiresAt,
      ]);
      const { SignJWT } = await loadJose();
      const token = await new SignJWT({ sid: sessionId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(user.id)
        .setIssuer(options.issuer)
        .setAudience(AUDIENCE)
        .setIssuedAt(Math.floor(now / 1000))
        .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
        .sign(options.secret);
      return {
        object: 'access_token',
        access_token: token,
        token_type: 'Bearer',
        expires_in: options.ttlSeconds,
        expires_at: expiresAt.toISOString(),
        new_user: newUser,
        account: toAccount(user),
      };
    },

    /** The principal of a valid, unexpired, unrevoked token; null for anything else. */
    async authenticate(token: string): Promise<Principal | null> {
      let sessionId: unknown;
      let userId: string | undefined;
      const { jwtVerify, errors: joseErrors } = await loadJose();
      try {
        const { payload } = await jwtVerify(token, options.secret, {
          algorithms: ['HS256'],
          issuer: options.issuer,
          audience: AUDIENCE,
          currentDate: new Date(options.clock()),
        });
        sessionId = payload.sid;
        userId = payload.sub;
      } catch (error) {
        if (error instanceof joseErrors.JOSEError) return null;
        throw error;
      }
      if (typeof sessionId !== 'string' || !userId) return null;
      const session = await one<{ user_id: string }>(
        db,
        'SELECT user_id FROM auth_sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2',
        [sessionId, new Date(options.clock())],
      );
      if (!session || session.user_id !== userId) return null;
      return { userId, credential: { kind: 'session', id: sessionId } };
    },

    async revoke(sessionId: string): Promise<void> {
      await db.query('UPDATE auth_sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [sessionId]);
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
