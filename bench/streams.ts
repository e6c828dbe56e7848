// Streams through the gateway at scale: N concurrent streamed chat completions (512 by default) of 64
// content chunks each, paced at 20 ms by the loopback upstream (bench/upstream.ts, its own process), read
// first directly from the upstream, then through a bare node:http pass-through proxy (the floor any extra
// HTTP hop costs on this machine), then through the server (server/main.ts in production mode, as in the
// gateway section), by the same client in this process. Per stream it records the time to the first
// content chunk and the gap between content chunks as they arrive; the figures that count are what the
// server adds over the direct run: stalled chunks (a gap over 200 ms), the inter-chunk p99 and the TTFT
// p99. The client only counts chunks (it does not parse their JSON), so that it adds as little as it can.
//   npm run bench -- streams            (BENCH_STREAMS=128 for fewer)
//   npm run bench -- streams --profile  also a CPU profile of the server over its measured round: µs per content chunk
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { percentile, prepareServer, printsUrl, resetPeakRss, rssMb, startChild, startServer, summariseProfile, table, threadBudget, untilQuiet, type CpuProfile, type Proc } from './gateway.ts';
import { nodeLaunch } from '../server/testing/processes.ts';
import type { BenchOptions, BenchSection } from './section.ts';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 512);
const CHUNKS = 64;
const CHUNK_GAP_MS = 20;
const STALL_MS = 200;
// The fake upstream echoes "You said: <message>", one word per chunk: 62 words make 64 content chunks.
const BODY = JSON.stringify({ model: 'gpt-bench', stream: true, messages: [{ role: 'user', content: Array.from({ length: CHUNKS - 2 }, (_, i) => `w${i}`).join(' ') }] });
const CONTENT = '"content":"';

interface RoundFigures {
  streams: number;
  failed: number;
  /** The failures by status (or `error` for a broken connection). */
  failures: Record<string, number>;
  /** Content chunks received over all streams. */
  chunks: number;
  stalled: number;
  ttftP50: number;
  ttftP99: number;
  gapP50: number;
  gapP99: number;
  gapMax: number;
  wallMs: number;
}

/** Opens `count` streams at once and waits for all of them to end. */
async function round(url: string, headers: Record<string, string>, count: number): Promise<RoundFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const ttfts: number[] = [];
  const gaps: number[] = [];
  let failed = 0;
  const failures: Record<string, number> = {};
  const fail = (why: string) => {
    failed++;
    failures[why] = (failures[why] ?? 0) + 1;
  };
  let chunks = 0;
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          const start = performance.now();
          const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers } }, (res) => {
            let last: number | undefined;
            let tail = '';
            res.setEncoding('utf8');
            res.on('data', (text: string) => {
              const now = performance.now();
              // A marker may be split across reads: the previous read's end, too short to hold a whole one, goes first.
              const window = tail + text;
              tail = window.slice(-(CONTENT.length - 1));
              for (let at = window.indexOf(CONTENT); at !== -1; at = window.indexOf(CONTENT, at + 1)) {
                chunks++;
                if (last === undefined) ttfts.push(now - start);
                else gaps.push(now - last);
                last = now;
              }
            });
            res.on('end', () => {
              if (res.statusCode !== 200) fail(String(res.statusCode));
              resolve();
            });
            res.on('error', () => {
              fail('error');
              resolve();
            });
          });
          req.on('error', () => {
            fail('error');
            resolve();
          });
          req.end(BODY);
        }),
    ),
  );
  const wallMs = performance.now() - started;
  agent.destroy();
  ttfts.sort((a, b) => a - b);
  gaps.sort((a, b) => a - b);
  return {
    streams: count,
    failed,
    failures,
    chunks,
    stalled: gaps.filter((gap) => gap > STALL_MS).length,
    ttftP50: percentile(ttfts, 50),
    ttftP99: percentile(ttfts, 99),
    gapP50: percentile(gaps, 50),
    gapP99: percentile(gaps, 99),
    gapMax: gaps.at(-1) ?? Number.NaN,
    wallMs,
  };
}

const ms = (value: number) => value.toFixed(2);

