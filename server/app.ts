// Builds the Express app from the handler map. Never listens; server/main.ts and the tests do.
import { randomUUID } from 'node:crypto';
import cors from 'cors';
import express, { type Express, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import helmet from 'helmet';
import multer from 'multer';
import swaggerUi from 'swagger-ui-express';
import { routes } from '../generated/server.gen.ts';
import type { Config } from './config.ts';
import { createStreamValidators, loadContract, type Contract } from './http/contract.ts';
import { settleUrlParseWarning } from './http/url-parse-warning.ts';
import { deferValidatorStartUpWork } from './http/validator-start-up.ts';
import { a2aErrorFormats } from './a2a/handlers.ts';
import { createErrorHandler, unmatchedRoute } from './http/error-handler.ts';
import { ApiError } from './errors.ts';
import { jsonBodyParser, mountOperations, type AppHandlers } from './http/operations.ts';
import { requestLog } from './http/request-log.ts';
import { cacheValidatorRouteMatchers, lookUpValidatorRoutesByExpressRoute } from './http/route-matchers.ts';
import { buildHandlers } from './handlers.ts';
import type { Lifecycle } from './lifecycle.ts';
import { limitGuards } from './limits/guards.ts';
import { mcpErrorFormats } from './mcp/handlers.ts';
import { playground } from './playground/serve.ts';
import type { Services } from './services.ts';
import { docsAssetOptions } from './system/handlers.ts';

export interface AppOptions {
  /** Replaces handlers of the map; tests use it to prove the contract checks what handlers return. */
  handlers?: Partial<AppHandlers>;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.headers['x-request-id'];
  req.id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
  res.setHeader('X-Request-Id', req.id);
  next();
};

function trackInFlight(lifecycle: Lifecycle): RequestHandler {
  return (_req, res, next) => {
    if (lifecycle.shuttingDown.aborted) {
      res.setHeader('Connection', 'close');
      next(new ApiError('service_unavailable', 'The server is shutting down; retry on another instance.'));
      return;
    }
    const done = lifecycle.track();
    res.on('close', done);
    res.on('finish', done);
    next();
  };
}

/** express-openapi-validator over the contract, as `config` has the server run it. */
export function validatorFor(contract: Contract, config: Config): RequestHandler[] {
  cacheValidatorRouteMatchers();
  lookUpValidatorRoutesByExpressRoute();
  deferValidatorStartUpWork();
  settleUrlParseWarning();
  return OpenApiValidator.middleware({
    // The validator dereferences in place, on a deep copy it makes of this itself.
    apiSpec: contract.document as never,
    validateApiSpec: config.env !== 'production',
    validateRequests: { allowUnknownQueryParameters: false, allErrors: config.env !== 'production' },
    validateResponses: config.validateResponses ? { allErrors: true } : false,
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: true,
    // Uploads (knowledge documents, the only multipart operation) are held in memory up to the knowledge limit.
    fileUploader: {
      storage: multer.memoryStorage(),
      limits: { fileSize: config.knowledge.maxBytes, files: 1, fields: 16, fieldSize: 64 * 1024 },
    },
  }) as unknown as RequestHandler[];
}

export function createApp(deps: Services, options: AppOptions = {}): Express {
  const { config, logger, lifecycle } = deps;
  const contract = loadContract();
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  // No ETags: the contract declares no 304 and no conditional requests, so hashing every body to make one
  // (and answering If-None-Match with an undeclared 304) is work on every call for nothing.
  app.set('etag', false);

  // First, so that a request's duration counts everything the server does for it.
  app.use(deps.metrics.requests);
  app.use(requestId);
  app.use(requestLog(app, logger));
  app.use(helmet());
  if (config.corsOrigins.length > 0) {
    app.use(
      cors({
        origin: config.corsOrigins.includes('*') ? '*' : config.corsOrigins,
        exposedHeaders: [
          'X-Request-Id',
          'Retry-After',
          'RateLimit',
          'RateLimit-Policy',
          'x-ratelimit-limit-requests',
          'x-ratelimit-remaining-requests',
          'x-ratelimit-reset-requests',
          'x-ratelimit-limit-tokens',
          'x-ratelimit-remaining-tokens',
          'Idempotent-Replayed',
        ],
        maxAge: 600,
      }),
    );
  }
  app.use(trackInFlight(lifecycle));
  const handlers = { ...buildHandlers(deps, contract), ...options.handlers };
  mountOperations(app, {
    handlers,
    authenticator: deps.authenticator,
    validator: validatorFor(contract, config),
    guards: limitGuards({ load: deps.load, planOf: deps.accountPlans.planOf, requestLimits: deps.requestLimits, quotas: deps.quotas }),
    jsonParser: jsonBodyParser(config.bodyLimitBytes),
    // A document's text plus room for the JSON around it; the text itself is held to the limit exactly.
    jsonLimits: { createKnowledgeDocument: Math.max(config.bodyLimitBytes, config.knowledge.maxBytes + 64 * 1024) },
    streamValidators: config.validateResponses ? createStreamValidators(contract, routes) : undefined,
    keepAliveMs: config.sseKeepAliveSeconds * 1000,
    shuttingDown: lifecycle.shuttingDown,
    idempotency: deps.idempotency,
    metrics: deps.metrics,
  });
  // After the operations, so that `GET /docs` itself is the contract's getApiDocs.
  app.use('/docs', swaggerUi.serveFiles(undefined, docsAssetOptions));
  app.use('/playground', playground());
  app.use(unmatchedRoute);
  app.use(createErrorHandler({ ...a2aErrorFormats, ...mcpErrorFormats(config.publicUrl) }));
  return app;
}
