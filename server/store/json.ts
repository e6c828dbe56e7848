// JSON for jsonb columns that hold text from outside the request: what upstream models and tools answer.
// Requests are held to storable strings at the boundary (server/http/storable.ts); a model's answer is not
// the caller's fault, so the characters no store can keep are replaced by U+FFFD rather than failing the
// run that stores them.

/**
 * `JSON.stringify(value)`, with NUL and lone surrogates replaced by U+FFFD. JSON.stringify writes a lone
 * surrogate as a `\udxxx` escape and NUL as `\u0000`, and every other character needing an escape
 * differently, so one linear pass over the text (pairs of backslashes kept together) finds them all.
 */
export function storableJson(value: unknown): string {
  const json = JSON.stringify(value);
  if (!json.includes('\\u')) return json;
  return json.replace(/\\(\\|u0000|ud[89a-f][0-9a-f]{2})/g, (match, escaped: string) => (escaped === '\\' ? match : '\\ufffd'));
}
