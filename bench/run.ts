// Runs the benchmark sections, prints each one's figures, and writes each module section's figures as JSON
// to bench/results/ (gitignored). A section is either a module exporting `section` (below), or a
// standalone script, run as a child process with its output passed through.
//   npm run bench                                  every section
//   npm run bench -- gateway                       one section, by name
//   npm run bench -- gateway --duration 10 --profile
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BenchOptions, BenchSection } from './section.ts';

type Entry = { name: string; load: () => Promise<BenchSection> } | { name: string; script: string };

const sections: Entry[] = [
  { name: 'gateway', load: async () => (await import('./gateway.ts')).section },
  { name: 'streams', load: async () => (await import('./streams.ts')).section },
  { name: 'validator', load: async () => (await import('./validator.ts')).section },
  { name: 'startup', load: async () => (await import('./startup.ts')).section },
  { name: 'runs', load: async () => (await import('./runs.ts')).section },
  { name: 'held', load: async () => (await import('./held.ts')).section },
  { name: 'pglite', load: async () => (await import('./pglite.ts')).section },
  { name: 'limits', script: 'bench/limits.ts' },
  { name: 'knowledge', script: 'bench/knowledge.ts' },
];

const root = fileURLToPath(new URL('../', import.meta.url));
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));

async function runScript(script: string): Promise<void> {
  const child = spawn(process.execPath, [script], { cwd: root, stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { duration: { type: 'string', default: '5' }, profile: { type: 'boolean', default: false } },
});
const options: BenchOptions = { durationSeconds: Number(values.duration), profile: values.profile };
const chosen = positionals.length ? sections.filter((entry) => positionals.includes(entry.name)) : sections;
if (chosen.length === 0) {
  console.error(`No such section: ${positionals.join(', ')}. Sections: ${sections.map((entry) => entry.name).join(', ')}.`);
  process.exit(2);
}

mkdirSync(resultsDir, { recursive: true });
for (const entry of chosen) {
  console.log(`\n## ${entry.name}\n`);
  if ('script' in entry) {
    await runScript(entry.script);
    continue;
  }
  const section = await entry.load();
  console.log(`${section.description}\n`);
  const result = await section.run(options);
  console.log(result.report);
  const file = `${resultsDir}${section.name}-${new Date().toISOString().replaceAll(':', '-')}.json`;
  writeFileSync(file, `${JSON.stringify(result.json, null, 2)}\n`);
  console.log(`\nFigures written to ${file}`);
}
