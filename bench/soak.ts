// A bounded soak: the server as an operator runs it (server/main.ts, production mode, PGlite unless
// --database-url says otherwise) and a loopback OpenAI upstream (bench/upstream.ts), each its own
// process, under concurrent CRUD (agents, knowledge documents and search), agent chats as JSON and as
// event streams, and OpenAI chat completions as JSON and streams, for --seconds. The server's resident
// set is read from /proc every second: through a warm-up, the load and a settle period with no load. At
// the start of the load and at the end of the settle period the soak asks the server for a full garbage
// collection through its inspector (started on a loopback port for the soak alone) and reads where its
// memory is (/metrics: V8's heap, memory outside it, PGlite's WebAssembly memory): garbage V8 had not
// yet collected is not a leak, what a full collection leaves is. It prints throughput per kind, errors
// by kind and status, the RSS after start-up, at the start of the measured load, at its peak and at the
// end, and exits non-zero when there were errors, when streams or runs were left open, or when the end
// (after the collection) is not within the tolerance of the start (after one too).
//   npm run soak -- --seconds 60 [--settle 30] [--warmup 10] [--concurrency 16] [--database-url postgres://…]
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { unlimitedPlanEnv } from '../server/testing/plans.ts';
import { freePort, nodeLaunch, runScript, serverCommand, spawnLaunch, untilHealthy, type Launch } from '../server/testing/processes.ts';

const MB = 1024 * 1024;
/**
 * How far above its start the RSS may end, both read after a full collection: what V8 and the allocators
 * keep after a burst without any leak. The young generation is up to 3 × 16 MB of semi-spaces and stays
 * committed; malloc keeps the arenas of libuv's worker threads and of the database driver; PGlite's
 * WebAssembly memory grows to its high-water mark and never shrinks. A fixed 64 MB covers those on a heap
 * of any size, where a percentage of a PGlite server's ~0.5 GB would hide a real leak. A leak, by
 * contrast, grows with the work done and shows past it on a run of a minute or more.
 */
const RSS_TOLERANCE_BYTES = 64 * MB;
const SSE_WORDS = 40;
const UPSTREAM_CHUNK_GAP_MS = 5;
const MODEL = 'gpt-bench';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    settle: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    'database-url': { type: 'string' },
  },
});
const positive = (name: string, raw: string, min: number) => {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    console.error(`--${name} must be an integer of at least ${min}; got "${raw}".`);
    process.exit(2);
  }
  return value;
};
const seconds = positive('seconds', values.seconds, 1);
const settleSeconds = positive('settle', values.settle, 0);
const warmupSeconds = positive('warmup', values.warmup, 0);
const concurrency = positive('concurrency', values.concurrency, 1);
const databaseUrl = values['database-url'];

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));

interface Child {
  child: ChildProcess;
  /** Lines of output at level error or above (servers), or anything on stderr (others). */
  problems: string[];
  stop(): Promise<number | null>;
}

/** What Node prints on stderr about the inspector the soak starts: not a problem. */
const INSPECTOR_NOTICE = /^(Debugger (listening on|ending on) |For help, see: https:\/\/nodejs\.org|Debugger attached\.|Waiting for the debugger to disconnect)/;

/** Starts a child, keeping the lines of its output that report a problem. */
function startChild(launch: Launch, onLine: (line: string) => void = () => undefined): Child {
  const problems: string[] = [];
  const started = spawnLaunch(launch, (line, from) => {
    onLine(line);
    if (from === 'stderr' ? line.trim() !== '' && !INSPECTOR_NOTICE.test(line) : /"level":(5|6)0/.test(line)) problems.push(line);
  });
  return { child: started.child, problems, stop: () => started.kill('SIGTERM') };
}

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
}

type Kind = 'agents' | 'knowledge' | 'chat_json' | 'chat_sse' | 'completions_json' | 'completions_sse';
const KINDS: Kind[] = ['agents', 'knowledge', 'chat_json', 'chat_sse', 'completions_json', 'completions_sse'];

interface Tally {
  /** Successful requests per kind. */
  ok: Record<Kind, number>;
  /** Failures per kind and status (`network`, or `incomplete` for a stream without its end). */
  errors: Record<string, number>;
  /** Examples of failures, a few per key. */
  samples: Record<string, string[]>;
}

