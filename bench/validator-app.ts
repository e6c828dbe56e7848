// Express 5 and the contract's request validator as the server configures them in production, and a
// handler that answers at once: what validating a request costs with the lookups of
// server/http/route-matchers.ts and without. `routed` mounts the validator inside each operation's Express
// route, as the server does, so that it takes the operation from the route; `cached` mounts it with
// app.use, so that it looks the operation up through the cached route matchers; `uncached` leaves
// express-openapi-validator as it ships. Prints `{"url": …}` once listening.
import type { AddressInfo } from 'node:net';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import multer from 'multer';
import { validatorFor } from '../server/app.ts';
import { loadConfig } from '../server/config.ts';
import { loadContract } from '../server/http/contract.ts';
import { jsonBodyParser } from '../server/http/operations.ts';

const mode = process.argv[2] ?? 'routed';
const cached = mode !== 'uncached';
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
const answer = (_req: express.Request, res: express.Response) => {
  res.json({ ok: true });
};
if (mode === 'routed') {
  // The routes bench/validator.ts drives, each mounted as server/http/operations.ts mounts an operation.
  app.post('/v1/chat/completions', jsonBodyParser(config.bodyLimitBytes), ...validator, answer);
  app.get('/v1/knowledge/documents/:documentId', ...validator, answer);
} else {
  app.use(jsonBodyParser(config.bodyLimitBytes), ...validator, answer);
}
app.use((error: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  res.status(error.status ?? 500).json({ error: String(error) });
});

const server = app.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, mode }));
});
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => process.exit(0));
