// Start-up and memory at rest (targets 4 and 6): the server as `npm start` runs it (server/main.ts,
// production mode) on the embedded default (PGlite in a fresh DATA_DIR) and on PostgreSQL (a fresh
// database on BENCH_DATABASE_URL's server, postgres://postgres@127.0.0.1:5432/test by default; skipped when none
// answers). Per engine: the first start (which creates and migrates the store), then three starts after
// it, each timed from spawn to the first healthy GET /health; the RSS of the idle server 5 s after it is
// healthy; PGlite alone opening the same data directory (bench/pglite-open.ts), the floor of a restart;
// and, through bench/memory-hook.ts, what that memory holds (the V8 heap, ArrayBuffers such as
// PGlite's WebAssembly memory, the rest), the packages loaded, and a heap snapshot broken down by kind;
// and the CPU the idle server spends, all its threads, over IDLE_CPU_SECONDS once it has settled.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { postgresReachable, withScratchDatabase } from '../server/testing/database.ts';
import { freePort, serverCommand, spawnLaunch, spawnNode, untilHealthy } from '../server/testing/processes.ts';
import { cpuSeconds, rssMb, table } from './gateway.ts';
import { breakDown } from './heap-snapshot.ts';
import type { BenchOptions, BenchSection } from './section.ts';

const RESTARTS = 3;
const IDLE_SECONDS = 5;
/** The idle CPU is measured from IDLE_CPU_AFTER seconds after healthy (start-up's garbage collected, the job queue's first pass done) for IDLE_CPU_SECONDS. */
const IDLE_CPU_AFTER = 30;
const IDLE_CPU_SECONDS = 30;
const postgresUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Start {
  ms: number;
  rssMb: number;
}

/** Starts the server, times it to healthy, optionally lets it idle and reports its memory, then stops it. */
async function start(env: Record<string, string>, report?: string): Promise<Start & { memory?: MemoryReport; idleCpuShare?: number }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let written: (() => void) | undefined;
  const begun = performance.now();
  const proc = spawnLaunch(serverCommand({ ...env, PORT: String(port), ...(report ? { MEMORY_REPORT_FILE: report } : {}) }, report ? ['--import', './bench/memory-hook.ts'] : []), (line) => {
    if (line.includes('memory report written')) written?.();
  });
  try {
    await untilHealthy(url, proc.child);
    const ms = performance.now() - begun;
    if (!report) return { ms, rssMb: rssMb(proc.child.pid).now };
    await sleep(IDLE_SECONDS * 1000);
    const rss = rssMb(proc.child.pid).now;
    await sleep((IDLE_CPU_AFTER - IDLE_SECONDS) * 1000);
    const cpuBefore = cpuSeconds(proc.child.pid!);
    await sleep(IDLE_CPU_SECONDS * 1000);
    const idleCpuShare = (cpuSeconds(proc.child.pid!) - cpuBefore) / IDLE_CPU_SECONDS;
    const done = new Promise<void>((resolve) => (written = resolve));
    proc.child.kill('SIGUSR2');
    await done;
    return { ms, rssMb: rss, idleCpuShare, memory: JSON.parse(readFileSync(report, 'utf8')) as MemoryReport };
  } finally {
    await proc.kill('SIGTERM');
  }
}

interface MemoryReport {
  memory: NodeJS.MemoryUsage;
  heapSpaces: { name: string; usedBytes: number }[];
  modules: Record<string, number>;
  snapshot: string;
}

/** Spawn to exit of bench/pglite-open.ts on the server's data directory, in ms. */
async function pgliteAlone(dataDir: string): Promise<number> {
  const begun = performance.now();
  const proc = spawnNode(['bench/pglite-open.ts', dataDir], {}, () => {});
  const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
  if (code !== 0) throw new Error(`bench/pglite-open.ts exited with ${code}`);
  return performance.now() - begun;
}

