// A real cluster on loopback, as an operator would run one: N server processes (`node server/main.ts`)
// on one PostgreSQL (and Redis, when given), behind HAProxy (the Debian package) that spreads requests
// round-robin, checks each server's /ready every half second, and passes SSE through unbuffered.
//
//   npm run cluster -- --servers 3 [--port 8080] [--database-url URL] [--redis-url URL]
//
// Without --database-url it uses (and creates) the database `oaa_cluster` on the local PostgreSQL. Ctrl-C
// stops everything. The end-to-end suite starts the same cluster through startCluster().
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freePort, serverCommand, spawnLaunch, type NodeProcess } from '../server/testing/processes.ts';

export interface ClusterOptions {
  servers: number;
  databaseUrl: string;
  redisUrl?: string | undefined;
  /** The load balancer's port; a free one when omitted. */
  port?: number | undefined;
  /** More environment for every server. */
  env?: Record<string, string>;
  /** Where server logs go (each line prefixed with its server); kept in memory when omitted. */
  onLog?: (server: number, line: string) => void;
}

export interface ClusterServer {
  index: number;
  url: string;
  pid: number;
  logs: string[];
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface Cluster {
  /** The load balancer's URL: what clients use. */
  url: string;
  servers: ClusterServer[];
  /** Stops HAProxy and every server still running, and removes their directories. */
  close(): Promise<void>;
}

const HAPROXY = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find((candidate) => existsSync(candidate)) ?? 'haproxy';

/** HAProxy's configuration: round-robin, health checks on /ready, long timeouts so that SSE streams stay open. */
export function haproxyConfig(port: number, servers: { url: string }[]): string {
  const lines = [
    'global',
    '  maxconn 4000',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 1h',
    '  timeout server 1h',
    '  timeout tunnel 1h',
    '  timeout http-keep-alive 10s',
    // A busy server answers its health check late rather than not at all: only silence takes it out.
    '  timeout check 5s',
    // A request that could not reach a server (it just died) goes to another; nothing it sent was handled.
    '  option redispatch',
    '  retries 2',
    '  retry-on conn-failure',
    // One request per server connection (clients keep theirs alive): a server closes an idle keep-alive
    // connection after 5 s, and a request sent on one at that instant would be cut, not retried.
    '  option http-server-close',
    'frontend api',
    `  bind 127.0.0.1:${port}`,
    '  default_backend servers',
    'backend servers',
    '  balance roundrobin',
    '  option httpchk GET /ready',
    '  http-check expect status 200',
    '  default-server inter 1s fastinter 250ms downinter 500ms fall 2 rise 2 observe layer4 error-limit 1 on-error fastinter',
    ...servers.map((server, index) => `  server s${index + 1} ${new URL(server.url).host} check`),
  ];
  return `${lines.join('\n')}\n`;
}

/** Creates the database named in `url` when it does not exist. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}

async function startServer(index: number, env: Record<string, string>, onLog: (line: string) => void): Promise<{ url: string; process: NodeProcess; logs: string[] }> {
  const logs: string[] = [];
  let listening: (port: number) => void = () => undefined;
  const child = spawnLaunch(serverCommand({ PORT: '0', LOG_LEVEL: 'info', ...env }), (line) => {
    logs.push(line);
    onLog(line);
    if (line.includes('"msg":"listening"')) listening(JSON.parse(line).port as number);
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      void child.kill('SIGKILL');
      reject(new Error(`server ${index} did not start:\n${logs.join('\n')}`));
    }, 60_000);
    listening = (value) => {
      clearTimeout(timer);
      resolve(value);
    };
    child.child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server ${index} exited with ${code}:\n${logs.join('\n')}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, process: child, logs };
}

async function untilServing(url: string, haproxy: ChildProcess, servers: number): Promise<void> {
  // Every server must be up in HAProxy's eyes: as many distinct answers as servers.
  for (let attempt = 0; attempt < 200; attempt++) {
    if (haproxy.exitCode !== null) throw new Error(`haproxy exited with ${haproxy.exitCode}`);
    try {
      const answers = await Promise.all(Array.from({ length: servers * 2 }, () => fetch(`${url}/ready`).then((response) => response.status)));
      if (answers.every((status) => status === 200)) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error('the load balancer did not become ready');
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  await ensureDatabase(options.databaseUrl);
  const env: Record<string, string> = {
    DATABASE_URL: options.databaseUrl,
    // Every server must accept every other's session tokens.
    JWT_SECRET: randomBytes(32).toString('hex'),
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    ...options.env,
  };
  const port = options.port ?? (await freePort());
  env.PUBLIC_URL ??= `http://127.0.0.1:${port}`;
  const dirs: string[] = [];
  const started: { url: string; process: NodeProcess; logs: string[] }[] = [];
  let haproxy: ChildProcess | undefined;
  const close = async () => {
    if (haproxy && haproxy.exitCode === null) {
      const exited = new Promise((resolve) => haproxy!.once('exit', resolve));
      haproxy.kill('SIGTERM');
      await exited;
    }
    await Promise.all(started.map((server) => server.process.kill('SIGTERM')));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const serverEnv = (index: number) => {
      const dataDir = mkdtempSync(path.join(tmpdir(), `oaa-cluster-${index}-`));
      dirs.push(dataDir);
      return { ...env, DATA_DIR: dataDir };
    };
    const log = (index: number) => (line: string) => options.onLog?.(index, line);
    // The first one migrates the database; the others then start together.
    started.push(await startServer(0, serverEnv(0), log(0)));
    started.push(...(await Promise.all(Array.from({ length: options.servers - 1 }, (_, i) => startServer(i + 1, serverEnv(i + 1), log(i + 1))))));
    const dir = mkdtempSync(path.join(tmpdir(), 'oaa-haproxy-'));
    dirs.push(dir);
    const config = path.join(dir, 'haproxy.cfg');
    writeFileSync(config, haproxyConfig(port, started));
    haproxy = spawn(HAPROXY, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let haproxyErrors = '';
    haproxy.stderr!.on('data', (chunk: Buffer) => (haproxyErrors += chunk.toString()));
    const url = `http://127.0.0.1:${port}`;
    await untilServing(url, haproxy, options.servers).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${haproxyErrors}`);
    });
    return {
      url,
      servers: started.map((server, index) => ({
        index,
        url: server.url,
        pid: server.process.child.pid!,
        logs: server.logs,
        kill: server.process.kill,
      })),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      servers: { type: 'string', default: '3' },
      port: { type: 'string', default: '8080' },
      'database-url': { type: 'string' },
      'redis-url': { type: 'string' },
    },
  });
  const cluster = await startCluster({
    servers: Number(values.servers),
    port: Number(values.port),
    databaseUrl: values['database-url'] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/oaa_cluster',
    redisUrl: values['redis-url'] ?? process.env.REDIS_URL,
    onLog: (index, line) => process.stdout.write(`[s${index + 1}] ${line}\n`),
  });
  process.stdout.write(
    `\ncluster ready at ${cluster.url} (HAProxy)\n${cluster.servers.map((server) => `  s${server.index + 1} pid ${server.pid} at ${server.url}`).join('\n')}\n` +
      'kill -9 a pid above to see its runs failed by the others; Ctrl-C stops the cluster.\n',
  );
  const stop = () => void cluster.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
