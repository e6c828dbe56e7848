// What the model gateway adds on top of its upstream. Three processes, so that nothing shares an event
// loop: the loopback OpenAI upstream (bench/upstream.ts), the server as an operator runs it
// (server/main.ts: production mode, PGlite, request validation, API-key auth, rate limit and quota
// guards, usage metering, request logs at info; BENCH_SERVER_ENV='{"NAME":"value"}' adds settings, such
// as DATABASE_URL), and a bare node:http pass-through proxy
// (bench/passthrough-proxy.ts), and the required parts alone (bench/required-parts.ts: Express, the
// contract's request validator and the upstream relay, with none of the server's own work), which shows how
// much of the server's cost is its own. autocannon, in this process, drives POST /v1/chat/completions
// against each of the upstream directly, the proxy, the required parts and the server, at concurrency 1,
// 16 and 64, in the same run.
// Latencies are taken per response at sub-millisecond resolution (autocannon's own histogram rounds to
// whole milliseconds). Streaming is probed one request at a time: time to the first content chunk and
// the gap between chunks, directly and through the server. A Responses row: POST /v1/responses (a run with
// its stored events and response row) at concurrency 1, beside chat completions. With --profile, a second pass takes a V8 CPU
// profile of the warmed-up server under load and reports where its CPU time goes per request.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, nodeLaunch, runScript, serverCommand, spawnLaunch, untilHealthy, type Launch } from '../server/testing/processes.ts';
import type { BenchOptions, BenchSection } from './section.ts';

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
}
interface AutocannonInstance extends PromiseLike<AutocannonResult> {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (options: {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
}) => AutocannonInstance;

// autocannon ships CommonJS without types; this is the part of it used here.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const root = fileURLToPath(new URL('../', import.meta.url));
const CONCURRENCIES = [1, 16, 64];
const STREAM_ITERATIONS = 200;
const PROFILE_CONCURRENCY = Number(process.env.BENCH_PROFILE_CONCURRENCY ?? 16);
/** More environment for the server under test, e.g. `BENCH_SERVER_ENV='{"DATABASE_URL":"postgres://…"}'`. */
const extraServerEnv = JSON.parse(process.env.BENCH_SERVER_ENV ?? '{}') as Record<string, string>;
const UPSTREAM_CHUNK_GAP_MS = 2;
const CHAT_BODY = JSON.stringify({ model: 'gpt-bench', messages: [{ role: 'user', content: 'Hello, benchmark. How much does the gateway add?' }] });
const RESPONSES_BODY = JSON.stringify({ model: 'gpt-bench', input: 'Hello, benchmark. How much does the gateway add?' });
const STREAM_BODY = JSON.stringify({
  model: 'gpt-bench',
  stream: true,
  messages: [{ role: 'user', content: Array.from({ length: 20 }, (_, i) => `token${i}`).join(' ') }],
});

export interface Proc {
  child: ChildProcess;
  url: string;
  /** Resolves at the next output line that `match` accepts. */
  waitForLine(match: (line: string) => boolean): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a child and waits until `ready` says it is, with the URL it serves. */
export async function startChild(launch: Launch, ready: (proc: Omit<Proc, 'url' | 'stop'>) => Promise<string>): Promise<Proc> {
  const waiters = new Set<{ match: (line: string) => boolean; resolve: (line: string) => void }>();
  const started = spawnLaunch(launch, (line) => {
    for (const waiter of waiters) {
      if (!waiter.match(line)) continue;
      waiters.delete(waiter);
      waiter.resolve(line);
    }
  });
  const { child } = started;
  const waitForLine = (match: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      waiters.add({ match, resolve });
      child.once('exit', (code) => reject(new Error(`${launch.args.join(' ')} exited with ${code}`)));
    });
  const exitedEarly = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${launch.args.join(' ')} exited with ${code} before it was ready`))));
  const url = await Promise.race([ready({ child, waitForLine }), exitedEarly]);
  return {
    child,
    url,
    waitForLine,
    async stop() {
      await started.kill('SIGTERM');
    },
  };
}

/** Ready when the child prints `{"url": …}`, as bench/upstream.ts and bench/passthrough-proxy.ts do. */
export const printsUrl = async ({ waitForLine }: Pick<Proc, 'waitForLine'>): Promise<string> => {
  const line = await waitForLine((candidate) => candidate.startsWith('{"url"'));
  return (JSON.parse(line) as { url: string }).url;
};

/** Starts server/main.ts on a free port and waits until /health answers (whatever LOG_LEVEL says). */
export async function startServer(env: Record<string, string>, nodeArgs: string[] = []): Promise<Proc> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  return startChild(serverCommand({ ...env, PORT: String(port) }, nodeArgs), ({ child }) => untilHealthy(url, child).then(() => url));
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** What autocannon drives: the upstream directly, the pass-through proxy, the required parts alone, the server. */
type Target = 'direct' | 'proxy' | 'parts' | 'server';

interface LoadFigures {
  /** Successful responses. */
  completed: number;
  rps: number;
  p50: number;
  p99: number;
  failed: number;
}

export async function load(url: string, headers: Record<string, string>, connections: number, duration: number, body = CHAT_BODY): Promise<LoadFigures> {
  const latencies: number[] = [];
  let failed = 0;
  const instance = autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, connections, duration });
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latencies.push(ms);
    else failed++;
  });
  const result = await instance;
  latencies.sort((a, b) => a - b);
  return { completed: latencies.length, rps: latencies.length / result.duration, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failed: failed + result.errors + result.timeouts };
}

/** An agent of the benchmark's upstream model, with nothing of its own, so that `agent:<id>` is a bare run. */
async function createAgent(url: string, apiKey: string): Promise<string> {
  const response = await fetch(`${url}/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', model: 'gpt-bench' }),
  });
  if (response.status !== 201) throw new Error(`creating the bench agent answered ${response.status}`);
  return ((await response.json()) as { id: string }).id;
}