async function engineFigures(name: string, env: Record<string, string>, workDir: string) {
  const first = await start(env);
  const restarts: Start[] = [];
  for (let i = 0; i < RESTARTS; i++) restarts.push(await start(env));
  const storeAloneMs: number[] = [];
  if (name === 'pglite') for (let i = 0; i < RESTARTS; i++) storeAloneMs.push(await pgliteAlone(env.DATA_DIR!));
  const idle = await start(env, path.join(workDir, `${name}-memory.json`));
  const memory = idle.memory!;
  const heap = breakDown(memory.snapshot);
  rmSync(memory.snapshot, { force: true });
  const mb = (bytes: number) => bytes / 1048576;
  return {
    engine: name,
    firstStartMs: first.ms,
    restartMs: restarts.map((r) => r.ms),
    /** PGlite alone opening the same data directory: the floor of a restart on the embedded store. */
    storeAloneMs,
    idleRssMb: idle.rssMb,
    /** The share of one core the idle server spends. */
    idleCpuShare: idle.idleCpuShare!,
    memoryMb: {
      rss: mb(memory.memory.rss),
      heapTotal: mb(memory.memory.heapTotal),
      heapUsed: mb(memory.memory.heapUsed),
      external: mb(memory.memory.external),
      arrayBuffers: mb(memory.memory.arrayBuffers),
    },
    heapSpacesMb: Object.fromEntries(memory.heapSpaces.map((space) => [space.name, mb(space.usedBytes)])),
    modules: memory.modules,
    heap,
  };
}

async function run(_options: BenchOptions) {
  const workDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-startup-'));
  const loadBefore = loadavg()[0]!;
  try {
    const engines = [await engineFigures('pglite', { NODE_ENV: 'production', DATA_DIR: path.join(workDir, 'data') }, workDir)];
    if (await postgresReachable(postgresUrl)) {
      const env = { NODE_ENV: 'production', DATA_DIR: path.join(workDir, 'pgdata') };
      engines.push(await withScratchDatabase(postgresUrl, `oaa_bench_${process.pid}`, (url) => engineFigures('postgres', { ...env, DATABASE_URL: url }, workDir)));
    }
    const loadAfter = loadavg()[0]!;
    const f = (value: number) => value.toFixed(0);
    const json = {
      section: 'startup',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter },
      engines,
      targets: Object.fromEntries(
        engines.flatMap((e): [string, { value: number; target: string; met: boolean }][] => [
          [`idleRssMb_${e.engine}`, { value: e.idleRssMb, target: e.engine === 'pglite' ? '<= 300' : '<= 150', met: e.idleRssMb <= (e.engine === 'pglite' ? 300 : 150) }],
          ...(e.engine === 'pglite'
            ? [[`restartMs_${e.engine}`, { value: Math.max(...e.restartMs), target: '<= 3000', met: Math.max(...e.restartMs) <= 3000 }] as [string, { value: number; target: string; met: boolean }]]
            : []),
        ]),
      ),
    };
    const lines = [
      table(
        ['engine', 'first start ms', 'restarts ms', 'PGlite alone ms', 'idle CPU % of a core', 'idle RSS MB', 'V8 heap used MB', 'ArrayBuffers MB', 'external MB', 'rest of RSS MB'],
        engines.map((e) => [
          e.engine,
          f(e.firstStartMs),
          e.restartMs.map(f).join(' / '),
          e.storeAloneMs.length ? e.storeAloneMs.map(f).join(' / ') : '-',
          (e.idleCpuShare * 100).toFixed(1),
          e.idleRssMb.toFixed(1),
          e.memoryMb.heapUsed.toFixed(1),
          e.memoryMb.arrayBuffers.toFixed(1),
          e.memoryMb.external.toFixed(1),
          (e.memoryMb.rss - e.memoryMb.heapTotal - e.memoryMb.external).toFixed(1),
        ]),
      ),
    ];
    for (const e of engines) {
      lines.push(
        '',
        `${e.engine}: heap snapshot ${e.heap.totalMb.toFixed(1)} MB by kind: ${e.heap.byKind.map((k) => `${k.name} ${k.mb.toFixed(1)}`).join(', ')}`,
        `${e.engine}: largest constructors: ${e.heap.byConstructor.slice(0, 8).map((k) => `${k.name} ${k.mb.toFixed(1)}`).join(', ')}`,
        `${e.engine}: modules loaded by package: ${Object.entries(e.modules).slice(0, 20).map(([name, count]) => `${name} ${count}`).join(', ')}`,
      );
    }
    lines.push(
      '',
      `load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after, on ${cpus().length} cores`,
      ...Object.entries(json.targets).map(([name, t]) => `target: ${name} ${t.target}: ${t.value.toFixed(1)}, ${t.met ? 'met' : 'NOT met'}`),
    );
    return { report: lines.join('\n'), json };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

export const section: BenchSection = {
  name: 'startup',
  description: 'Start-up time to a healthy /health (first start, then restarts), idle memory with what it holds, and idle CPU, on PGlite and PostgreSQL.',
  run,
};
