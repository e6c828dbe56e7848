import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/**
 * A new id: a type prefix and 26 Crockford base32 characters, the first 10 the creation time in
 * milliseconds, so ids sort by age and serve as pagination cursors; the rest 80 random bits.
 */
export function newId(prefix: string, now = Date.now()): string {
  const random = randomBytes(10);
  let tail = '';
  for (let i = 0; i < 16; i++) {
    // 16 groups of 5 bits from 80 random bits.
    const bit = i * 5;
    const byte = bit >> 3;
    const value = ((random[byte]! << 8) | (random[byte + 1] ?? 0)) >> (11 - (bit & 7));
    tail += ALPHABET[value & 31];
  }
  return `${prefix}_${encodeTime(now)}${tail}`;
}