interface StreamFigures {
  ttftP50: number;
  gapP50: number;
  gapP99: number;
}

/** Sequential streamed requests: time to the first content chunk, and the gaps between content chunks. */
async function probeStreams(url: string, headers: Record<string, string>, iterations: number): Promise<StreamFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const ttfts: number[] = [];
  const gaps: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await new Promise<void>((resolve, reject) => {
      const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        let buffer = '';
        let last: number | undefined;
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const now = performance.now();
          buffer += text;
          const events = buffer.split('\n\n');
          buffer = events.pop() ?? '';
          for (const event of events) {
            const data = event.replace(/^data: /, '');
            if (data === '[DONE]' || !data.includes('"content":"')) continue;
            const content = (JSON.parse(data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content;
            if (!content) continue;
            if (last === undefined) ttfts.push(now - start);
            else gaps.push(now - last);
            last = now;
          }
        });
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`stream answered ${res.statusCode}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(STREAM_BODY);
    });
  }
  agent.destroy();
  ttfts.sort((a, b) => a - b);
  gaps.sort((a, b) => a - b);
  return { ttftP50: percentile(ttfts, 50), gapP50: percentile(gaps, 50), gapP99: percentile(gaps, 99) };
}

/** The resident set now and at its peak, in MB, from /proc (Linux). */
export function rssMb(pid: number | undefined): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 102.4) / 10;
  return { now: mb('VmRSS'), peak: mb('VmHWM') };
}

/** Linux's clock ticks per second, the unit of /proc/PID/stat's CPU times. */
const CLOCK_TICKS = 100;

/**
 * CPU seconds a process has spent so far, user and system: all its threads, or with `thread` one of them
 * (its pid for the main thread).
 */
export function cpuSeconds(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/**
 * Waits, up to 15 s, until a process has used under a tenth of a core over a quarter of a second: a server
 * is healthy before its start-up is over (on PGlite, V8 recompiles its SQL parser on a background thread
 * for about two seconds, near 600 MB of compiler memory), and what start-up takes should not be counted
 * as the load's.
 */
export async function untilQuiet(pid: number): Promise<void> {
  const deadline = performance.now() + 15_000;
  let before = cpuSeconds(pid);
  while (performance.now() < deadline) {
    await sleep(250);
    const now = cpuSeconds(pid);
    if (now - before < 0.025) return;
    before = now;
  }
}

/** Starts the peak over, so that it tells the run rather than start-up; false where the kernel does not allow it. */
export function resetPeakRss(pid: number | undefined): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package, a file of ours, a part of Node, or V8 itself. */
function areaOf(url: string, functionName: string): string {
  if (!url) return functionName || '(native)';
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').split('/').slice(0, 2).join('/');
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch) return packageMatch[1]!;
  return url.replace(/^file:\/\//, '').replace(root, '');
}

export function summariseProfile(profile: CpuProfile, requests: number) {
  const perNode = new Map<number, number>();
  for (const id of profile.samples) perNode.set(id, (perNode.get(id) ?? 0) + 1);
  const sampleUs = (profile.endTime - profile.startTime) / profile.samples.length;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const count = perNode.get(node.id) ?? 0;
    if (count === 0 || node.callFrame.functionName === '(idle)') continue;
    const micros = count * sampleUs;
    busy += micros;
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(url, functionName);
    const name = `${functionName || '(anonymous)'} ${url ? `${area}:${lineNumber + 1}` : ''}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
  }
  // Inclusive time: a function's own samples and its callees', each sample counted once per function even
  // when the function recurses.
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inclusive = new Map<string, number>();
  const onStack = new Map<string, number>();
  const rootNode = profile.nodes[0]!;
  const visit = (node: ProfileNode): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url ? `${areaOf(url, functionName)}:${lineNumber + 1}` : ''}`.trim();
    onStack.set(name, (onStack.get(name) ?? 0) + 1);
    const micros = node.callFrame.functionName === '(idle)' ? 0 : (perNode.get(node.id) ?? 0) * sampleUs;
    for (const [key, depth] of onStack) if (depth > 0 && micros > 0) inclusive.set(key, (inclusive.get(key) ?? 0) + micros);
    for (const child of node.children ?? []) visit(byId.get(child)!);
    onStack.set(name, onStack.get(name)! - 1);
  };
  visit(rootNode);
  inclusive.delete('(root)');
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, micros]) => ({ name, share: micros / busy, microsPerRequest: micros / requests }));
  return { requests, windowMs: (profile.endTime - profile.startTime) / 1000, busyMs: busy / 1000, cpuMicrosPerRequest: busy / requests, areas: top(byArea, byArea.size), functions: top(byFunction, 20), inclusive: top(inclusive, 40) };
}

/**
 * What keeping `perSecond` items (events, chunks) flowing leaves one thread per item, against the CPU the
 * profile measured per item and, of that, the socket writes (`writev`): why a round falls behind its pace.
 */
export function threadBudget(profile: ReturnType<typeof summariseProfile>, perSecond: number, item: string): string {
  const writes = profile.areas.find((area) => area.name === 'writev')?.microsPerRequest ?? 0;
  return `${Math.round(perSecond)} ${item}s/s leave one thread ${(1e6 / perSecond).toFixed(1)} µs of CPU per ${item}; the server took ${profile.cpuMicrosPerRequest.toFixed(1)}, of which its socket writes (writev) ${writes.toFixed(1)}`;
}

/** A profile's summary, with the CPU the kernel counted for the process over the same load. */
type ProfileUnderLoad = ReturnType<typeof summariseProfile> & { processCpuMicrosPerRequest: number; mainThreadCpuMicrosPerRequest: number };

/** Starts a process preloading the profile hook, warms it up, and profiles it under load at PROFILE_CONCURRENCY. */
async function profileUnderLoad(
  start: () => Promise<Proc>,
  profileFile: string,
  headers: Record<string, string>,
  procs: Proc[],
  duration: number,
): Promise<ProfileUnderLoad> {
  const proc = await start();
  procs.push(proc);
  const target = `${proc.url}/v1/chat/completions`;
  await load(target, headers, 16, 2);
  const pid = proc.child.pid!;
  proc.child.kill('SIGUSR2');
  const [processBefore, mainBefore] = [cpuSeconds(pid), cpuSeconds(pid, pid)];
  const profiled = await load(target, headers, PROFILE_CONCURRENCY, duration);
  const [processAfter, mainAfter] = [cpuSeconds(pid), cpuSeconds(pid, pid)];
  const written = proc.waitForLine((line) => line.includes('cpu profile written'));
  proc.child.kill('SIGUSR2');
  await written;
  await proc.stop();
  const perRequest = (seconds: number) => (seconds * 1e6) / profiled.completed;
  return {
    ...summariseProfile(JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile, profiled.completed),
    // What the kernel counted: the profile's busy time is the main thread's wall time between samples, which
    // also holds the time it waited for a core while runnable (the load generator and the upstream share the
    // machine's two). The profiler's own sampling is in both.
    processCpuMicrosPerRequest: perRequest(processAfter - processBefore),
    mainThreadCpuMicrosPerRequest: perRequest(mainAfter - mainBefore),
  };
}

/** The kernel's count beside the profile's busy time, per request. */
function kernelCpu(profile: ProfileUnderLoad): string {
  return `${profile.cpuMicrosPerRequest.toFixed(0)} µs busy per request in the profile; the kernel counted ${profile.mainThreadCpuMicrosPerRequest.toFixed(0)} µs of CPU on the main thread and ${profile.processCpuMicrosPerRequest.toFixed(0)} µs in all threads`;
}

/** Every area either profile spends on, server and parts side by side, largest difference first. */
function compareAreas(server: ReturnType<typeof summariseProfile>, parts: ReturnType<typeof summariseProfile>): string[][] {
  const of = (summary: ReturnType<typeof summariseProfile>) => new Map(summary.areas.map((area) => [area.name, area.microsPerRequest]));
  const [inServer, inParts] = [of(server), of(parts)];
  return [...new Set([...inServer.keys(), ...inParts.keys()])]
    .map((name) => ({ name, server: inServer.get(name) ?? 0, parts: inParts.get(name) ?? 0 }))
    .sort((a, b) => b.server - b.parts - (a.server - a.parts))
    .filter((row) => Math.max(row.server, row.parts) >= 2)
    .map((row) => [row.name, row.server.toFixed(1), row.parts.toFixed(1), (row.server - row.parts).toFixed(1)]);
}

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const ms = (value: number) => value.toFixed(3);

/**
 * The server's environment as an operator runs it, on a fresh data directory, with a plan whose limits
 * are counted and checked on every request, as in production, but never reached; and an API key.
 */
export async function prepareServer(dataDir: string, upstreamUrl: string): Promise<{ serverEnv: Record<string, string>; apiKey: string }> {
  const plansFile = path.join(dataDir, 'plans.yaml');
  writeFileSync(
    plansFile,
    [
      'plans:',
      '  - id: bench',
      '    limits: { requests_per_minute: 100000000, tokens_per_month: 1000000000000000, runs_per_day: null, agents: null, teams: null, knowledge_documents: null, knowledge_bytes: null }',
    ].join('\n'),
  );
  const serverEnv = { NODE_ENV: 'production', DATA_DIR: dataDir, OPENAI_BASE_URL: upstreamUrl, PLANS_FILE: plansFile, ...extraServerEnv };
  const apiKey = await runScript('scripts/create-key.ts', ['--email', 'bench@example.com', '--name', 'bench'], serverEnv);
  return { serverEnv, apiKey };
}

async function run(options: BenchOptions) {
  const duration = options.durationSeconds;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-'));
  const procs: Proc[] = [];
  try {
    const upstream = await startChild(nodeLaunch(['bench/upstream.ts', '--chunk-gap-ms', String(UPSTREAM_CHUNK_GAP_MS)]), printsUrl);
    procs.push(upstream);
    const upstreamOrigin = upstream.url.replace(/\/v1$/, '');
    const proxy = await startChild(nodeLaunch(['bench/passthrough-proxy.ts', upstreamOrigin]), printsUrl);
    procs.push(proxy);
    const parts = await startChild(nodeLaunch(['bench/required-parts.ts', upstream.url], { NODE_ENV: 'production' }), printsUrl);
    procs.push(parts);
    const { serverEnv, apiKey } = await prepareServer(dataDir, upstream.url);
    const server = await startServer(serverEnv);
    procs.push(server);
    await untilQuiet(server.child.pid!);
    const startupRss = rssMb(server.child.pid);
    const peakIsForTheRun = resetPeakRss(server.child.pid);

    const targets: { name: Target; url: string; headers: Record<string, string> }[] = [
      { name: 'direct', url: `${upstream.url}/chat/completions`, headers: {} },
      { name: 'proxy', url: `${proxy.url}/v1/chat/completions`, headers: {} },
      { name: 'parts', url: `${parts.url}/v1/chat/completions`, headers: {} },
      { name: 'server', url: `${server.url}/v1/chat/completions`, headers: { authorization: `Bearer ${apiKey}` } },
    ];
    for (const target of targets) await load(target.url, target.headers, 16, 2);

    const runs: ({ concurrency: number } & Record<Target, LoadFigures>)[] = [];
    for (const concurrency of CONCURRENCIES) {
      const figures = {} as Record<Target, LoadFigures>;
      for (const target of targets) figures[target.name] = await load(target.url, target.headers, concurrency, duration);
      runs.push({ concurrency, ...figures });
    }

    // The Responses API over the same upstream: every response is a run, stored with its events; beside
    // it, a run through chat completions (an agent of that model as `agent:<id>`), to tell the run's cost
    // from the Responses projection's.
    const auth = { authorization: `Bearer ${apiKey}` };
    const responsesUrl = `${server.url}/v1/responses`;
    await load(responsesUrl, auth, 1, 2, RESPONSES_BODY);
    const responsesC1 = await load(responsesUrl, auth, 1, duration, RESPONSES_BODY);
    const agentId = await createAgent(server.url, apiKey);
    const agentBody = JSON.stringify({ model: `agent:${agentId}`, messages: JSON.parse(CHAT_BODY).messages });
    await load(`${server.url}/v1/chat/completions`, auth, 1, 2, agentBody);
    const agentChatC1 = await load(`${server.url}/v1/chat/completions`, auth, 1, duration, agentBody);

    const streamDirect = await probeStreams(`${upstream.url}/chat/completions`, {}, STREAM_ITERATIONS);
    const streamServer = await probeStreams(`${server.url}/v1/chat/completions`, { authorization: `Bearer ${apiKey}` }, STREAM_ITERATIONS);
    const rss = rssMb(server.child.pid);
    await server.stop();

    let profile: ProfileUnderLoad | undefined;
    let partsProfile: ProfileUnderLoad | undefined;
    if (options.profile) {
      // The server and the required parts alone, each warmed up, then profiled in the steady state (see
      // bench/cpu-profile-hook.ts): what the server spends beyond the parts is its own work.
      const hook = ['--import', './bench/cpu-profile-hook.ts'];
      const serverFile = path.join(dataDir, 'server.cpuprofile');
      profile = await profileUnderLoad(() => startServer({ ...serverEnv, CPU_PROFILE_FILE: serverFile }, hook), serverFile, auth, procs, duration);
      const partsFile = path.join(dataDir, 'parts.cpuprofile');
      partsProfile = await profileUnderLoad(
        () => startChild(nodeLaunch([...hook, 'bench/required-parts.ts', upstream.url], { NODE_ENV: 'production', CPU_PROFILE_FILE: partsFile }), printsUrl),
        partsFile,
        {},
        procs,
        duration,
      );
    }

    const c1 = runs.find((r) => r.concurrency === 1)!;
    const c16 = runs.find((r) => r.concurrency === 16)!;
    const c64 = runs.find((r) => r.concurrency === 64)!;
    const addedP50AtC1 = c1.server.p50 - c1.direct.p50;
    const serverToParts = (r: (typeof runs)[number]) => r.server.rps / r.parts.rps;
    const json = {
      section: 'gateway',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverage: loadavg() },
      setup: {
        durationSeconds: duration,
        upstreamChunkGapMs: UPSTREAM_CHUNK_GAP_MS,
        streamIterations: STREAM_ITERATIONS,
        serverEnv: Object.fromEntries(Object.entries(serverEnv).filter(([name]) => !['DATA_DIR', 'OPENAI_BASE_URL', 'PLANS_FILE'].includes(name))),
      },
      runs: runs.map((r) => ({
        ...r,
        added: { p50Ms: r.server.p50 - r.direct.p50, p99Ms: r.server.p99 - r.direct.p99 },
        proxyToDirectRps: r.proxy.rps / r.direct.rps,
        partsToProxyRps: r.parts.rps / r.proxy.rps,
        serverToProxyRps: r.server.rps / r.proxy.rps,
        serverToPartsRps: serverToParts(r),
      })),
      responses: {
        c1: responsesC1,
        agentChatC1,
        addedOverAgentChatP50Ms: responsesC1.p50 - agentChatC1.p50,
        addedOverChatP50Ms: responsesC1.p50 - c1.server.p50,
        addedOverDirectP50Ms: responsesC1.p50 - c1.direct.p50,
      },
      streaming: {
        direct: streamDirect,
        server: streamServer,
        addedTtftMs: streamServer.ttftP50 - streamDirect.ttftP50,
        addedGapP50Ms: streamServer.gapP50 - streamDirect.gapP50,
        addedGapP99Ms: streamServer.gapP99 - streamDirect.gapP99,
      },
      serverRssMb: { afterStartup: startupRss.now, startupPeak: startupRss.peak, peakUnderLoad: peakIsForTheRun ? rss.peak : null, atEnd: rss.now },
      targets: {
        addedP50AtC1Ms: { value: addedP50AtC1, target: '<= 0.5', met: addedP50AtC1 <= 0.5 },
        serverToPartsRpsAtC16: { value: serverToParts(c16), target: '>= 0.8', met: serverToParts(c16) >= 0.8 },
        serverToPartsRpsAtC64: { value: serverToParts(c64), target: '>= 0.8', met: serverToParts(c64) >= 0.8 },
      },
      ...(profile ? { profile, partsProfile } : {}),
    };

    const lines = [
      table(
        ['concurrency', 'direct req/s', 'proxy req/s', 'parts req/s', 'server req/s', 'proxy/direct', 'parts/proxy', 'server/proxy', 'server/parts', 'direct p50', 'proxy p50', 'parts p50', 'server p50', 'added p50 ms', 'direct p99', 'server p99', 'added p99 ms', 'failed'],
        json.runs.map((r) => [
          r.concurrency,
          r.direct.rps.toFixed(0),
          r.proxy.rps.toFixed(0),
          r.parts.rps.toFixed(0),
          r.server.rps.toFixed(0),
          r.proxyToDirectRps.toFixed(2),
          r.partsToProxyRps.toFixed(2),
          r.serverToProxyRps.toFixed(2),
          r.serverToPartsRps.toFixed(2),
          ms(r.direct.p50),
          ms(r.proxy.p50),
          ms(r.parts.p50),
          ms(r.server.p50),
          ms(r.added.p50Ms),
          ms(r.direct.p99),
          ms(r.server.p99),
          ms(r.added.p99Ms),
          r.direct.failed + r.proxy.failed + r.parts.failed + r.server.failed,
        ]),
      ),
      '',
      table(
        ['streaming (c=1)', 'ttft p50 ms', 'gap p50 ms', 'gap p99 ms'],
        [
          ['direct', ms(streamDirect.ttftP50), ms(streamDirect.gapP50), ms(streamDirect.gapP99)],
          ['server', ms(streamServer.ttftP50), ms(streamServer.gapP50), ms(streamServer.gapP99)],
          ['added', ms(json.streaming.addedTtftMs), ms(json.streaming.addedGapP50Ms), ms(json.streaming.addedGapP99Ms)],
        ],
      ),
      '',
      table(
        ['c=1 through the server', 'req/s', 'p50 ms', 'p99 ms', 'added p50 ms over direct', 'failed'],
        [
          ['POST /v1/chat/completions', c1.server.rps.toFixed(0), ms(c1.server.p50), ms(c1.server.p99), ms(c1.server.p50 - c1.direct.p50), c1.server.failed],
          ['POST /v1/chat/completions agent:', agentChatC1.rps.toFixed(0), ms(agentChatC1.p50), ms(agentChatC1.p99), ms(agentChatC1.p50 - c1.direct.p50), agentChatC1.failed],
          ['POST /v1/responses', responsesC1.rps.toFixed(0), ms(responsesC1.p50), ms(responsesC1.p99), ms(json.responses.addedOverDirectP50Ms), responsesC1.failed],
        ],
      ),
      `the Responses API adds ${ms(json.responses.addedOverChatP50Ms)} ms p50 over chat completions at c=1 (a run, its events and its response stored), ` +
        `${ms(json.responses.addedOverAgentChatP50Ms)} ms over a run through chat completions (agent:)`,
      '',
      `server RSS: ${startupRss.now} MB after start-up (peak ${startupRss.peak} MB while starting), ` +
        (peakIsForTheRun ? `peak ${rss.peak} MB under load` : `peak ${rss.peak} MB including start-up`),
      `machine load average (1, 5, 15 min) at the end: ${loadavg().map((value) => value.toFixed(1)).join(', ')} on ${cpus().length} cores`,
      `target 1: added p50 at c=1 <= 0.5 ms: ${ms(addedP50AtC1)} ms, ${json.targets.addedP50AtC1Ms.met ? 'met' : 'NOT met'}`,
      `target 1: server >= 0.8 x the required parts' req/s at c=16: ${serverToParts(c16).toFixed(2)}, ${json.targets.serverToPartsRpsAtC16.met ? 'met' : 'NOT met'}`,
      `target 1: server >= 0.8 x the required parts' req/s at c=64: ${serverToParts(c64).toFixed(2)}, ${json.targets.serverToPartsRpsAtC64.met ? 'met' : 'NOT met'}`,
    ];
    if (profile) {
      lines.push(
        '',
        `CPU profile of the server at c=${PROFILE_CONCURRENCY}: ${kernelCpu(profile)}`,
        table(
          ['where', 'share', 'µs/request'],
          profile.areas.slice(0, 15).map((area) => [area.name, `${(area.share * 100).toFixed(1)}%`, area.microsPerRequest.toFixed(1)]),
        ),
        '',
        table(
          ['function (self time)', 'share', 'µs/request'],
          profile.functions.map((fn) => [fn.name, `${(fn.share * 100).toFixed(1)}%`, fn.microsPerRequest.toFixed(1)]),
        ),
        '',
        table(
          ['function (with its callees)', 'share', 'µs/request'],
          profile.inclusive.map((fn) => [fn.name, `${(fn.share * 100).toFixed(1)}%`, fn.microsPerRequest.toFixed(1)]),
        ),
      );
    }
    if (profile && partsProfile) {
      lines.push(
        '',
        `CPU profile of the required parts alone at c=${PROFILE_CONCURRENCY}: ${kernelCpu(partsProfile)}; the server's profile is ${(profile.cpuMicrosPerRequest - partsProfile.cpuMicrosPerRequest).toFixed(0)} µs busier a request, its main thread ${(profile.mainThreadCpuMicrosPerRequest - partsProfile.mainThreadCpuMicrosPerRequest).toFixed(0)} µs more CPU`,
        table(['where', 'server µs/request', 'parts µs/request', 'server - parts'], compareAreas(profile, partsProfile)),
      );
    }
    return { report: lines.join('\n'), json };
  } finally {
    for (const proc of procs.reverse()) await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export const section: BenchSection = {
  name: 'gateway',
  description:
    'Model gateway overhead: POST /v1/chat/completions directly to a loopback OpenAI upstream, through a bare pass-through proxy, through the required parts alone (Express, request validation, the upstream relay), and through the server (production mode, PGlite unless BENCH_SERVER_ENV says otherwise, request validation, API-key auth, rate limit and quota guards, usage metering, request logs), each in its own process.',
  run,
};
