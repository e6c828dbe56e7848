// The parts of a relayed chat completion that the design requires and the server cannot leave out, and
// nothing else: Express 5, express-openapi-validator checking the request against the contract (as the
// server configures it in production), and the relay to the OpenAI-compatible upstream (the provider the
// server uses: keep-alive node:http, the answer parsed and checked as far as metering and fallbacks need).
// No authentication, limits, metering, logs, fallbacks or error envelope. Its requests/s is the ceiling for
// a server built on these parts on this machine; the gap between it and the server is what the server's
// own work costs. Prints `{"url": …}` once listening; runs until killed.
//   node bench/required-parts.ts http://127.0.0.1:PORT/v1
import type { AddressInfo } from 'node:net';
import express from 'express';
import { validatorFor } from '../server/app.ts';
import { loadConfig } from '../server/config.ts';
import { loadContract } from '../server/http/contract.ts';
import { jsonBodyParser } from '../server/http/operations.ts';
import { createOpenAIProvider } from '../server/models/openai.ts';
import type { ProviderChatRequest } from '../server/models/types.ts';

const upstream = createOpenAIProvider({ name: 'bench', type: 'openai-compatible', baseUrl: process.argv[2] ?? '', apiKey: 'bench', timeoutMs: 60_000, discover: false });
const config = loadConfig({ NODE_ENV: 'production' });

const app = express();
app.set('query parser', 'simple');
app.set('etag', false);
app.post('/v1/chat/completions', jsonBodyParser(config.bodyLimitBytes), ...validatorFor(loadContract(), config), async (req, res) => {
  res.json(await upstream.chat(req.body as ProviderChatRequest, {}));
});

const server = app.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => process.exit(0));
