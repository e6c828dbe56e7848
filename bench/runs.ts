// Concurrent streaming agent runs on the local model (target 3): N clients (100, then 1,000) each open a chat
// stream at once against a server in its own process, on PGlite and on PostgreSQL (a fresh database on
// BENCH_DATABASE_URL's server, postgres://postgres@127.0.0.1:5432/test by default; skipped when none
// answers); prints events per second, the delay between a stream's events beyond the model's own pace, the
// server's memory per open stream, the events per second it delivered against what every stream at once
// would take, and its RSS 30 s after the last round against where it started.
//   npm run bench -- runs              (BENCH_RUNS_ENGINES=pglite or postgres for one engine)
//   npm run bench -- runs --profile    also where the server's CPU goes over the last round, per event
//   BENCH_SERVER_ENV='{"OVERLOAD_EVENT_LOOP_DELAY_MS":"0"}' npm run bench -- runs   without load shedding
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { postgresReachable, withScratchDatabase } from '../server/testing/database.ts';
import { unlimitedPlanEnv } from '../server/testing/plans.ts';
import { runScript, startServerProcess } from '../test/e2e/server-process.ts';
import { summariseProfile, table, threadBudget, type CpuProfile } from './gateway.ts';
import type { BenchOptions, BenchResult, BenchSection } from './section.ts';

export const WORDS = 40;
/** The local model's pause between words: streams stay open long enough to overlap. */
const TOKEN_DELAY_MS = 20;
const CONCURRENCY = [100, 1000];
/** How long after the load the server's RSS is read again, and how far above where it started it may be. */
const SETTLE_SECONDS = 30;
const SETTLED_WITHIN = 0.1;
const postgresUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

interface Row {
  concurrency: number;
  completed: number;
  events: number;
  seconds: number;
  eventsPerSecond: number;
  /**
   * The events per second the round would take were every stream open at once and paced by the model
   * alone: its events over one reply's length at the model's pace. Against eventsPerSecond, how far the
   * server's one main thread is from serving the round as the target reads it.
   */
  eventsPerSecondAllAtOnce: number;
  gapP50: number;
  gapP99: number;
  addedP99: number;
  rssBaseMb: number;
  rssPeakMb: number;
  kbPerStream: number;
  /** Streams that did not complete, by status or last event. */
  failures: Record<string, number>;
  /** The most streams between their first and last text delta at one moment: how many streamed at once. */
  streamingAtOnce: number;
  /** Time from the round's start to a stream's first text delta, p50 and p99, in ms. */
  firstDeltaP50: number;
  firstDeltaP99: number;
}

/** The most intervals [first, last] that overlap at one moment. */
function mostAtOnce(streams: StreamFigures[]): number {
  const edges = streams.flatMap((stream) => (stream.firstDelta === undefined || stream.lastDelta === undefined ? [] : [[stream.firstDelta, 1] as const, [stream.lastDelta, -1] as const]));
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (open += step));
  return most;
}

