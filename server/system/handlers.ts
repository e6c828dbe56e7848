import { timingSafeEqual } from 'node:crypto';
import swaggerUi from 'swagger-ui-express';
import { ApiError } from '../errors.ts';
import type { AppHandlers } from '../http/operations.ts';
import { METRICS_CONTENT_TYPE, type Metrics } from '../metrics/metrics.ts';
import type { Contract } from '../http/contract.ts';

export interface SystemDeps {
  contract: Contract;
  metrics: Metrics;
  /** Whether GET /metrics answers, and the bearer token it then asks for, if any. */
  metricsConfig: { enabled: boolean; token: string | undefined };
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

function sameSecret(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
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
    async getMetrics({ headers }) {
      const { enabled, token } = deps.metricsConfig;
      if (!enabled) throw new ApiError('not_found', 'No operation at GET /metrics: metrics are turned off on this server.');
      if (token !== undefined) {
        const presented = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
        if (presented === undefined || !sameSecret(presented, token)) {
          throw new ApiError('unauthorized', 'The metrics need the bearer token this server was configured with (METRICS_TOKEN).', {
            headers: { 'WWW-Authenticate': presented === undefined ? 'Bearer realm="metrics"' : 'Bearer realm="metrics", error="invalid_token"' },
          });
        }
      }
      return { status: 200, contentType: METRICS_CONTENT_TYPE, body: await deps.metrics.render() };
    },
  } satisfies Partial<AppHandlers>;
}
