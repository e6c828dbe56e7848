// Checks on a JSON body's text before it is parsed, for what the contract's schemas cannot say but the
// server cannot take:
// - depth: JSON.parse takes any, but JSON.stringify and every recursive walk of a value (the store's, a
//   hash's) overflow the stack a few thousand levels down, so a small body of nested brackets would
//   answer 500. Bodies are refused past a depth no real request comes near.
// - NUL: PostgreSQL stores no U+0000 in text or jsonb, so a string holding one would fail at the store.
import { ApiError } from '../errors.ts';

export const MAX_JSON_DEPTH = 128;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LETTER_U = 0x75;
const DIGIT_ZERO = 0x30;

export interface JsonShape {
  /** How deep objects and arrays nest (brackets inside strings do not count). */
  depth: number;
  /** Whether a string holds U+0000 (`\u0000`; JSON allows it only escaped). */
  nul: boolean;
}

/** Reads a JSON text once, without parsing it. */
export function jsonShape(text: Uint8Array): JsonShape {
  let depth = 0;
  let deepest = 0;
  let nul = false;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (inString) {
      if (byte === BACKSLASH) {
        if (text[i + 1] === LETTER_U && text[i + 2] === DIGIT_ZERO && text[i + 3] === DIGIT_ZERO && text[i + 4] === DIGIT_ZERO && text[i + 5] === DIGIT_ZERO) nul = true;
        i++;
      } else if (byte === QUOTE) {
        inString = false;
      }
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return { depth: deepest, nul };
}

/** Throws the 400 for a body too deep or holding NUL. */
export function assertStorableJson(text: Uint8Array): void {
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH) {
    throw new ApiError('invalid_request', `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
  }
  if (shape.nul) throw new ApiError('invalid_request', 'Strings in the request body may not contain the NUL character (\\u0000).');
}
