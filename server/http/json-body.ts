// Checks on a JSON body's text before it is parsed, for what the contract's schemas cannot say but the
// server cannot take:
// - depth: JSON.parse takes any, but JSON.stringify and every recursive walk of a value (the store's, a
//   hash's) overflow the stack a few thousand levels down, so a small body of nested brackets would
//   answer 500. Bodies are refused past a depth no real request comes near.
// Strings no store can keep (NUL, lone surrogates) are refused after parsing, naming the field
// (server/http/storable.ts). A JSON text can only spell one with a `\u` escape (raw control characters are
// not JSON, and invalid UTF-8 decodes to U+FFFD), so the same pass notes whether it holds `\u0000` or an
// escaped surrogate: a body without one needs no walk after parsing.
import { ApiError } from '../errors.ts';

export const MAX_JSON_DEPTH = 128;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LOWER_U = 0x75;
const ZERO = 0x30;

/** Whether the four hex digits at `at` are 0000 or D800–DFFF. */
function unstorableEscape(text: Uint8Array, at: number): boolean {
  const first = text[at];
  if (first === ZERO) return text[at + 1] === ZERO && text[at + 2] === ZERO && text[at + 3] === ZERO;
  if ((first! | 0x20) !== 0x64) return false;
  const second = text[at + 1]! | 0x20;
  return second === 0x38 || second === 0x39 || (second >= 0x61 && second <= 0x66);
}

export interface JsonShape {
  /** How deep objects and arrays nest (brackets inside strings do not count). */
  depth: number;
  /** Whether a string holds `\u0000` or an escaped UTF-16 surrogate (paired or not). */
  unstorableEscapes: boolean;
}

/** Reads a JSON text once, without parsing it. */
export function jsonShape(text: Uint8Array): JsonShape {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  let unstorableEscapes = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (inString) {
      if (byte === BACKSLASH) {
        if (text[i + 1] === LOWER_U && unstorableEscape(text, i + 2)) unstorableEscapes = true;
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
  return { depth: deepest, unstorableEscapes };
}

/**
 * Throws the 400 for a body nested too deep; answers whether its strings need looking at once parsed
 * (they do when an escape could have spelt a string no store can keep).
 */
export function assertStorableJson(text: Uint8Array): { stringsToCheck: boolean } {
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH) {
    throw new ApiError('invalid_request', `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
  }
  return { stringsToCheck: shape.unstorableEscapes };
}
