// Runs the real server (`node server/main.ts`) as a child process, as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Every log line so far. */
  logs: string[];
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['server/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'info', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${logs.join('\n')}`)), 60_000);
    let buffer = '';
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        logs.push(line);
        if (line.includes('"msg":"listening"')) {
          clearTimeout(timer);
          resolve(`http://127.0.0.1:${JSON.parse(line).port}`);
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${logs.join('\n')}`));
    });
  });
  return {
    url,
    child,
    logs,
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
