// The rules of the code's shape that the compiler cannot check: no import circles in server/ or bench/,
// handler files that import domain modules but never another handler folder, the domain below HTTP, and
// one module that builds a run's terminal events.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '..');

function sources(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('.test-d.ts'))
    .map((file) => path.join(folder, file));
}

const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/gm;

/** The project files a file imports (type imports included: a circle of types is a circle of meaning). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2]!;
    if (!specifier.startsWith('.')) continue;
    found.push(path.normalize(path.join(path.dirname(file), specifier)));
  }
  return found;
}

const files = [...sources('server'), ...sources('bench')];
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => target.startsWith('server') || target.startsWith('bench'))]));

function cycles(): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const trail: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    trail.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...trail.slice(trail.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    trail.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

/** Where each tag's handlers live: one file per tag's domain, so an operation's handler is found from its tag. */
const HANDLER_FILES: Record<string, string> = {
  System: 'server/system/handlers.ts',
  Auth: 'server/identity/handlers.ts',
  Account: 'server/identity/handlers.ts',
  'API Keys': 'server/identity/handlers.ts',
  Models: 'server/models/handlers.ts',
  Agents: 'server/agents/handlers.ts',
  Teams: 'server/teams/handlers.ts',
  Sessions: 'server/sessions/handlers.ts',
  Runs: 'server/runs/handlers.ts',
  Knowledge: 'server/knowledge/handlers.ts',
  Billing: 'server/billing/handlers.ts',
  AgentScope: 'server/protocols/handlers.ts',
  Connexity: 'server/protocols/handlers.ts',
  'AG-UI': 'server/protocols/handlers.ts',
  Responses: 'server/responses/handlers.ts',
  Conversations: 'server/responses/handlers.ts',
  A2A: 'server/a2a/handlers.ts',
  MCP: 'server/mcp/handlers.ts',
};

describe('the shape of the code', () => {
  it("keeps each operation's handler in the file of its tag", () => {
    const contract = parse(readFileSync(path.join(root, 'open-agent-api.yaml'), 'utf8')) as { paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>> };
    const misplaced: string[] = [];
    for (const operations of Object.values(contract.paths)) {
      for (const operation of Object.values(operations)) {
        if (!operation.operationId) continue;
        const file = HANDLER_FILES[operation.tags?.[0] ?? ''];
        const text = file ? readFileSync(path.join(root, file), 'utf8') : '';
        if (!new RegExp(`^    (async )?${operation.operationId}\\(`, 'm').test(text)) misplaced.push(`${operation.operationId} (${operation.tags?.[0]}) is not in ${file}`);
      }
    }
    expect(misplaced).toEqual([]);
  });

  it('has no import circle in server/ or bench/', () => {
    expect(cycles().map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('has handler files that never import another handler folder', () => {
    const handlerFiles = files.filter((file) => /^server\/[^/]+\/handlers\.ts$/.test(file));
    expect(handlerFiles.length).toBeGreaterThan(5);
    const crossings = handlerFiles.flatMap((file) =>
      (graph.get(file) ?? [])
        .filter((target) => /^server\/[^/]+\/handlers\.ts$/.test(target) && path.dirname(target) !== path.dirname(file))
        .map((target) => `${file} → ${target}`),
    );
    expect(crossings).toEqual([]);
  });

  it('keeps the store and the domain below HTTP: only handlers and the app import server/http/', () => {
    const above = new Set(['server/app.ts', 'server/handlers.ts', 'server/services.ts', 'server/main.ts', 'server/serve.ts']);
    const crossings = files
      .filter((file) => file.startsWith('server/') && !file.startsWith('server/http/') && !file.startsWith('server/testing/'))
      .filter((file) => !above.has(file) && !file.endsWith('/handlers.ts'))
      .flatMap((file) => (graph.get(file) ?? []).filter((target) => target.startsWith('server/http/')).map((target) => `${file} → ${target}`));
    expect(crossings).toEqual([]);
  });

  it('builds terminal run events in one module, the run lifecycle', () => {
    const terminal = /type:\s*'(RunCompleted|RunError|ToolRequest)'/;
    const builders = files.filter((file) => file.startsWith('server/') && terminal.test(readFileSync(path.join(root, file), 'utf8')));
    expect(builders).toEqual(['server/runs/lifecycle.ts']);
  });
});
