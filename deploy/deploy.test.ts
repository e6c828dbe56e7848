// The deployment files, checked offline: they parse, every environment variable they set is one the
// server reads (server/config.ts), and the ports and health paths they use are the server's own.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { haproxyConfig } from '../scripts/cluster.ts';
import { loadConfig } from '../server/config.ts';
import { evalModule, serverCommand } from '../server/testing/processes.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');
const configSource = read('server/config.ts');
const contract = parse(read('open-agent-api.yaml')) as { paths: Record<string, unknown> };

/** Whether server/config.ts reads this variable. */
const known = (name: string) => configSource.includes(`'${name}'`);
const defaultPort = loadConfig({ NODE_ENV: 'test' }).port;
const serveScript = read('scripts/serve.sh');
/** The glibc setting the start script exports unless GLIBC_TUNABLES is set. */
const glibcDefault = /export GLIBC_TUNABLES="\$\{GLIBC_TUNABLES-([^}]+)\}"/.exec(serveScript)?.[1];
/** The jemalloc the start script finds on this system, if any: the first of the paths it tries. */
const jemalloc = /for lib in (.*); do/.exec(serveScript)?.[1]?.split(' ').find((lib) => existsSync(lib));

describe('deployment files', () => {
  it('Dockerfile: multi-stage, runs as a non-root user, checks /health on the port it exposes', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    const exposed = Number(/^EXPOSE (\d+)$/m.exec(dockerfile)?.[1]);
    expect(exposed).toBe(defaultPort);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/health/m);
    for (const [, name] of dockerfile.matchAll(/^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]+)=/gm)) expect(known(name!), name).toBe(true);
    expect(Number(/PORT=(\d+)/.exec(dockerfile)?.[1])).toBe(exposed);
    // What the image runs exists: the start script, copied in, with the jemalloc it looks for installed.
    const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(command ?? '[]')).toEqual(['sh', 'scripts/serve.sh']);
    expect(dockerfile).toMatch(/^COPY scripts\/serve\.sh \.\/scripts\/serve\.sh$/m);
    expect(dockerfile).toMatch(/apt-get install -y --no-install-recommends libjemalloc2/);
  });

  it('npm start, npm run dev, and the tests, the cluster and the benches (serverCommand) start the server as the image does', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(scripts.start).toBe('sh scripts/serve.sh');
    expect(scripts.dev).toBe('sh scripts/serve.sh --watch');
    const launch = serverCommand({ PORT: '0' }, ['--inspect']);
    expect([launch.program, ...launch.args]).toEqual(['sh', 'scripts/serve.sh', '--inspect']);
    expect(launch.env.PORT).toBe('0');
    expect(serveScript).toContain('exec node "$@" --max-semi-space-size=16 server/main.ts\n');
  });

  // The start script in a process of its own, as serverCommand starts it: an --import that reports what the
  // process started with and exits before the server loads.
  const started = async (env: Record<string, string>) => {
    const report = `data:text/javascript,${encodeURIComponent(`
      const { readdirSync, readFileSync } = await import('node:fs');
      const threads = readdirSync('/proc/self/task').map((id) => readFileSync('/proc/self/task/' + id + '/comm', 'utf8').trim());
      console.log(JSON.stringify({
        execPath: process.execPath,
        execArgv: process.execArgv,
        tunables: process.env.GLIBC_TUNABLES,
        jemalloc: readFileSync('/proc/self/maps', 'utf8').includes('libjemalloc'),
        purging: threads.includes('jemalloc_bg_thd'),
      }));
      process.exit(0);`)}`;
    const launch = serverCommand(env, ['--import', report]);
    const { stdout, stderr } = await promisify(execFile)(launch.program, launch.args, { cwd: root, env: launch.env });
    // jemalloc says so on stderr when it does not know an option of MALLOC_CONF.
    expect(stderr).toBe('');
    return JSON.parse(stdout) as { execPath: string; execArgv: string[]; tunables?: string; jemalloc: boolean; purging: boolean };
  };

  it.runIf(process.platform === 'linux')('the start script runs node with the server arguments, on jemalloc where the system has it', async () => {
    const plain = await started({});
    // This Node, whatever node the PATH names first.
    expect(plain.execPath).toBe(process.execPath);
    expect(plain.execArgv).toEqual(expect.arrayContaining(['--max-semi-space-size=16']));
    expect(glibcDefault).toBe('glibc.malloc.mmap_threshold=131072');
    expect(plain.tunables).toBe(glibcDefault);
    expect(plain.jemalloc).toBe(jemalloc !== undefined);
    // With the script's MALLOC_CONF: jemalloc's own thread gives freed pages back.
    expect(plain.purging).toBe(jemalloc !== undefined);
    // An operator's own settings win: LD_PRELOAD set (here empty) keeps glibc's malloc, GLIBC_TUNABLES stays.
    const own = await started({ LD_PRELOAD: '', GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
    expect(own.jemalloc).toBe(false);
    expect(own.purging).toBe(false);
    expect(own.tunables).toBe('glibc.malloc.arena_max=2');
  });

  // CI installs jemalloc where it is missing (.ci/run), so that the test above runs the server on it.
  it.runIf(process.env.CI === 'true')('finds jemalloc on CI', () => {
    expect(jemalloc).toBeDefined();
  });

  // What the start script's glibc malloc setting does, in a process of its own: once an 8 MB block has been freed (scrypt's
  // work area, freed before it returns; Node's start-up often frees one already), glibc left to itself serves
  // 32 MB of 256 kB blocks from its heap and keeps them when they are freed; with the setting it maps each
  // one and gives it back. A misspelt tunable is ignored without a word, so this shows the setting takes.
  it.runIf((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime)("the start script's glibc setting gives freed memory back to the system", async () => {
    const probe = `
      const { readFileSync } = await import('node:fs');
      const { scryptSync } = await import('node:crypto');
      const heapMb = () => { const smaps = readFileSync('/proc/self/smaps', 'utf8'); const at = smaps.indexOf('[heap]'); return at < 0 ? 0 : Number(/Rss:\\s+(\\d+)/.exec(smaps.slice(at))[1]) / 1024; };
      scryptSync('', '', 16, { N: 8192, r: 8 });
      const before = heapMb();
      let held = Array.from({ length: 128 }, () => Buffer.alloc(256 << 10, 1));
      const pinned = Buffer.alloc(64 << 10, 1);
      held = null;
      gc();
      await new Promise((resolve) => setTimeout(resolve, 50));
      console.log(JSON.stringify({ keptMb: heapMb() - before, pinned: pinned.length }));
    `;
    const alone = await evalModule<{ keptMb: number }>(probe, ['--expose-gc']);
    const withServerEnv = await evalModule<{ keptMb: number }>(probe, ['--expose-gc'], { GLIBC_TUNABLES: glibcDefault! });
    expect(alone.keptMb).toBeGreaterThan(24);
    expect(withServerEnv.keptMb).toBeLessThan(4);
  });

  it('compose.yaml: servers, PostgreSQL with pgvector, Redis and a load balancer, with known variables and matching ports', () => {
    const compose = parse(read('compose.yaml')) as { services: Record<string, { image?: string; environment?: Record<string, string>; expose?: string[] }> };
    const { api, postgres, redis, lb } = compose.services;
    expect(postgres?.image).toMatch(/pgvector/);
    expect(redis?.image).toMatch(/redis/);
    expect(lb?.image).toMatch(/haproxy/);
    for (const name of Object.keys(api?.environment ?? {})) expect(known(name), name).toBe(true);
    const port = api!.environment!.PORT!;
    expect(api?.expose).toEqual([port]);
    const haproxy = read('deploy/haproxy.cfg');
    expect(haproxy).toContain(`api:${port}`);
    expect(haproxy).toContain('option httpchk GET /ready');
    // No request is sent on a server connection the server is closing for idleness.
    expect(haproxy).toContain('option http-server-close');
  });

  it('Helm chart: parses, sets only known variables, probes /health and /ready on the container port', () => {
    const chart = parse(read('deploy/helm/open-agent-api/Chart.yaml')) as { apiVersion: string; name: string };
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'open-agent-api' });
    const values = parse(read('deploy/helm/open-agent-api/values.yaml')) as { port: number; env: Record<string, string>; secretEnv: Record<string, string> };
    expect(values.port).toBe(defaultPort);
    for (const name of [...Object.keys(values.env), ...Object.keys(values.secretEnv)]) expect(known(name), name).toBe(true);
    const templates = readdirSync(`${root}deploy/helm/open-agent-api/templates`).map((file) => read(`deploy/helm/open-agent-api/templates/${file}`));
    const deployment = templates.join('\n');
    for (const [, name] of deployment.matchAll(/- name: ([A-Z][A-Z0-9_]+)$/gm)) expect(known(name!), name).toBe(true);
    expect(deployment).toMatch(/livenessProbe:\s+httpGet:\s+path: \/health/);
    expect(deployment).toMatch(/readinessProbe:\s+httpGet:\s+path: \/ready/);
    expect(deployment).toContain('containerPort: {{ .Values.port }}');
    // Without Helm's directives the templates are YAML.
    for (const template of templates) {
      const plain = template.replace(/^\s*\{\{-.*\}\}\s*$/gm, '').replace(/\{\{[^}]*\}\}/g, 'x');
      expect(() => parse(plain)).not.toThrow();
    }
  });

  it('the health paths the files use are the contract’s', () => {
    expect(Object.keys(contract.paths)).toEqual(expect.arrayContaining(['/health', '/ready']));
    expect(haproxyConfig(8080, [{ url: 'http://127.0.0.1:3001' }])).toContain('option httpchk GET /ready');
    expect(haproxyConfig(8080, [{ url: 'http://127.0.0.1:3001' }])).toContain('option http-server-close');
  });
});
