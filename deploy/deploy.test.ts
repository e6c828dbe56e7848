// The deployment files, checked offline: they parse, every environment variable they set is one the
// server reads (server/config.ts), and the ports and health paths they use are the server's own.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { haproxyConfig } from '../scripts/cluster.ts';
import { loadConfig } from '../server/config.ts';
import { SERVER_ARGS } from '../server/testing/processes.ts';

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
    for (const [, name] of dockerfile.matchAll(/^\s*(?:ENV\s+)?([A-Z][A-Z0-9_]+)=/gm)) expect(known(name!), name).toBe(true);
    expect(Number(/PORT=(\d+)/.exec(dockerfile)?.[1])).toBe(exposed);
    // What the image runs exists.
    const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(command ?? '[]')).toEqual(['node', ...SERVER_ARGS]);
  });

  it('npm start and npm run dev start the server as the image does', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(scripts.start).toBe(['node', ...SERVER_ARGS].join(' '));
    expect(scripts.dev).toBe(['node', '--watch', ...SERVER_ARGS].join(' '));
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
