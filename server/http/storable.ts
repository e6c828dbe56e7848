// Strings no store can keep, refused once where a request comes in rather than field by field: NUL
// (PostgreSQL holds no U+0000 in text or jsonb) and lone UTF-16 surrogates (`"\ud800"` is valid JSON but
// not Unicode; PostgreSQL refuses it, and it cannot be encoded as UTF-8 on the way out). Every part of a
// request is looked at: JSON bodies (object keys too), multipart fields and file names, the query and the
// path. Text a handler takes out of a file goes through `assertStorableText` the same way.
import type { RequestHandler } from 'express';
import { field as fieldPath, invalidRequest, type FieldLocation } from '../errors.ts';

export const NUL_MESSAGE = 'Strings may not contain the NUL character (\\u0000).';
export const SURROGATE_MESSAGE = 'Strings must be valid Unicode: this one holds a lone UTF-16 surrogate (\\ud800-\\udfff).';

/** Why a string cannot be stored, or undefined when it can. */
export function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return NUL_MESSAGE;
  if (!text.isWellFormed()) return SURROGATE_MESSAGE;
  return undefined;
}

export interface UnstorableString {
  /** The path to the string, or to the object whose key it is. */
  segments: (string | number)[];
  message: string;
}

/**
 * The first unstorable string in a value, keys included. Iterative, so that no nesting overflows the
 * stack; each value is visited once.
 */
export function findUnstorable(value: unknown): UnstorableString | undefined {
  const stack: { value: unknown; segments: (string | number)[] }[] = [{ value, segments: [] }];
  while (stack.length > 0) {
    const { value: current, segments } = stack.pop()!;
    if (typeof current === 'string') {
      const message = unstorable(current);
      if (message) return { segments, message };
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push({ value: current[index], segments: [...segments, index] });
    } else if (current !== null && typeof current === 'object' && !ArrayBuffer.isView(current)) {
      const entries = Object.entries(current);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, item] = entries[index]!;
        const message = unstorable(key);
        if (message) return { segments, message: `A key: ${message}` };
        stack.push({ value: item, segments: [...segments, key] });
      }
    }
  }
  return undefined;
}

function refuse(found: UnstorableString, where: FieldLocation, prefix: (string | number)[] = []) {
  const segments = [...prefix, ...found.segments];
  return invalidRequest(found.message, segments.length > 0 ? fieldPath(...segments) : undefined, where);
}

/** Throws the 400 naming `field` when `text` (taken out of a request's file, say) cannot be stored. */
export function assertStorableText(text: string, field: string): void {
  const message = unstorable(text);
  if (message) throw invalidRequest(message, field, 'body');
}

interface UploadedName {
  fieldname: string;
  originalname: string;
}

/** The boundary check, after the body (JSON or multipart) is parsed and before any handler. */
export const storableInput: RequestHandler = (req, _res, next) => {
  const parts: [FieldLocation, unknown][] = [
    ['path', req.params],
    ['query', req.query],
    // A JSON body whose text has no escape that could spell one is not walked (server/http/json-body.ts).
    ['body', req.storableJson ? undefined : req.body],
  ];
  for (const [where, value] of parts) {
    const found = findUnstorable(value);
    if (found) {
      next(refuse(found, where));
      return;
    }
  }
  for (const file of (req.files as UploadedName[] | undefined) ?? []) {
    const message = unstorable(file.originalname);
    if (message) {
      next(invalidRequest(`The file name: ${message}`, file.fieldname, 'body'));
      return;
    }
  }
  next();
};
