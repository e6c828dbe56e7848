// Reads the configuration, builds the services, listens, and shuts down gracefully: stop accepting, let
// open streams end with a final event, finish what is in flight, close the store.
import { createServer } from 'node:http';
import { flushCompileCache } from 'node:module';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import { loadConfig, ConfigError } from './config.ts';
import { guardConnections } from './http/connections.ts';
import { createMemoryReducer, reduceMemory } from './memory.ts';
import { createServices } from './services.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const services = await createServices(config);
  const { logger, lifecycle } = services;
  const server = createServer(createApp(services));
  guardConnections(server, config);
  // Memory that start-up and busy spells leave behind goes back once the server is quiet (see memory.ts);
  // the pause that takes is not load, so load shedding does not count it.
  const memory = createMemoryReducer({
    afterStartMs: 1_000,
    quietMs: 10_000,
    busy: () => lifecycle.inFlight > 0,
    reduce: () => {
      const before = process.memoryUsage.rss();
      const since = performance.now();
      reduceMemory();
      services.load.discount();
      const mb = (bytes: number) => Math.round(bytes / 1048576);
      logger.debug({ rssMb: mb(process.memoryUsage.rss()), beforeMb: mb(before), ms: Math.round(performance.now() - since) }, 'memory given back');
    },
  });
  server.on('request', () => memory.activity());
  server.listen(config.port, config.host, () => {
    const { port } = server.address() as AddressInfo;
    logger.info({ port, url: config.publicUrl, store: services.db.engine }, 'listening');
    // The address a person opens first: said on its own line, so that it stands out in the log.
    const playgroundUrl = `${config.publicUrl}/playground/`;
    logger.info({ playground: playgroundUrl }, `playground at ${playgroundUrl}`);
    // What start-up compiled goes to the compile cache now (main.ts), not only at exit: a server that is
    // killed still leaves it for the next start.
    flushCompileCache();
  });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    memory.stop();
    logger.info({ signal, inFlight: lifecycle.inFlight }, 'shutting down');
    server.close();
    server.closeIdleConnections();
    const drained = await lifecycle.drain(config.shutdownTimeoutMs);
    if (!drained) logger.warn({ inFlight: lifecycle.inFlight }, 'requests still in flight at the shutdown timeout');
    server.closeAllConnections();
    await services.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`Configuration error: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exit(1);
});
