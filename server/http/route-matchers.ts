// express-openapi-validator finds a request's operation by compiling the path-to-regexp matcher of every
// route again, on every request, until one matches: for an operation twenty routes down the list that is
// most of the validator's time (caching them upstream is proposed in
// https://github.com/cdimascio/express-openapi-validator/pull/1217). Compiling a matcher is a pure
// function of the route and the options, so the compiled matchers of the path-to-regexp module the
// validator loads are kept here. Only calls that can be cached (a string route, plain boolean options)
// are; anything else compiles as before.
import type { NextFunction, Request, Response } from 'express';
import { validatorRequire } from './validator-start-up.ts';

interface PathToRegexpModule {
  pathToRegexp(path: unknown, options?: Record<string, unknown>): { regexp: RegExp; keys: unknown[] };
}

const CACHEABLE_OPTIONS = new Set(['sensitive', 'strict', 'end', 'trailing']);
const installed = Symbol.for('open-agent-api.cachedRouteMatchers');

/** The path-to-regexp module as express-openapi-validator resolves it, not as this package would. */
export function validatorPathToRegexp(): PathToRegexpModule {
  return validatorRequire('path-to-regexp') as PathToRegexpModule;
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

// Even with the matchers cached, that lookup tries the contract's routes one by one (an `Object.entries`,
// two app settings and a regular expression each) for every request: 90–120 µs of CPU for a chat
// completion, a tenth of the server's time on one (`npm run bench -- gateway --profile`). The server mounts
// each operation on its own Express route and runs the validator inside it, so Express has already found
// the route: the validator's metadata step takes the operation of `req.route.path` (the validator's
// Express-style paths are the ones the generated routes use) and the parameters Express decoded, and sets
// `req.openapi` as the validator's own lookup does. A request outside such a route (the validator mounted
// with `app.use`) or on a path the validator does not know goes through the validator's lookup as before.

interface RouteMethods {
  basePath: string;
  _openApiRoute: string;
  _expressRoute: string;
  [method: string]: unknown;
}

interface ValidatorContext {
  apiDoc: { paths: Record<string, Record<string, unknown>> };
  expressRouteMap: Record<string, RouteMethods>;
  serial: number;
  useRequestUrl: boolean;
  shouldIgnoreRoute(path: string): boolean;
}

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

interface ValidatorPrototype {
  metadataMiddleware(context: ValidatorContext, responseApiDoc: ValidatorContext['apiDoc'] | null): Middleware;
  [routedInstalled]?: true;
}

const routedInstalled = Symbol.for('open-agent-api.routedValidatorLookup');

/** What the validator's lookup sets for one operation, less the request's own path parameters. */
interface RoutedOperation {
  expressRoute: string;
  openApiRoute: string;
  schema: unknown;
  responseSchema: unknown;
}

/** The validator's metadata step, reading the operation from the Express route that took the request. */
export function routedMetadata(context: ValidatorContext, responseApiDoc: ValidatorContext['apiDoc'] | null, lookup: Middleware): Middleware {
  // Per method and Express route, built on first use: the request's method picks the operation.
  const operations = new Map<string, RoutedOperation | null>();
  const operationOf = (method: string, expressRoute: string): RoutedOperation | null => {
    const key = `${method} ${expressRoute}`;
    let operation = operations.get(key);
    if (operation !== undefined) return operation;
    const methods = Object.hasOwn(context.expressRouteMap, expressRoute) ? context.expressRouteMap[expressRoute] : undefined;
    const pathKey = methods?._openApiRoute.substring(methods.basePath.length);
    const schema = pathKey === undefined ? undefined : context.apiDoc.paths[pathKey]?.[method.toLowerCase()];
    operation =
      methods && schema ?
        { expressRoute: methods._expressRoute, openApiRoute: methods._openApiRoute, schema, responseSchema: responseApiDoc?.paths[pathKey!]?.[method.toLowerCase()] }
      : null;
    operations.set(key, operation);
    return operation;
  };
  return (req, res, next) => {
    const routePath: unknown = (req.route as { path?: unknown } | undefined)?.path;
    const operation = typeof routePath === 'string' && !context.useRequestUrl ? operationOf(req.method, routePath) : null;
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (!operation || context.shouldIgnoreRoute(path)) {
      lookup(req, res, next);
      return;
    }
    const pathParams = { ...req.params };
    const openapi: Record<string, unknown> = { expressRoute: operation.expressRoute, openApiRoute: operation.openApiRoute, pathParams, schema: operation.schema, serial: context.serial };
    if (responseApiDoc) openapi._responseSchema = operation.responseSchema;
    (req as Request & { openapi?: unknown }).openapi = openapi;
    req.params = pathParams;
    next();
  };
}

/** Makes the validator's metadata step use the Express route that took the request. Idempotent. */
export function lookUpValidatorRoutesByExpressRoute(): void {
  const { OpenApiValidator } = validatorRequire('./openapi.validator.js') as { OpenApiValidator: { prototype: ValidatorPrototype } };
  const prototype = OpenApiValidator.prototype;
  if (prototype[routedInstalled]) return;
  const original = prototype.metadataMiddleware;
  prototype.metadataMiddleware = function metadataMiddleware(this: unknown, context, responseApiDoc) {
    return routedMetadata(context, responseApiDoc, original.call(this, context, responseApiDoc));
  };
  prototype[routedInstalled] = true;
}
