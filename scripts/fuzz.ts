// Fuzzes every operation of the contract against the real app, in-process on a random loopback port.
//   npm run fuzz -- --runs 200                  200 cases per operation and kind of input
//   npm run fuzz -- --seed 7 --operation createAgent --operation chatWithAgent
//   npm run fuzz -- --engine postgres --shrink --json report.json
// Exits 1 when any answer was a 5xx, broke off, or was not what the input called for.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runFuzz } from '../server/testing/fuzz/runner.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    seed: { type: 'string' },
    operation: { type: 'string', multiple: true },
    engine: { type: 'string', default: 'pglite' },
    shrink: { type: 'boolean', default: false },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log('npm run fuzz -- [--runs N] [--seed S] [--operation opId]... [--engine pglite|postgres] [--shrink] [--json file]');
  process.exit(0);
}
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer; got ${values.runs}.`);
if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer; got ${values.seed}.`);
if (values.engine !== 'pglite' && values.engine !== 'postgres') throw new Error(`--engine must be pglite or postgres; got ${values.engine}.`);

console.log(`fuzz: seed ${seed}, ${runs} cases per operation and kind, on ${values.engine}`);
const report = await runFuzz({
  runs,
  seed,
  engine: values.engine,
  shrink: values.shrink,
  ...(values.operation ? { operations: values.operation } : {}),
  progress: (line) => console.log(line),
});
for (const failure of report.operations.flatMap((op) => op.failures)) {
  console.log(`\nFAILED ${failure.operationId} (${failure.kind}): ${failure.description}\n  ${failure.problem}\n\n${failure.request.replace(/^/gm, '    ')}`);
  for (const line of failure.log) console.log(`  server: ${line}`);
}
const { totals } = report;
console.log(
  `\nfuzz: ${totals.operations} operations, ${totals.cases} cases (${totals.validCases} valid, ${totals.invalidCases} invalid), ${totals.failures} failures; seed ${seed}, ${(report.durationMs / 1000).toFixed(1)} s`,
);
if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
process.exit(totals.failures > 0 ? 1 : 0);