const newTally = (): Tally => ({ ok: Object.fromEntries(KINDS.map((kind) => [kind, 0])) as Record<Kind, number>, errors: {}, samples: {} });

/** One worker's loop over every kind of work, while `running` says so. */
async function worker(index: number, base: string, apiKey: string, agentId: string, tally: () => Tally, running: () => boolean): Promise<void> {
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const words = (n: number, seed: number) => Array.from({ length: n }, (_, i) => `w${seed}x${i}`).join(' ');
  let n = 0;

  /** Sends one request and counts it; answers its body when it was the expected status. */
  const call = async (kind: Kind, method: string, url: string, expected: number[], body?: unknown, accept?: string, complete?: (text: string) => boolean) => {
    let status: string;
    let text: string;
    try {
      const response = await fetch(`${base}${url}`, {
        method,
        headers: accept ? { ...headers, Accept: accept } : headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      text = await response.text();
      status = String(response.status);
      if (expected.includes(response.status)) {
        if (!complete || complete(text)) {
          tally().ok[kind] += 1;
          return text;
        }
        status = 'incomplete';
      }
    } catch (error) {
      status = 'network';
      text = String(error);
    }
    const key = `${kind} ${status}`;
    const current = tally();
    current.errors[key] = (current.errors[key] ?? 0) + 1;
    const samples = (current.samples[key] ??= []);
    if (samples.length < 3) samples.push(text.slice(0, 300));
    return undefined;
  };

  for (let step = index; running(); step++) {
    const kind = KINDS[step % KINDS.length]!;
    const seed = index * 1_000_000 + n++;
    switch (kind) {
      case 'agents': {
        const created = await call(kind, 'POST', '/v1/agents', [201], { name: `soak ${seed}`, model: MODEL, instructions: 'Be brief.' });
        if (!created) break;
        const id = (JSON.parse(created) as { id: string }).id;
        await call(kind, 'GET', `/v1/agents/${id}`, [200]);
        await call(kind, 'PATCH', `/v1/agents/${id}`, [200], { instructions: 'Be briefer.' });
        await call(kind, 'GET', '/v1/agents?limit=20', [200]);
        await call(kind, 'DELETE', `/v1/agents/${id}`, [204]);
        break;
      }
      case 'knowledge': {
        const created = await call(kind, 'POST', '/v1/knowledge/documents', [200, 201, 202], { title: `doc ${seed}`, text: `# Soak ${seed}\n\n${words(120, seed)}` });
        if (!created) break;
        const id = (JSON.parse(created) as { id: string }).id;
        await call(kind, 'POST', '/v1/knowledge/search', [200], { query: `w${seed}x7 w${seed}x8`, top_k: 3 });
        await call(kind, 'DELETE', `/v1/knowledge/documents/${id}`, [204]);
        break;
      }
      case 'chat_json':
        await call(kind, 'POST', `/v1/agents/${agentId}/chat`, [200], { messages: [{ role: 'user', content: words(12, seed) }] });
        break;
      case 'chat_sse':
        await call(kind, 'POST', `/v1/agents/${agentId}/chat`, [200], { messages: [{ role: 'user', content: words(SSE_WORDS, seed) }] }, 'text/event-stream', (text) =>
          text.includes('event: RunCompleted'),
        );
        break;
      case 'completions_json':
        await call(kind, 'POST', '/v1/chat/completions', [200], { model: MODEL, messages: [{ role: 'user', content: words(12, seed) }] });
        break;
      case 'completions_sse':
        await call(kind, 'POST', '/v1/chat/completions', [200], { model: MODEL, stream: true, messages: [{ role: 'user', content: words(SSE_WORDS, seed) }] }, 'text/event-stream', (text) =>
          text.trimEnd().endsWith('data: [DONE]'),
        );
        break;
    }
  }
}

/** One sample of an unlabelled gauge from the exposition. */
function gauge(exposition: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(exposition);
  return match ? Number(match[1]) : undefined;
}

const mb = (bytes: number) => Math.round((bytes / MB) * 10) / 10;

/** Asks the process behind an inspector port for a full garbage collection, and waits for it. */
async function collectGarbage(inspectPort: number): Promise<void> {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  if (!target) throw new Error('The server has no inspector target.');
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' })));
      socket.addEventListener('message', (event) => {
        if ((JSON.parse(String(event.data)) as { id?: number }).id === 1) resolve();
      });
      socket.addEventListener('error', () => reject(new Error('The inspector connection failed.')));
    });
  } finally {
    socket.close();
  }
}

