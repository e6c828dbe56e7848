// express-openapi-validator finds a request's operation by compiling the path-to-regexp matcher of every
// route again, on every request, until one matches: for an operation twenty routes down the list that is
// most of the validator's time (caching them upstream is proposed in
// https://github.com/cdimascio/express-openapi-validator/pull/1217). Compiling a matcher is a pure
// function of the route and the options, so the compiled matchers of the path-to-regexp module the
// validator loads are kept here. Only calls that can be cached (a string route, plain boolean options)
// are; anything else compiles as before.
import { createRequire } from 'node:module';

interface PathToRegexpModule {
  pathToRegexp(path: unknown, options?: Record<string, unknown>): { regexp: RegExp; keys: unknown[] };
}

const CACHEABLE_OPTIONS = new Set(['sensitive', 'strict', 'end', 'trailing']);
const installed = Symbol.for('open-agent-api.cachedRouteMatchers');

/** The path-to-regexp module as express-openapi-validator resolves it, not as this package would. */
export function validatorPathToRegexp(): PathToRegexpModule {
  const require = createRequire(import.meta.url);
  return createRequire(require.resolve('express-openapi-validator'))('path-to-regexp') as PathToRegexpModule;
}

/**
 * The cache key of a call, or undefined when it cannot be cached. Options count as path-to-regexp reads
 * them: by truthiness, with its defaults where unset.
 */
function cacheKey(path: unknown, options: Record<string, unknown> | undefined): string | undefined {
  if (typeof path !== 'string') return undefined;
  if (!options) return `1100 ${path}`;
  for (const name in options) if (!CACHEABLE_OPTIONS.has(name)) return undefined;
  const flag = (value: unknown, unset: boolean) => ((value === undefined ? unset : Boolean(value)) ? '1' : '0');
  return `${flag(options.end, true)}${flag(options.trailing, true)}${flag(options.sensitive, false)}${flag(options.strict, false)} ${path}`;
}

/** Makes the validator's route lookups reuse compiled matchers. Idempotent. */
export function cacheValidatorRouteMatchers(module: PathToRegexpModule = validatorPathToRegexp()): void {
  const target = module as PathToRegexpModule & { [installed]?: true };
  if (target[installed]) return;
  const compile = module.pathToRegexp;
  const compiled = new Map<string, ReturnType<PathToRegexpModule['pathToRegexp']>>();
  target.pathToRegexp = (path, options) => {
    const key = cacheKey(path, options);
    if (key === undefined) return compile(path, options);
    let matcher = compiled.get(key);
    if (!matcher) {
      matcher = compile(path, options);
      // The routes are the contract's, a fixed set; the bound only guards against a caller that is not.
      if (compiled.size >= 10_000) compiled.clear();
      compiled.set(key, matcher);
    }
    return matcher;
  };
  target[installed] = true;
}