interface StreamFigures {
  events: number;
  gaps: number[];
  ok: boolean;
  /** Why a stream that is not ok failed: its status, the last event's type, or `error`. */
  outcome: string;
  /** When its first and last text deltas arrived (performance.now()), if any did. */
  firstDelta?: number;
  lastDelta?: number;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Creates the agent the streams talk to; answers its id. */
export async function createBenchAgent(url: string, apiKey: string): Promise<string> {
  const created = await fetch(`${url}/v1/agents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'Bench', instructions: 'Echo.' }),
  });
  return ((await created.json()) as { id: string }).id;
}

/** Opens one chat stream and times the arrival of each of its events; `onFirstDelta` hears its first text delta. */
export function openStream(url: string, agentId: string, apiKey: string, agent: Agent, onFirstDelta?: () => void): Promise<StreamFigures> {
  const body = JSON.stringify({ messages: [{ role: 'user', content: Array.from({ length: WORDS }, (_, i) => `word${i}`).join(' ') }] });
  return new Promise((resolve) => {
    const req = request(
      `${url}/v1/agents/${agentId}/chat`,
      {
        method: 'POST',
        agent,
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      },
      (res) => {
        const gaps: number[] = [];
        let events = 0;
        let first: number | undefined;
        let last: number | undefined;
        let buffer = '';
        let terminal = false;
        let lastType = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const now = performance.now();
          buffer += text;
          const parts = buffer.split('\n\n');
          buffer = parts.pop() ?? '';
          for (const part of parts) {
            if (!part.startsWith('id:')) continue;
            events += 1;
            if (part.includes('event: RunResponse') && part.includes('"delta"')) {
              if (last !== undefined) gaps.push(now - last);
              if (first === undefined) {
                first = now;
                onFirstDelta?.();
              }
              last = now;
            }
            if (part.includes('event: RunCompleted')) terminal = true;
            lastType = /event: (\w+)/.exec(part)?.[1] ?? lastType;
          }
        });
        res.on('end', () =>
          resolve({ events, gaps, ok: res.statusCode === 200 && terminal, outcome: res.statusCode === 200 ? lastType || 'no events' : String(res.statusCode), firstDelta: first, lastDelta: last }),
        );
        res.on('error', () => resolve({ events, gaps, ok: false, outcome: 'error' }));
      },
    );
    req.on('error', () => resolve({ events: 0, gaps: [], ok: false, outcome: 'error' }));
    req.end(body);
  });
}

/** The server's environment for streaming runs: production, on `dataDir` unless extraEnv says otherwise, on an unlimited plan. */
export function runsServerEnv(dataDir: string, tokenDelayMs: number, extraEnv: Record<string, string>): Record<string, string> {
  return { NODE_ENV: 'production', LOG_LEVEL: 'info', DATA_DIR: dataDir, LOCAL_MODEL_TOKEN_DELAY_MS: String(tokenDelayMs), ...unlimitedPlanEnv(), ...extraEnv };
}

/** Both rounds on one engine, and the RSS before them and SETTLE_SECONDS after them. */
async function engineRounds(engine: string, extraEnv: Record<string, string>, profile: boolean) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-runs-'));
  const profileFile = path.join(dataDir, 'server.cpuprofile');
  const env = {
    ...runsServerEnv(dataDir, TOKEN_DELAY_MS, extraEnv),
    ...(process.env.BENCH_SERVER_ENV ? (JSON.parse(process.env.BENCH_SERVER_ENV) as Record<string, string>) : {}),
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
  };
  const apiKey = await runScript('scripts/create-key.ts', ['--email', 'bench-runs@example.com'], env);
  // With --profile, the server's CPU profile covers the last round only (see bench/cpu-profile-hook.ts).
  const server = await startServerProcess(profile ? { ...env, CPU_PROFILE_FILE: profileFile, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import ./bench/cpu-profile-hook.ts`.trim() } : env);
  const rows: Row[] = [];
  let cpu: ReturnType<typeof summariseProfile> | undefined;
  let rssStartMb: number;
  let rssSettledMb: number;
  try {
    const agentId = await createBenchAgent(server.url, apiKey);
    const pid = server.child.pid!;
    // Warm-up: one run end to end (the validator compiles an operation's checks at its first request, which
    // blocks the loop long enough for load shedding to refuse what comes right after), then a pause.
    await openStream(server.url, agentId, apiKey, new Agent({ keepAlive: false }));
    // The RSS the rounds start from is read after as long a quiet spell as the one after them, so that both
    // reads come after the server's own memory reduction and the allocator's return of freed pages.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
    rssStartMb = rssMb(pid);
    for (const concurrency of CONCURRENCY) {
      const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
      const rssBase = rssMb(pid);
      let rssPeak = rssBase;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(pid))), 50);
      const profiled = profile && concurrency === CONCURRENCY.at(-1);
      if (profiled) server.child.kill('SIGUSR2');
      const start = performance.now();
      const streams = await Promise.all(Array.from({ length: concurrency }, () => openStream(server.url, agentId, apiKey, agent)));
      const seconds = (performance.now() - start) / 1000;
      if (profiled) {
        const written = server.logs.length;
        server.child.kill('SIGUSR2');
        while (!server.logs.slice(written).some((line) => line.includes('cpu profile written'))) await new Promise((resolve) => setTimeout(resolve, 50));
        cpu = summariseProfile(JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile, streams.reduce((sum, stream) => sum + stream.events, 0));
      }
      clearInterval(sampler);
      agent.destroy();
      const gaps = streams.flatMap((stream) => stream.gaps);
      const events = streams.reduce((sum, stream) => sum + stream.events, 0);
      rows.push({
        concurrency,
        completed: streams.filter((stream) => stream.ok).length,
        events,
        seconds: Number(seconds.toFixed(2)),
        eventsPerSecond: Math.round(events / seconds),
        eventsPerSecondAllAtOnce: Math.round(events / ((WORDS * TOKEN_DELAY_MS) / 1000)),
        gapP50: Number(percentile(gaps, 50).toFixed(1)),
        gapP99: Number(percentile(gaps, 99).toFixed(1)),
        addedP99: Number(Math.max(0, percentile(gaps, 99) - TOKEN_DELAY_MS).toFixed(1)),
        rssBaseMb: Math.round(rssBase),
        rssPeakMb: Math.round(rssPeak),
        kbPerStream: Math.round(((rssPeak - rssBase) * 1024) / concurrency),
        streamingAtOnce: mostAtOnce(streams),
        firstDeltaP50: Number(percentile(streams.flatMap((stream) => (stream.firstDelta === undefined ? [] : [stream.firstDelta - start])), 50).toFixed(0)),
        firstDeltaP99: Number(percentile(streams.flatMap((stream) => (stream.firstDelta === undefined ? [] : [stream.firstDelta - start])), 99).toFixed(0)),
        failures: streams.filter((stream) => !stream.ok).reduce<Record<string, number>>((tally, stream) => ({ ...tally, [stream.outcome]: (tally[stream.outcome] ?? 0) + 1 }), {}),
      });
      // Let the server settle between rounds.
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    await new Promise((resolve) => setTimeout(resolve, (SETTLE_SECONDS - 2) * 1000));
    rssSettledMb = rssMb(pid);
  } finally {
    await server.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
  const big = rows.at(-1)!;
  return {
    engine,
    rows,
    ...(cpu ? { profile: cpu } : {}),
    rssStartMb: Math.round(rssStartMb),
    rssSettledMb: Math.round(rssSettledMb),
    targets: {
      kbPerStream: { value: big.kbPerStream, target: '<= 50', met: big.kbPerStream <= 50 },
      addedP99Ms: { value: big.addedP99, target: '<= 50', met: big.addedP99 <= 50 },
      settledRss: { value: Number((rssSettledMb / rssStartMb - 1).toFixed(3)), target: `<= ${SETTLED_WITHIN} above the start after ${SETTLE_SECONDS} s`, met: rssSettledMb <= rssStartMb * (1 + SETTLED_WITHIN) },
      allCompleted: { value: big.completed, target: `${big.concurrency}`, met: big.completed === big.concurrency },
      streamingAtOnce: { value: big.streamingAtOnce, target: `${big.concurrency}`, met: big.streamingAtOnce === big.concurrency },
    },
  };
}

