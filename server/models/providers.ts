// Builds the providers a catalog names and the gateway over them, discovering upstream models first.
import type { Logger } from 'pino';
import type { UpstreamMetrics } from '../metrics/metrics.ts';
import { validateCatalog, withDiscovered, type Catalog, type ProviderSpec } from './catalog.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createGateway, type ModelGateway } from './gateway.ts';
import { createLocalProvider } from './local.ts';
import { createOpenAIProvider } from './openai.ts';
import type { Provider } from './types.ts';

export function createProvider(spec: ProviderSpec): Provider {
  switch (spec.type) {
    case 'local':
      return createLocalProvider(spec.name, { tokenDelayMs: spec.tokenDelayMs ?? 0 });
    case 'openai-compatible':
      return createOpenAIProvider(spec);
    case 'anthropic':
      return createAnthropicProvider(spec);
  }
}

export async function createModelGateway(catalog: Catalog, options: { logger: Logger; clock: () => number; metrics?: UpstreamMetrics }): Promise<ModelGateway> {
  const providers = new Map(catalog.providers.map((spec) => [spec.name, createProvider(spec)]));
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
