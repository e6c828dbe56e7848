// This repository's programs (server/main.ts, scripts/…, bench/upstream.ts) run as Node child processes,
// for end-to-end tests and benchmarks: from the repository root, with PATH and the given environment only.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * How the server is started: `npm start`, `npm run dev` and the Dockerfile run scripts/serve.sh, which
 * does the same (a test holds them to it), and so do the end-to-end tests, the cluster and the benchmarks.
 * V8 sizes the young generation from the heap limit, which it sizes from the machine's memory: on a 24 GB
 * machine it lets the young generation grow to 128 MB under load (semi-spaces of 64 MB), which 1,000 open
 * agent streams took, half of their RSS. Semi-spaces of 16 MB (V8's own maximum until Node 20) keep it to 32 MB; 8 MB, which
 * promotes more of a run's objects to the old generation, and 24 or 32 MB measured worse; README, target 3.
 */
export const SERVER_ARGS = ['--max-semi-space-size=16', 'server/main.ts'];

/**
 * The environment the server starts with, beside SERVER_ARGS, unless the given environment says otherwise
 * (scripts/serve.sh sets the same; a test holds them to it). glibc's malloc serves a block of 128 kB or more
 * with its own mmap, but each time such a block is freed it raises that threshold to the block's size (up
 * to 32 MB). Node's start-up and V8's compilers free such blocks early, after which every allocation below
 * that size comes from malloc's heaps, which keep what is freed: about 60 MB more RSS at rest on PGlite. A
 * fixed threshold turns the raising off; README, Operating it.
 */
export const SERVER_ENV = { GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072' };

/**
 * Where scripts/serve.sh looks for jemalloc, in this order, and preloads the first it finds unless
 * LD_PRELOAD is set: glibc keeps in its heaps the native memory a busy spell frees (sockets' buffers, the
 * PostgreSQL driver's), 11–17 % of the RSS at rest 30 s after 1,000 agent streams; jemalloc gives freed
 * pages back. README, Operating it.
 */
export const JEMALLOC_PATHS = [
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
  '/usr/local/lib/libjemalloc.so.2',
];

/**
 * How jemalloc runs the server, unless MALLOC_CONF is set: freed pages go back to the system after a
 * second (ten by default), and from a thread of jemalloc's own, so an idle server returns them too (by
 * default jemalloc purges only as the program allocates). Without it, PGlite's start-up left about 150 MB
 * of V8's compiler memory mapped for 10–20 s.
 */
export const JEMALLOC_CONF = 'background_thread:true,dirty_decay_ms:1000';

/** The jemalloc the server runs on here, if this system has one. */
export const jemalloc = JEMALLOC_PATHS.find((lib) => existsSync(lib));

/**
 * The arguments and environment for spawnNode that start the server as `npm start` does: `nodeArgs` go
 * before the entry point, `env` over SERVER_ENV, and jemalloc is preloaded, with JEMALLOC_CONF, unless
 * `env` sets LD_PRELOAD (empty for glibc's malloc).
 */
export function serverCommand(env: Record<string, string>, nodeArgs: string[] = []): [string[], Record<string, string>] {
  const preload: Record<string, string> = jemalloc && !('LD_PRELOAD' in env) ? { LD_PRELOAD: jemalloc, MALLOC_CONF: JEMALLOC_CONF } : {};
  return [[...nodeArgs, ...SERVER_ARGS], { ...SERVER_ENV, ...preload, ...env }];
}

export interface NodeProcess {
  child: ChildProcess;
  /** Sends `signal` unless the process has already ended, and waits for it to end. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node <args>` whose output is read line by line, never left to fill its pipe. */
export function spawnNode(args: string[], env: Record<string, string>, onLine: (line: string, from: 'stdout' | 'stderr') => void): NodeProcess {
  const child = spawn(process.execPath, args, { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const reader = (from: 'stdout' | 'stderr') => {
    let buffer = '';
    return (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) onLine(line, from);
    };
  };
  child.stdout!.on('data', reader('stdout'));
  child.stderr!.on('data', reader('stderr'));
  return {
    child,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs a project script (e.g. scripts/create-key.ts) to completion and answers its stdout. */
export async function runScript(script: string, args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}: ${err}`);
  return out.trim();
}

/**
 * Runs module code (`node --input-type=module -e`) in a new Node process from the repository root, so that
 * `./server/…` imports resolve, and answers what it printed last, as JSON: for what a test must see in a
 * process nothing else has touched (warnings not yet given, the collector's own counts).
 */
export async function evalModule<T>(code: string, nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, [...nodeArgs, '--input-type=module', '-e', code], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as T;
}

/**
 * Module code for evalModule (with `--expose-gc`) that defines `oldBytesPer(run, warmUp, count)`: after
 * `run(warmUp)` and a full collection, how far `run(count)` grows the old generation per call once two young
 * collections have promoted whatever survived them.
 */
export const OLD_GENERATION_PROBE = `
  const { getHeapSpaceStatistics } = await import('node:v8');
  const oldUsed = () => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space').space_used_size;
  const oldBytesPer = async (run, warmUp, count) => {
    await run(warmUp);
    gc();
    const before = oldUsed();
    await run(count);
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    return (oldUsed() - before) / count;
  };
`;

/** A loopback port nothing listens on at the moment of asking. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Waits until the server `child` runs answers `GET /health` at `url`; fails if the child exits first. */
export async function untilHealthy(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited with ${child.exitCode ?? child.signalCode} while starting`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
}
