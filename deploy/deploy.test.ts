// The deployment files, checked offline: they parse, every environment variable they set is one the
// server reads (server/config.ts), and the ports and health paths they use are the server's own.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { haproxyConfig } from '../scripts/cluster.ts';
import { loadConfig } from '../server/config.ts';
import { evalModule, SERVER_ARGS, SERVER_ENV } from '../server/testing/processes.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');
const configSource = read('server/config.ts');
const contract = parse(read('open-agent-api.yaml')) as { paths: Record<string, unknown> };

/** Whether server/config.ts reads this variable. */
const known = (name: string) => configSource.includes(`'${name}'`);
const defaultPort = loadConfig({ NODE_ENV: 'test' }).port;

describe('deployment files', () => {
  it('Dockerfile: multi-stage, runs as a non-root user, checks /health on the port it exposes', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    const exposed = Number(/^EXPOSE (\d+)$/m.exec(dockerfile)?.[1]);
    expect(exposed).toBe(defaultPort);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/health/m);
    for (const [, name] of dockerfile.matchAll(/^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]+)=/gm)) if (!(name! in SERVER_ENV)) expect(known(name!), name).toBe(true);
    for (const [name, value] of Object.entries(SERVER_ENV)) expect(dockerfile).toMatch(new RegExp(`^ENV ${name}=${value}$`, 'm'));
    expect(Number(/PORT=(\d+)/.exec(dockerfile)?.[1])).toBe(exposed);
    // What the image runs exists.
    const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(command ?? '[]')).toEqual(['node', ...SERVER_ARGS]);
  });

  it('npm start and npm run dev start the server as the image does', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    const env = Object.entries(SERVER_ENV).map(([name, value]) => `${name}=${value}`);
    expect(scripts.start).toBe([...env, 'node', ...SERVER_ARGS].join(' '));
    expect(scripts.dev).toBe([...env, 'node', '--watch', ...SERVER_ARGS].join(' '));
  });

  // What SERVER_ENV's malloc setting does, in a process of its own: once an 8 MB block has been freed (scrypt's
  // work area, freed before it returns; Node's start-up often frees one already), glibc left to itself serves
  // 32 MB of 256 kB blocks from its heap and keeps them when they are freed; with the setting it maps each
  // one and gives it back. A misspelt tunable is ignored without a word, so this shows the setting takes.
  it.runIf((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime)('SERVER_ENV gives freed memory back to the system', async () => {
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
    const withServerEnv = await evalModule<{ keptMb: number }>(probe, ['--expose-gc'], SERVER_ENV);
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
