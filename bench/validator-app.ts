// Express 5 and the contract's request validator as the server configures them in production, and a
// handler that answers at once: what validating a request costs, with or without the cached route
// matchers of server/http/route-matchers.ts (`node bench/validator-app.ts uncached` leaves
// express-openapi-validator's path-to-regexp as it ships). Prints `{"url": …}` once listening.
import type { AddressInfo } from 'node:net';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import multer from 'multer';
import { validatorFor } from '../server/app.ts';
import { loadConfig } from '../server/config.ts';
import { loadContract } from '../server/http/contract.ts';
import { jsonBodyParser } from '../server/http/operations.ts';

const cached = process.argv[2] !== 'uncached';
const config = loadConfig({ NODE_ENV: 'production' });
const contract = loadContract();
const validator = cached
  ? validatorFor(contract, config)
  : (OpenApiValidator.middleware({
      // As validatorFor configures it, without installing the matcher cache.
      apiSpec: structuredClone(contract.document) as never,
      validateApiSpec: false,
      validateRequests: { allowUnknownQueryParameters: false, allErrors: false },
      validateResponses: false,
      validateSecurity: false,
      validateFormats: true,
      ignoreUndocumented: true,
      fileUploader: { storage: multer.memoryStorage(), limits: { fileSize: config.knowledge.maxBytes, files: 1, fields: 16, fieldSize: 64 * 1024 } },
    }) as unknown as express.RequestHandler[]);

const app = express();
app.set('query parser', 'simple');
app.set('etag', false);
app.use(jsonBodyParser(config.bodyLimitBytes), ...validator, (_req, res) => {
  res.json({ ok: true });
});
app.use((error: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  res.status(error.status ?? 500).json({ error: String(error) });
});

const server = app.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, cached }));
});
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => process.exit(0));
