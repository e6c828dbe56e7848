// Builds the providers a catalog names and the gateway over them, discovering upstream models first.
import type { Logger } from 'pino';
import type { UpstreamMetrics } from '../metrics/metrics.ts';
import { validateCatalog, withDiscovered, type Catalog, type ProviderSpec } from './catalog.ts';
import { createGateway, type ModelGateway } from './gateway.ts';
import { createLocalProvider } from './local.ts';
import { createOpenAIProvider } from './openai.ts';
import type { Provider } from './types.ts';

/** A provider for the spec; the Anthropic SDK (about 25 MB resident) is loaded only when a catalog names it. */
export async function createProvider(spec: ProviderSpec): Promise<Provider> {
  switch (spec.type) {
    case 'local':
      return createLocalProvider(spec.name, { tokenDelayMs: spec.tokenDelayMs ?? 0 });
    case 'openai-compatible':
      return createOpenAIProvider(spec);
    case 'anthropic':
      return (await import('./anthropic.ts')).createAnthropicProvider(spec);
  }
}

export async function createModelGateway(catalog: Catalog, options: { logger: Logger; clock: () => number; metrics?: UpstreamMetrics }): Promise<ModelGateway> {
  const providers = new Map<string, Provider>();
  for (const spec of catalog.providers) providers.set(spec.name, await createProvider(spec));
  let discovered = catalog;
  for (const spec of catalog.providers) {
    const provider = providers.get(spec.name);
    if (!spec.discover || !provider?.listModels) continue;
    try {
      const ids = await provider.listModels({ signal: AbortSignal.timeout(10_000) });
      discovered = withDiscovered(discovered, spec.name, ids);
      options.logger.info({ provider: spec.name, models: ids.length }, 'discovered upstream models');
    } catch (error) {
      options.logger.warn({ provider: spec.name, err: error }, 'could not list the upstream models; only configured models are served');
    }
  }
  return createGateway(validateCatalog(discovered), providers, {
    logger: options.logger,
    createdAt: options.clock(),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
}
