// Whether server/http/route-matchers.ts still pays: Express and the contract's request validator with a
// handler that answers at once (bench/validator-app.ts) in three processes: mounted in each operation's
// route as the server mounts it (the validator takes the operation from the Express route), mounted with
// app.use (it looks the operation up through the cached path-to-regexp matchers), and as it ships. Driven
// in alternation by autocannon at concurrency 16, three rounds each, on a route early in the contract
// (POST /v1/chat/completions) and one late in it (GET /v1/knowledge/documents/{id}).
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { printsUrl, startChild, table, type Proc } from './gateway.ts';
import { nodeLaunch } from '../server/testing/processes.ts';
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

const MODES = ['routed', 'cached', 'uncached'] as const;
type Mode = (typeof MODES)[number];

async function run(options: BenchOptions) {
  const procs: Proc[] = [];
  try {
    const apps = {} as Record<Mode, Proc>;
    for (const mode of MODES) {
      apps[mode] = await startChild(nodeLaunch(['bench/validator-app.ts', mode], { NODE_ENV: 'production' }), printsUrl);
      procs.push(apps[mode]);
    }
    const loadBefore = loadavg()[0]!;
    const rows: ({ route: string; failed: number } & Record<Mode, number[]>)[] = [];
    for (const route of ROUTES) {
      const row = { route: route.name, failed: 0, routed: [] as number[], cached: [] as number[], uncached: [] as number[] };
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
      for (const mode of MODES) await drive(apps[mode].url);
      for (let i = 0; i < ROUNDS; i++) {
        for (const mode of MODES) row[mode].push(await drive(apps[mode].url));
      }
      rows.push(row);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const json = {
      section: 'validator',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version, loadAverageBefore: loadBefore, loadAverageAfter: loadavg()[0] },
      rows: rows.map((row) => ({ ...row, routedOverUncached: median(row.routed) / median(row.uncached), cachedOverUncached: median(row.cached) / median(row.uncached) })),
    };
    const rounds = (values: number[]) => values.map((v) => v.toFixed(0)).join(' / ');
    const report = [
      table(
        ['route', 'routed req/s (rounds)', 'cached req/s', 'uncached req/s', 'routed/uncached', 'cached/uncached (medians)', 'failed'],
        json.rows.map((row) => [row.route, rounds(row.routed), rounds(row.cached), rounds(row.uncached), row.routedOverUncached.toFixed(2), row.cachedOverUncached.toFixed(2), row.failed]),
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
  description: 'The request validator taking the operation from the Express route, looking it up through the cached route matchers, and as it ships (server/http/route-matchers.ts), alternating, on an early and a late route.',
  run,
};
