import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors.ts';
import type { AppHandlers } from '../http/operations.ts';
import { METRICS_CONTENT_TYPE, type Metrics } from './metrics.ts';

export interface MetricsDeps {
  metrics: Metrics;
  config: { enabled: boolean; token: string | undefined };
}

function sameSecret(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function metricsHandlers(deps: MetricsDeps) {
  const { enabled, token } = deps.config;
  return {
    async getMetrics({ headers }) {
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
