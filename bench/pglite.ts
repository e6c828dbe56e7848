// The cost of one statement on PGlite: PGlite's own query() (six trips into WebAssembly, the SQL parsed
// and planned each time) against the server's prepared statements (server/store/pglite-statements.ts, one
// trip each), on the same data directory and the same statements, alternating, in one run.
//   npm run bench -- pglite
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openPglite } from '../server/store/pglite.ts';
import { table } from './gateway.ts';
import type { BenchResult, BenchSection } from './section.ts';

const ROWS = 5_000;
const CALLS = 2_000;
const ROUNDS = 3;

interface Case {
  name: string;
  sql: string;
  params: (i: number) => unknown[];
}

const CASES: Case[] = [
  { name: 'primary-key look-up', sql: 'SELECT id, n, doc FROM things WHERE id = $1', params: (i) => [`k${i % ROWS}`] },
  { name: 'update by key', sql: 'UPDATE things SET n = n + 1 WHERE id = $1', params: (i) => [`k${i % ROWS}`] },
  { name: 'insert with jsonb', sql: 'INSERT INTO added (id, doc) VALUES ($1, $2)', params: (i) => [`a${i}-${Math.random()}`, JSON.stringify({ type: 'RunResponse', delta: `word${i} ` })] },
];

async function run(): Promise<BenchResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-pglite-'));
  const db = await openPglite({ dataDir });
  const pglite = db.native.engine === 'pglite' ? db.native.pglite : undefined;
  if (!pglite) throw new Error('PGlite expected');
  try {
    await db.exec(`CREATE TABLE things (id text PRIMARY KEY, n int, doc jsonb);
      CREATE TABLE added (id text PRIMARY KEY, doc jsonb);
      INSERT INTO things SELECT 'k' || g, g, jsonb_build_object('g', g) FROM generate_series(0, ${ROWS - 1}) g;`);
    const ways = {
      'PGlite query()': (sql: string, params: unknown[]) => pglite.query(sql, params),
      prepared: (sql: string, params: unknown[]) => db.query(sql, params as never[]),
    };
    const micros: Record<string, Record<string, number[]>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const item of CASES) {
        for (const [way, call] of Object.entries(ways)) {
          for (let i = 0; i < 100; i++) await call(item.sql, item.params(i));
          const start = performance.now();
          for (let i = 0; i < CALLS; i++) await call(item.sql, item.params(i));
          ((micros[item.name] ??= {})[way] ??= []).push(((performance.now() - start) * 1000) / CALLS);
        }
      }
    }
    const best = (values: number[]) => Math.min(...values);
    const rows = CASES.map((item) => {
      const [plain, prepared] = [best(micros[item.name]!['PGlite query()']!), best(micros[item.name]!.prepared!)];
      return [item.name, plain.toFixed(0), prepared.toFixed(0), (plain / prepared).toFixed(2)];
    });
    return {
      report: [
        `One statement on PGlite (a data directory; best of ${ROUNDS} rounds of ${CALLS} calls, alternating), µs per call:`,
        table(['statement', 'PGlite query()', 'prepared', 'ratio'], rows),
      ].join('\n'),
      json: { section: 'pglite', at: new Date().toISOString(), calls: CALLS, rounds: ROUNDS, microsPerCall: micros },
    };
  } finally {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const section: BenchSection = {
  name: 'pglite',
  description: 'One statement on PGlite: its own query() against the prepared statements the server uses',
  run,
};
