// This repository's programs (server/main.ts, scripts/…, bench/upstream.ts) run as Node child processes,
// for end-to-end tests and benchmarks: from the repository root, with PATH and the given environment only.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A child to start from the repository root: a program, its arguments and its environment (this process's PATH unless it names one). */
export interface Launch {
  program: string;
  args: string[];
  env: Record<string, string>;
}

/** This Node running `args` (a script and its arguments, Node options before it). */
export const nodeLaunch = (args: string[], env: Record<string, string> = {}): Launch => ({ program: process.execPath, args, env });

/**
 * The server as `npm start` starts it: scripts/serve.sh, which the Dockerfile and `npm run dev` run too,
 * with `nodeArgs` as the Node options it passes on. The script chooses the allocator and its settings, the
 * young generation's cap and the entry point (README, Operating it), so the tests, the cluster and the
 * benches measure what an operator runs; its `node` is this one. `env` goes over what the script sets
 * unless the script keeps an operator's value (LD_PRELOAD empty runs on glibc's malloc).
 */
export function serverCommand(env: Record<string, string>, nodeArgs: string[] = []): Launch {
  return { program: 'sh', args: ['scripts/serve.sh', ...nodeArgs], env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`, ...env } };
}

export interface NodeProcess {
  child: ChildProcess;
  /** Sends `signal` unless the process has already ended, and waits for it to end. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a child whose output is read line by line, never left to fill its pipe. */
export function spawnLaunch(launch: Launch, onLine: (line: string, from: 'stdout' | 'stderr') => void): NodeProcess {
  const child = spawn(launch.program, launch.args, { cwd: root, env: { PATH: process.env.PATH ?? '', ...launch.env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Starts `node <args>`, as spawnLaunch does. */
export const spawnNode = (args: string[], env: Record<string, string>, onLine: (line: string, from: 'stdout' | 'stderr') => void): NodeProcess =>
  spawnLaunch(nodeLaunch(args, env), onLine);

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
 * collections have promoted whatever survived them. It measures three such windows and answers the least:
 * what every call leaves shows in each of them, while a window in which something else in the process
 * promoted its garbage (a timer's work, a collection V8 began on its own) reads high once. On a loaded CI
 * machine one window read 17.9 KB a request where the others here read 0.2–1.1 KB.
 */
export const OLD_GENERATION_PROBE = `
  const { getHeapSpaceStatistics } = await import('node:v8');
  const oldUsed = () => getHeapSpaceStatistics().find((space) => space.space_name === 'old_space').space_used_size;
  const oldBytesPer = async (run, warmUp, count) => {
    await run(warmUp);
    let least = Infinity;
    for (let window = 0; window < 3; window++) {
      gc();
      const before = oldUsed();
      await run(count);
      gc({ type: 'minor' });
      gc({ type: 'minor' });
      least = Math.min(least, (oldUsed() - before) / count);
    }
    return least;
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
