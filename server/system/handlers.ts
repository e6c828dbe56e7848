import swaggerUi from 'swagger-ui-express';
import type { AppHandlers } from '../http/operations.ts';
import type { Contract } from '../http/contract.ts';

export interface SystemDeps {
  contract: Contract;
  startedAt: number;
  clock: () => number;
  /** Resolves true when the database answers. */
  databaseReady: () => Promise<boolean>;
}

export const docsAssetOptions = {
  swaggerUrl: '/openapi.yaml',
  swaggerOptions: { validatorUrl: null, deepLinking: true },
};

function docsPage(contract: Contract): string {
  const html = swaggerUi.generateHTML(undefined, {
    ...docsAssetOptions,
    customSiteTitle: `Open Agent API ${contract.version}`,
  });
  // The page is served at /docs, without a trailing slash, so its relative asset URLs need the prefix.
  return html.replace(/(href|src)="\.\//g, '$1="/docs/');
}

export function systemHandlers(deps: SystemDeps) {
  const page = docsPage(deps.contract);
  return {
    async getHealth() {
      const uptime = Math.floor((deps.clock() - deps.startedAt) / 1000);
      return { status: 200, body: { status: 'ok', version: deps.contract.version, uptime_seconds: uptime } };
    },
    async getReadiness() {
      const ready = await deps.databaseReady().catch(() => false);
      return ready
        ? { status: 200, body: { status: 'ready', checks: { database: 'ok' } } }
        : { status: 503, body: { status: 'not_ready', checks: { database: 'error' } } };
    },
    async getOpenApiDocument() {
      return { status: 200, contentType: 'application/yaml', body: deps.contract.text };
    },
    async getApiDocs() {
      return { status: 200, contentType: 'text/html', body: page };
    },
  } satisfies Partial<AppHandlers>;
}
