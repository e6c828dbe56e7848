// What an open agent run holds in the server's heap (target 3's memory per stream): RUNS chat streams opened
// at once on the local model at a pace slow enough that none ends meanwhile, a heap snapshot of the server
// at rest and another once every stream has had its first text delta, and what grew between the two per
// run, by what each object is and what holds it. On PGlite and on PostgreSQL (a fresh database on
// BENCH_DATABASE_URL's server, postgres://postgres@127.0.0.1:5432/test by default; skipped when none answers).
//   npm run bench -- held              (BENCH_RUNS_ENGINES=pglite or postgres for one engine; BENCH_STREAMS=N runs)
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresReachable, withScratchDatabase } from '../server/testing/database.ts';
import { runScript, startServerProcess, type ServerProcess } from '../test/e2e/server-process.ts';
import { table } from './gateway.ts';
import { growthPerItem } from './heap-snapshot.ts';
import { createBenchAgent, openStream, runsServerEnv, WORDS } from './runs.ts';
import type { BenchResult, BenchSection } from './section.ts';

const RUNS = Number(process.env.BENCH_STREAMS ?? 1000);
/** The local model's pause between words: a reply of the bench's WORDS takes REPLY_SECONDS, longer than opening them all. */
const TOKEN_DELAY_MS = 1000;
const REPLY_SECONDS = (WORDS * TOKEN_DELAY_MS) / 1000;
const postgresUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Has the server's memory hook write a heap snapshot; answers the file, renamed to `name`. */
async function snapshot(server: ServerProcess, report: string, name: string): Promise<{ file: string; heapUsedMb: number }> {
  const written = server.logs.length;
  server.child.kill('SIGUSR2');
  while (!server.logs.slice(written).some((line) => line.includes('memory report written'))) await sleep(100);
  const file = path.join(path.dirname(report), `${name}.heapsnapshot`);
  renameSync(`${report}.heapsnapshot`, file);
  const { memory } = JSON.parse(readFileSync(report, 'utf8')) as { memory: NodeJS.MemoryUsage };
  return { file, heapUsedMb: memory.heapUsed / 1048576 };
}

async function engineHeld(engine: string, extraEnv: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-held-'));
  const report = path.join(dataDir, 'memory.json');
  const env = {
    // Load shedding would refuse some of the streams opened at once; here every one must be open.
    ...runsServerEnv(dataDir, TOKEN_DELAY_MS, { OVERLOAD_EVENT_LOOP_DELAY_MS: '0', ...extraEnv }),
    MEMORY_REPORT_FILE: report,
    NODE_OPTIONS: '--import ./bench/memory-hook.ts',
  };
  const apiKey = await runScript('scripts/create-key.ts', ['--email', 'bench-held@example.com'], env);
  const server = await startServerProcess(env);
  try {
    const agentId = await createBenchAgent(server.url, apiKey);
    const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
    // One run end to end first, so that what its first use compiles or caches is in both snapshots.
    await openStream(server.url, agentId, apiKey, agent);
    const rest = await snapshot(server, report, 'rest');
    let started = 0;
    const streams = Promise.all(Array.from({ length: RUNS }, () => openStream(server.url, agentId, apiKey, agent, () => (started += 1))));
    const opening = performance.now();
    while (started < RUNS) await sleep(100);
    const openedSeconds = (performance.now() - opening) / 1000;
    // A stream that ended before the second snapshot would not be in it: the figures would be too low.
    if (openedSeconds >= REPLY_SECONDS) throw new Error(`opening ${RUNS} streams took ${openedSeconds.toFixed(1)} s, as long as a reply`);
    const open = await snapshot(server, report, 'open');
    const finished = await streams;
    agent.destroy();
    const completed = finished.filter((stream) => stream.ok).length;
    return { engine, completed, openedSeconds, heapUsedMb: { rest: rest.heapUsedMb, open: open.heapUsedMb }, ...growthPerItem(rest.file, open.file, RUNS) };
  } finally {
    await server.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function run(): Promise<BenchResult> {
  const only = process.env.BENCH_RUNS_ENGINES?.split(',');
  const engines: Awaited<ReturnType<typeof engineHeld>>[] = [];
  if (!only || only.includes('pglite')) engines.push(await engineHeld('pglite', {}));
  if ((!only || only.includes('postgres')) && (await postgresReachable(postgresUrl))) {
    engines.push(await withScratchDatabase(postgresUrl, `oaa_bench_held_${process.pid}`, (url) => engineHeld('postgres', { DATABASE_URL: url })));
  }
  const report = engines.flatMap((e) => [
    `${e.engine}: ${e.completed} of ${RUNS} runs completed, all open at once after ${e.openedSeconds.toFixed(1)} s; V8's heap in use ${e.heapUsedMb.rest.toFixed(1)} → ${e.heapUsedMb.open.toFixed(1)} MB; ` +
      `live objects a run: ${(e.bytes / 1024).toFixed(1)} KB in ${Math.round(e.objects)} objects`,
    table(
      ['what', 'held by', 'objects a run', 'bytes a run'],
      e.groups.map((group) => [group.what, group.heldBy, group.count.toFixed(1), group.bytes.toFixed(0)]),
    ),
    '',
  ]);
  return { report: report.join('\n'), json: { section: 'held', at: new Date().toISOString(), runs: RUNS, tokenDelayMs: TOKEN_DELAY_MS, engines } };
}

export const section: BenchSection = {
  name: 'held',
  description: `What an open agent run holds in the server's heap: ${RUNS} chat streams open at once on the local model, heap snapshots at rest and open, and what grew per run, by what each object is and what holds it.`,
  run,
};
