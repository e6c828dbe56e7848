// Liveness, readiness, the contract document and the docs page: public, and the first thing an operator tries.
import { parse } from 'yaml';
import type { Check } from '../context.ts';

export const systemChecks: Check[] = [
  {
    name: 'health',
    operations: ['getHealth'],
    async run(t) {
      const health = await t.call('getHealth', { expect: 200 });
      t.check('getHealth', (health.json as { status?: string } | undefined)?.status === 'ok', 'GET /health does not say status ok');
    },
  },
  {
    name: 'readiness',
    operations: ['getReadiness'],
    async run(t) {
      const ready = await t.call('getReadiness', { expect: [200, 503] });
      const status = (ready.json as { status?: string } | undefined)?.status;
      t.check('getReadiness', (ready.status === 200) === (status === 'ready'), `GET /ready answered ${ready.status} with status ${status}`);
      if (ready.status === 503) t.note('getReadiness', 'the server says it is not ready (503, as declared)');
    },
  },
  {
    name: 'contract document',
    operations: ['getOpenApiDocument'],
    async run(t) {
      const document = await t.call('getOpenApiDocument', { expect: 200 });
      let parsed: { openapi?: unknown; info?: { version?: unknown }; paths?: unknown } | undefined;
      try {
        parsed = parse(document.text) as typeof parsed;
      } catch (error) {
        t.check('getOpenApiDocument', false, `GET /openapi.yaml is not YAML: ${(error as Error).message}`);
        return;
      }
      t.check('getOpenApiDocument', /^3\.1\./.test(String(parsed?.openapi)), `GET /openapi.yaml is not OpenAPI 3.1 (openapi: ${String(parsed?.openapi)})`);
      t.check('getOpenApiDocument', typeof parsed?.paths === 'object' && parsed.paths !== null, 'GET /openapi.yaml has no paths');
      if (parsed?.info?.version !== t.contract.version) {
        t.note('getOpenApiDocument', `the server serves contract ${String(parsed?.info?.version)}; the kit checks against ${t.contract.version}`);
      }
    },
  },
  {
    name: 'metrics',
    operations: ['getMetrics'],
    async run(t) {
      // Operators may turn metrics off (404) or put them behind a token (401); both are declared.
      const metrics = await t.call('getMetrics', { expect: [200, 401, 404] });
      if (metrics.status === 200) {
        t.check('getMetrics', /^# (HELP|TYPE) /m.test(metrics.text), 'GET /metrics is not in the Prometheus text format');
      } else {
        t.skip('getMetrics', `metrics are ${metrics.status === 401 ? 'behind a token' : 'turned off'} (${metrics.status}, as declared)`);
      }
    },
  },
  {
    name: 'docs',
    operations: ['getApiDocs'],
    async run(t) {
      const docs = await t.call('getApiDocs', { expect: 200 });
      t.check('getApiDocs', /<html/i.test(docs.text), 'GET /docs is not an HTML page');
    },
  },
];