async function run(options: BenchOptions) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-streams-'));
  const procs: Proc[] = [];
  try {
    const upstream = await startChild(nodeLaunch(['bench/upstream.ts', '--chunk-gap-ms', String(CHUNK_GAP_MS)]), printsUrl);
    procs.push(upstream);
    const { serverEnv, apiKey } = await prepareServer(dataDir, upstream.url);
    const profileFile = path.join(dataDir, 'server.cpuprofile');
    const server = options.profile ? await startServer({ ...serverEnv, CPU_PROFILE_FILE: profileFile }, ['--import', './bench/cpu-profile-hook.ts']) : await startServer(serverEnv);
    procs.push(server);
    // The peak below is the rounds', not start-up's.
    await untilQuiet(server.child.pid!);
    const peakIsForTheRounds = resetPeakRss(server.child.pid);
    const proxy = await startChild(nodeLaunch(['bench/passthrough-proxy.ts', upstream.url.replace(/\/v1$/, '')]), printsUrl);
    procs.push(proxy);
    const direct = { url: `${upstream.url}/chat/completions`, headers: {} };
    const bare = { url: `${proxy.url}${new URL(upstream.url).pathname}/chat/completions`, headers: {} };
    const through = { url: `${server.url}/v1/chat/completions`, headers: { authorization: `Bearer ${apiKey}` } };
    // Warm-up: connections, code paths, the JIT, on both sides.
    await round(direct.url, direct.headers, Math.min(64, STREAMS));
    await round(bare.url, bare.headers, Math.min(64, STREAMS));
    await round(through.url, through.headers, Math.min(64, STREAMS));
    const loadBefore = loadavg()[0]!;
    const directFigures = await round(direct.url, direct.headers, STREAMS);
    const proxyFigures = await round(bare.url, bare.headers, STREAMS);
    // With --profile, the server's CPU profile covers its measured round only (see bench/cpu-profile-hook.ts).
    if (options.profile) server.child.kill('SIGUSR2');
    const serverFigures = await round(through.url, through.headers, STREAMS);
    let profile: ReturnType<typeof summariseProfile> | undefined;
    if (options.profile) {
      const written = server.waitForLine((line) => line.includes('cpu profile written'));
      server.child.kill('SIGUSR2');
      await written;
      profile = summariseProfile(JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile, serverFigures.chunks);
    }
    const rss = rssMb(server.child.pid);
    const added = {
      stalled: serverFigures.stalled - directFigures.stalled,
      gapP99Ms: serverFigures.gapP99 - directFigures.gapP99,
      ttftP99Ms: serverFigures.ttftP99 - directFigures.ttftP99,
    };
    // What one extra hop adds with nothing in it: the floor of the server's figures on this machine.
    const addedByProxy = {
      stalled: proxyFigures.stalled - directFigures.stalled,
      gapP99Ms: proxyFigures.gapP99 - directFigures.gapP99,
      ttftP99Ms: proxyFigures.ttftP99 - directFigures.ttftP99,
    };
    const json = {
      section: 'streams',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: loadBefore, loadAverageAfter: loadavg()[0] },
      setup: { streams: STREAMS, chunks: CHUNKS, chunkGapMs: CHUNK_GAP_MS, stallMs: STALL_MS },
      direct: directFigures,
      bareProxy: proxyFigures,
      server: serverFigures,
      added,
      addedByBareProxy: addedByProxy,
      serverRssMb: rss,
      ...(profile ? { profile } : {}),
      targets: {
        stalledChunks: { value: serverFigures.stalled, target: '0', met: serverFigures.stalled === 0 },
        addedGapP99Ms: { value: added.gapP99Ms, target: '<= 2', met: added.gapP99Ms <= 2 },
        addedTtftP99Ms: { value: added.ttftP99Ms, target: '<= 2', met: added.ttftP99Ms <= 2 },
      },
    };
    const row = (name: string, f: RoundFigures) => [name, f.streams, f.failed, f.chunks, f.stalled, ms(f.ttftP50), ms(f.ttftP99), ms(f.gapP50), ms(f.gapP99), ms(f.gapMax), (f.wallMs / 1000).toFixed(2)];
    const report = [
      table(['streams', 'count', 'failed', 'chunks', 'stalled', 'ttft p50', 'ttft p99', 'gap p50', 'gap p99', 'gap max', 'wall s'], [row('direct', directFigures), row('bare proxy', proxyFigures), row('server', serverFigures)]),
      '',
      ...(serverFigures.failed || directFigures.failed ? [`failures by status: direct ${JSON.stringify(directFigures.failures)}, server ${JSON.stringify(serverFigures.failures)}`] : []),
      `server RSS ${rss.now} MB (peak ${rss.peak} MB ${peakIsForTheRounds ? 'in the rounds' : 'including start-up'}); load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after, on ${cpus().length} cores`,
      `target 2: stalled chunks (gap > ${STALL_MS} ms) through the server: ${serverFigures.stalled} (direct ${directFigures.stalled}), ${json.targets.stalledChunks.met ? 'met' : 'NOT met'}`,
      `target 2: added inter-chunk p99 <= 2 ms: ${ms(added.gapP99Ms)} ms, ${json.targets.addedGapP99Ms.met ? 'met' : 'NOT met'}`,
      `target 2: added TTFT p99 <= 2 ms: ${ms(added.ttftP99Ms)} ms, ${json.targets.addedTtftP99Ms.met ? 'met' : 'NOT met'}`,
      `a bare pass-through proxy adds: inter-chunk p99 ${ms(addedByProxy.gapP99Ms)} ms, TTFT p99 ${ms(addedByProxy.ttftP99Ms)} ms, ${addedByProxy.stalled} stalled chunks`,
    ];
    if (profile) {
      const share = (rows: { name: string; share: number; microsPerRequest: number }[]) => rows.map((entry) => [entry.name, `${(entry.share * 100).toFixed(1)}%`, entry.microsPerRequest.toFixed(2)]);
      report.push(
        '',
        `CPU profile of the server over its round: ${(profile.busyMs / 1000).toFixed(2)} s busy of ${(profile.windowMs / 1000).toFixed(2)} s, ${profile.cpuMicrosPerRequest.toFixed(1)} µs of CPU per content chunk (request set-up included)`,
        `every stream at the upstream's pace: ${threadBudget(profile, (STREAMS * 1000) / CHUNK_GAP_MS, 'chunk')}`,
        table(['where', 'share', 'µs/chunk'], share(profile.areas.slice(0, 15))),
        '',
        table(['function (self)', 'share', 'µs/chunk'], share(profile.functions)),
        '',
        table(['function (inclusive)', 'share', 'µs/chunk'], share(profile.inclusive.slice(0, 30))),
      );
    }
    return { report: report.join('\n'), json };
  } finally {
    for (const proc of procs.reverse()) await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const section: BenchSection = {
  name: 'streams',
  description: `${STREAMS} concurrent streamed chat completions of ${CHUNKS} chunks paced at ${CHUNK_GAP_MS} ms by the upstream, directly and through the server (production mode, PGlite unless BENCH_SERVER_ENV says otherwise): stalled chunks, inter-chunk gaps and time to first token.`,
  run,
};
