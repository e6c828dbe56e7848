// Runs the real server as `npm start` does (`serverCommand`) as a child process, as an operator would.
import type { ChildProcess } from 'node:child_process';
import { afterAll } from 'vitest';
import { serverCommand, spawnLaunch } from '../../server/testing/processes.ts';

export { runScript } from '../../server/testing/processes.ts';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Every log line so far. */
  logs: string[];
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const logs: string[] = [];
  let listening: (line: string) => void = () => undefined;
  const server = spawnLaunch(serverCommand({ NODE_ENV: 'test', LOG_LEVEL: 'info', PORT: '0', ...env }), (line) => {
    logs.push(line);
    if (line.includes('"msg":"listening"')) listening(line);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Nobody gets a handle to a server that did not start, so nobody else would ever stop it.
      void server.kill('SIGKILL');
      reject(new Error(`server did not start:\n${logs.join('\n')}`));
    }, 60_000);
    listening = (line) => {
      clearTimeout(timer);
      resolve(`http://127.0.0.1:${JSON.parse(line).port}`);
    };
    server.child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${logs.join('\n')}`));
    });
  });
  return { url, child: server.child, logs, kill: server.kill };
}

export interface Teardown {
  /** Runs after the suite, before the cleanups added earlier. */
  add(cleanup: () => Promise<void> | void): void;
  /** Starts the server as startServerProcess does; should the test leave it running, it is killed (SIGKILL). */
  startServer(env: Record<string, string>): Promise<ServerProcess>;
}

/** Cleanups that run after the suite, last added first, whether its tests passed or not. */
export function teardownAfterAll(): Teardown {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  return {
    add(cleanup) {
      cleanups.push(cleanup);
    },
    async startServer(env) {
      const server = await startServerProcess(env);
      cleanups.push(() => void server.kill('SIGKILL'));
      return server;
    },
  };
}
