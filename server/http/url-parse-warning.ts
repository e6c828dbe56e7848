// express-openapi-validator reads each request's query string with Node's legacy `url.parse()`. Node warns
// about `url.parse()` (DEP0169) once, and only for a call from outside node_modules. Until it has warned,
// every call checks where it comes from by capturing the call stack, which behind Express's middleware
// costs 10–20 µs of each validated request (the `urlParse` line of `npm run bench -- gateway --profile`),
// though the validator's calls never warn. One call from here, with deprecation warnings off for that call
// alone, settles the check for the process. This code base does not call `url.parse()` itself (eslint
// refuses it), so the warning it forgoes is one nothing here would have given.
import url from 'node:url';

let settled = false;

/** Settles Node's one-time `url.parse()` warning check without printing the warning. */
export function settleUrlParseWarning(): void {
  if (settled) return;
  settled = true;
  const noDeprecation = process.noDeprecation;
  process.noDeprecation = true;
  try {
    // eslint-disable-next-line no-restricted-properties -- the one call, made for the reason above
    url.parse('/');
  } finally {
    process.noDeprecation = noDeprecation;
  }
}
