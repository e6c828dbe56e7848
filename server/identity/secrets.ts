import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A prefixed secret with 256 random bits, e.g. `oaa_…` for API keys. */
export function randomSecret(prefix: string, bytes = 32): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

/** Secrets are stored only as this hash. They carry 256 random bits, so a fast hash is enough. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
