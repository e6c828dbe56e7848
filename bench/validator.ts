// Whether server/http/route-matchers.ts (the cached path-to-regexp matchers inside
// express-openapi-validator) still pays: Express and the contract's request validator with a handler that
// answers at once (bench/validator-app.ts), with the cache and without, each in its own process, driven in
// alternation by autocannon at concurrency 16, three rounds each, on a route early in the contract
// (POST /v1/chat/completions) and one late in it (GET /v1/knowledge/documents/{id}).
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { printsUrl, startChild, table, type Proc } from './gateway.ts';
import type { BenchOptions, BenchSection } from './section.ts';

type Autocannon = (options: { url: string; method: string; headers: Record<string, string>; body?: string; connections: number; duration: number }) => PromiseLike<{
  requests: { average: number };
  non2xx: number;
  errors: number;
}>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const ROUNDS = 3;
const ROUTES = [
  { name: 'POST /v1/chat/completions', method: 'POST', path: '/v1/chat/completions', body: JSON.stringify({ model: 'gpt-bench', messages: [{ role: 'user', content: 'Hello' }] }) },
  { name: 'GET /v1/knowledge/documents/{id}', method: 'GET', path: '/v1/knowledge/documents/doc_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' },
];

async function run(options: BenchOptions) {
  const procs: Proc[] = [];
  try {
    const cached = await startChild(['bench/validator-app.ts', 'cached'], { NODE_ENV: 'production' }, printsUrl);
    procs.push(cached);
    const uncached = await startChild(['bench/validator-app.ts', 'uncached'], { NODE_ENV: 'production' }, printsUrl);
    procs.push(uncached);
    const loadBefore = loadavg()[0]!;
    const rows: { route: string; cached: number[]; uncached: number[]; failed: number }[] = [];
    for (const route of ROUTES) {
      const row = { route: route.name, cached: [] as number[], uncached: [] as number[], failed: 0 };
      const drive = async (url: string) => {
        const result = await autocannon({
          url: `${url}${route.path}`,
          method: route.method,
          headers: { 'content-type': 'application/json' },
          ...(route.body ? { body: route.body } : {}),
          connections: 16,
          duration: options.durationSeconds,
        });
        row.failed += result.non2xx + result.errors;
        return result.requests.average;
      };
      await drive(cached.url);
      await drive(uncached.url);
      for (let i = 0; i < ROUNDS; i++) {
        row.cached.push(await drive(cached.url));
        row.uncached.push(await drive(uncached.url));
      }
      rows.push(row);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const json = {
      section: 'validator',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version, loadAverageBefore: loadBefore, loadAverageAfter: loadavg()[0] },
      rows: rows.map((row) => ({ ...row, ratio: median(row.cached) / median(row.uncached) })),
    };
    const report = [
      table(
        ['route', 'cached req/s (rounds)', 'uncached req/s (rounds)', 'cached/uncached (medians)', 'failed'],
        json.rows.map((row) => [row.route, row.cached.map((v) => v.toFixed(0)).join(' / '), row.uncached.map((v) => v.toFixed(0)).join(' / '), row.ratio.toFixed(2), row.failed]),
      ),
      '',
      `load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after, on ${cpus().length} cores`,
    ].join('\n');
    return { report, json };
  } finally {
    for (const proc of procs.reverse()) await proc.stop();
  }
}

export const section: BenchSection = {
  name: 'validator',
  description: 'The request validator with and without the cached route matchers (server/http/route-matchers.ts), alternating, on an early and a late route.',
  run,
};
