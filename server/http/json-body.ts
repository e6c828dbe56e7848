// Checks on a JSON body's text before it is parsed, for what the contract's schemas cannot say but the
// server cannot take:
// - depth: JSON.parse takes any, but JSON.stringify and every recursive walk of a value (the store's, a
//   hash's) overflow the stack a few thousand levels down, so a small body of nested brackets would
//   answer 500. Bodies are refused past a depth no real request comes near.
// Strings no store can keep (NUL, lone surrogates) are refused after parsing, naming the field
// (server/http/storable.ts).
import { ApiError } from '../errors.ts';

export const MAX_JSON_DEPTH = 128;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

export interface JsonShape {
  /** How deep objects and arrays nest (brackets inside strings do not count). */
  depth: number;
}

/** Reads a JSON text once, without parsing it. */
export function jsonShape(text: Uint8Array): JsonShape {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (inString) {
      if (byte === BACKSLASH) {
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
  return { depth: deepest };
}

/** Throws the 400 for a body nested too deep. */
export function assertStorableJson(text: Uint8Array): void {
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH) {
    throw new ApiError('invalid_request', `The request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
  }
}