/** Where the server's memory is, from its own /metrics: V8's heap, memory outside it, PGlite's WebAssembly memory. */
async function memoryParts(base: string): Promise<Record<'rss' | 'heapUsed' | 'heapTotal' | 'external' | 'embeddedDatabase', number>> {
  const exposition = await (await fetch(`${base}/metrics`)).text();
  const read = (name: string) => mb(gauge(exposition, name) ?? 0);
  return {
    rss: read('process_resident_memory_bytes'),
    heapUsed: read('nodejs_heap_size_used_bytes'),
    heapTotal: read('nodejs_heap_size_total_bytes'),
    external: read('nodejs_external_memory_bytes'),
    embeddedDatabase: read('database_embedded_memory_bytes'),
  };
}

async function main(): Promise<number> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-soak-'));
  const children: Child[] = [];
  try {
    let upstreamUrl: (url: string) => void = () => undefined;
    const upstreamReady = new Promise<string>((resolve) => (upstreamUrl = resolve));
    const upstream = startChild(nodeLaunch(['bench/upstream.ts', '--chunk-gap-ms', String(UPSTREAM_CHUNK_GAP_MS), '--models', MODEL]), (line) => {
      if (line.startsWith('{"url"')) upstreamUrl((JSON.parse(line) as { url: string }).url);
    });
    children.push(upstream);
    const env: Record<string, string> = {
      NODE_ENV: 'production',
      DATA_DIR: dataDir,
      OPENAI_BASE_URL: await upstreamReady,
      ...unlimitedPlanEnv(),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const apiKey = await runScript('scripts/create-key.ts', ['--email', 'soak@example.com', '--name', 'soak'], env);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const inspectPort = await freePort();
    const server = startChild(serverCommand({ ...env, PORT: String(port), HOST: '127.0.0.1' }, [`--inspect=127.0.0.1:${inspectPort}`]));
    children.push(server);
    await untilHealthy(base, server.child);
    const pid = server.child.pid!;
    const afterStartup = rssBytes(pid);
    const partsAfterStartup = await memoryParts(base);

    const agentResponse = await fetch(`${base}/v1/agents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Soak', model: MODEL, instructions: 'Answer in kind.' }),
    });
    if (agentResponse.status !== 201) throw new Error(`creating the soak agent answered ${agentResponse.status}: ${await agentResponse.text()}`);
    const agentId = ((await agentResponse.json()) as { id: string }).id;

    const samples: { t: number; phase: 'warmup' | 'load' | 'settle'; rssMb: number }[] = [];
    const began = performance.now();
    let phase: 'warmup' | 'load' | 'settle' = warmupSeconds > 0 ? 'warmup' : 'load';
    const sampler = setInterval(() => samples.push({ t: Math.round((performance.now() - began) / 100) / 10, phase, rssMb: mb(rssBytes(pid)) }), 1000);

    let tally = newTally();
    const warmupTally = tally;
    let running = true;
    const workers = Array.from({ length: concurrency }, (_, i) => worker(i, base, apiKey, agentId, () => tally, () => running));
    if (warmupSeconds > 0) {
      await sleep(warmupSeconds * 1000);
      phase = 'load';
      tally = newTally();
    }
    // The start, as the end will be read: after a full collection.
    await collectGarbage(inspectPort);
    const loadStart = rssBytes(pid);
    const partsAtLoadStart = await memoryParts(base);
    const loadBegan = performance.now();
    await sleep(seconds * 1000);
    running = false;
    await Promise.all(workers);
    const loadSeconds = (performance.now() - loadBegan) / 1000;
    phase = 'settle';
    const peak = Math.max(...samples.map((sample) => sample.rssMb)) * MB;
    await sleep(settleSeconds * 1000);
    clearInterval(sampler);
    await collectGarbage(inspectPort);
    const end = rssBytes(pid);
    const partsAtEnd = await memoryParts(base);

    const exposition = await (await fetch(`${base}/metrics`)).text();
    const openStreams = gauge(exposition, 'http_sse_streams_open');
    const liveRuns = gauge(exposition, 'runs_live');
    const exitCode = await server.stop();
    await upstream.stop();

    const requests = Object.values(tally.ok).reduce((sum, count) => sum + count, 0);
    const errorCount = Object.values(tally.errors).reduce((sum, count) => sum + count, 0);
    const warmupErrors = Object.values(warmupTally.errors).reduce((sum, count) => sum + count, 0);
    const limit = loadStart + RSS_TOLERANCE_BYTES;
    const rssOk = end <= limit;
    const leftOpen = openStreams !== 0 || liveRuns !== 0;
    const failed = errorCount > 0 || warmupErrors > 0 || !rssOk || leftOpen || exitCode !== 0 || server.problems.length > 0;

    const throughput = Object.fromEntries(KINDS.map((kind) => [kind, { requests: tally.ok[kind], perSecond: Math.round((tally.ok[kind] / loadSeconds) * 10) / 10 }]));
    const result = {
      section: 'soak',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
      setup: { seconds, warmupSeconds, settleSeconds, concurrency, store: databaseUrl ? 'postgres' : 'pglite', upstreamChunkGapMs: UPSTREAM_CHUNK_GAP_MS, sseWords: SSE_WORDS },
      throughput,
      requests,
      requestsPerSecond: Math.round((requests / loadSeconds) * 10) / 10,
      errors: tally.errors,
      errorSamples: tally.samples,
      warmupErrors: warmupTally.errors,
      rssMb: { afterStartup: mb(afterStartup), loadStart: mb(loadStart), peak: mb(peak), end: mb(end), limit: mb(limit), toleranceMb: mb(RSS_TOLERANCE_BYTES), withinTolerance: rssOk },
      memoryMb: { afterStartup: partsAfterStartup, loadStart: partsAtLoadStart, end: partsAtEnd },
      afterSettle: { openStreams, liveRuns },
      serverExitCode: exitCode,
      serverErrorLines: server.problems.slice(0, 20),
      samples,
      passed: !failed,
    };

    const rows = KINDS.map((kind) => `${kind.padEnd(17)} ${String(tally.ok[kind]).padStart(8)} ${String(throughput[kind]!.perSecond).padStart(8)}`);
    console.log(`Soak: ${seconds} s of load at concurrency ${concurrency} on ${result.setup.store} (after ${warmupSeconds} s of warm-up), then ${settleSeconds} s idle.\n`);
    console.log(`kind              requests    req/s\n${'-'.repeat(35)}\n${rows.join('\n')}\n${'all'.padEnd(17)} ${String(requests).padStart(8)} ${String(result.requestsPerSecond).padStart(8)}\n`);
    console.log(`errors: ${errorCount === 0 ? 'none' : JSON.stringify(tally.errors)}${warmupErrors ? `; during warm-up: ${JSON.stringify(warmupTally.errors)}` : ''}`);
    for (const [key, examples] of Object.entries(tally.samples)) console.log(`  ${key}: ${examples[0]}`);
    console.log(`server RSS: ${mb(afterStartup)} MB after start-up, ${mb(loadStart)} MB at the start of the load, ${mb(peak)} MB at peak, ${mb(end)} MB after ${settleSeconds} s idle and a full collection`);
    const partRows = (['rss', 'heapUsed', 'heapTotal', 'external', 'embeddedDatabase'] as const).map(
      (part) => `${part.padEnd(17)} ${String(partsAfterStartup[part]).padStart(9)} ${String(partsAtLoadStart[part]).padStart(11)} ${String(partsAtEnd[part]).padStart(9)}`,
    );
    console.log(`memory (MB)        start-up  load start       end   (load start and end after a full collection)\n${partRows.join('\n')}`);
    console.log(`RSS at the end within ${mb(RSS_TOLERANCE_BYTES)} MB of the start (<= ${mb(limit)} MB): ${rssOk ? 'yes' : 'NO'}`);
    console.log(`after the load: ${openStreams} streams open, ${liveRuns} runs live; server exited with ${exitCode}${server.problems.length ? `; ${server.problems.length} error lines logged` : ''}`);
    mkdirSync(resultsDir, { recursive: true });
    const file = `${resultsDir}soak-${result.at.replaceAll(':', '-')}.json`;
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nFigures written to ${file}`);
    console.log(failed ? 'SOAK FAILED' : 'soak passed');
    return failed ? 1 : 0;
  } finally {
    for (const child of children.reverse()) await child.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
