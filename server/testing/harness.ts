// Starts the real app on a random loopback port, with a fresh database, for tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOpenAgentClient, type OpenAgentClient } from '../../client/index.ts';
import { createApp, type AppOptions } from '../app.ts';
import { loadConfig } from '../config.ts';
import type { Mailer } from '../identity/mailer.ts';
import { findOrCreateUser } from '../identity/users.ts';
import { createServices, type Services } from '../services.ts';
import { guardConnections } from '../http/connections.ts';
import { createTestDatabase, type Engine } from './database.ts';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.ts';
import { unlimitedPlanEnv } from './plans.ts';

export interface TestServerOptions extends AppOptions {
  engine?: Engine;
  /** Environment variables on top of the test defaults. */
  env?: Record<string, string>;
  mailer?: Mailer;
  clock?: () => number;
  /** Another test server whose database this one uses, as a second instance of one deployment would. */
  shareDatabaseWith?: TestServer;
  /** Replaces the logger built from LOG_LEVEL, e.g. to capture what the server logs. */
  logger?: Logger;
}

export interface TestUser {
  userId: string;
  email: string;
  apiKey: string;
  client: OpenAgentClient;
}

export interface TestServer {
  url: string;
  services: Services;
  /** A new user with an API key, and a client that uses it. */
  signUp(email?: string): Promise<TestUser>;
  client(apiKey?: string): OpenAgentClient;
  close(): Promise<void>;
}

let users = 0;

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const shared = options.shareDatabaseWith?.services.db;
  // The owner closes and drops a shared database; this server only borrows it.
  const database = shared
    ? { db: { ...shared, async close() {} }, drop: async () => {} }
    : await createTestDatabase(options.engine ?? 'pglite');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-test-'));
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent', DATA_DIR: dataDir, PUBLIC_URL: url, ...options.env });
  guardConnections(server, config);
  const services = await createServices(config, {
    db: database.db,
    ...(options.mailer ? { mailer: options.mailer } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  server.on('request', createApp(services, options));

  const client = (apiKey?: string) => createOpenAgentClient({ baseUrl: url, ...(apiKey ? { apiKey } : {}) });
  return {
    url,
    services,
    client,
    async signUp(email = `user${++users}-${process.pid}@example.com`) {
      const { user } = await findOrCreateUser(services.db, email);
      const key = await services.apiKeys.create(user.id, { name: 'test' });
      return { userId: user.id, email, apiKey: key.secret, client: client(key.secret) };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await services.close().catch(() => undefined);
      await database.drop().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ScriptedServer {
  server: TestServer;
  user: TestUser;
  upstream: FakeOpenAI;
  close(): Promise<void>;
}

/**
 * A test server on a plan without limits whose OpenAI provider is a fake upstream serving the model
 * `scripted`, and one user: for agents and teams whose model answers a test scripts.
 */
export async function startScriptedServer(): Promise<ScriptedServer> {
  const upstream = await startFakeOpenAI({ models: ['scripted'] });
  const server = await startTestServer({ env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } }).catch(async (error: unknown) => {
    await upstream.close();
    throw error;
  });
  const close = async () => {
    await server.close();
    await upstream.close();
  };
  const user = await server.signUp().catch(async (error: unknown) => {
    await close();
    throw error;
  });
  return { server, user, upstream, close };
}