/** What the last round delivered against what it would take at once, and with a profile what one thread can. */
function throughputLine(e: Awaited<ReturnType<typeof engineRounds>>): string {
  const last = e.rows.at(-1)!;
  const delivered = `${e.engine}: ${last.concurrency} streams delivered ${last.eventsPerSecond} events/s, ${(last.eventsPerSecond / last.eventsPerSecondAllAtOnce).toFixed(2)} of the ${last.eventsPerSecondAllAtOnce} all of them at once at the model's pace would take`;
  return e.profile ? `${delivered}; ${threadBudget(e.profile, last.eventsPerSecondAllAtOnce, 'event')}` : delivered;
}

async function run(options: BenchOptions): Promise<BenchResult> {
  const only = process.env.BENCH_RUNS_ENGINES?.split(',');
  const engines: Awaited<ReturnType<typeof engineRounds>>[] = [];
  if (!only || only.includes('pglite')) engines.push(await engineRounds('pglite', {}, options.profile));
  if ((!only || only.includes('postgres')) && (await postgresReachable(postgresUrl))) {
    engines.push(await withScratchDatabase(postgresUrl, `oaa_bench_runs_${process.pid}`, (url) => engineRounds('postgres', { DATABASE_URL: url }, options.profile)));
  }
  const header = ['engine', 'streams', 'completed', 'streaming at once', 'first delta p50 / p99 ms', 'events', 'seconds', 'events/s', 'events/s all at once', 'gap p50 ms', 'gap p99 ms', 'added p99 ms', 'RSS base MB', 'RSS peak MB', 'KB per stream'];
  const lines = engines.flatMap((e) =>
    e.rows.map((row) => [e.engine, row.concurrency, row.completed, row.streamingAtOnce, `${row.firstDeltaP50} / ${row.firstDeltaP99}`, row.events, row.seconds, row.eventsPerSecond, row.eventsPerSecondAllAtOnce, row.gapP50, row.gapP99, row.addedP99, row.rssBaseMb, row.rssPeakMb, row.kbPerStream].join(' | ')),
  );
  return {
    report: [
      `Streaming runs on the local model (${WORDS} words per reply, ${TOKEN_DELAY_MS} ms between words; server in production mode)`,
      `| ${header.join(' | ')} |`,
      `| ${header.map(() => '---').join(' | ')} |`,
      ...lines.map((line) => `| ${line} |`),
      '',
      ...engines.flatMap((e) => [
        ...e.rows.filter((row) => row.completed < row.concurrency).map((row) => `${e.engine}, ${row.concurrency} streams: incomplete by status or last event ${JSON.stringify(row.failures)}`),
        `${e.engine}: RSS ${e.rssStartMb} MB before the rounds, ${e.rssSettledMb} MB ${SETTLE_SECONDS} s after them`,
        ...Object.entries(e.targets).map(([name, t]) => `${e.engine}: target 3 ${name} ${t.target}: ${t.value}, ${t.met ? 'met' : 'NOT met'}`),
        throughputLine(e),
        ...(e.profile
          ? [
              '',
              `${e.engine}: CPU profile of the server over the last round: ${(e.profile.busyMs / 1000).toFixed(2)} s busy of ${(e.profile.windowMs / 1000).toFixed(2)} s, ${e.profile.cpuMicrosPerRequest.toFixed(0)} µs of CPU per event`,
              table(['where', 'share', 'µs/event'], e.profile.areas.slice(0, 15).map((area) => [area.name, `${(area.share * 100).toFixed(1)}%`, area.microsPerRequest.toFixed(1)])),
              '',
              table(['function (inclusive)', 'share', 'µs/event'], e.profile.inclusive.slice(0, 30).map((fn) => [fn.name, `${(fn.share * 100).toFixed(1)}%`, fn.microsPerRequest.toFixed(1)])),
              '',
            ]
          : []),
      ]),
    ].join('\n'),
    json: { section: 'runs', at: new Date().toISOString(), wordsPerReply: WORDS, tokenDelayMs: TOKEN_DELAY_MS, settleSeconds: SETTLE_SECONDS, engines },
  };
}

export const section: BenchSection = {
  name: 'runs',
  description: 'Concurrent streaming agent runs on the local model',
  run,
};
