// Preloaded into a server under benchmark (`node --import ./bench/memory-hook.ts server/main.ts`): records
// every module the process loads, by package, and on SIGUSR2 writes to $MEMORY_REPORT_FILE what its memory holds
// (process.memoryUsage and V8's heap spaces), the packages loaded so far, and a heap snapshot next to it
// (`<file>.heapsnapshot`) for bench/startup.ts to break down.
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
import v8 from 'node:v8';

const file = process.env.MEMORY_REPORT_FILE;
if (!file) throw new Error('MEMORY_REPORT_FILE must name the file the report is written to.');
const packages = new Map<string, Set<string>>();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url);
    const name = match ? match[1]! : resolved.url.startsWith('node:') ? undefined : '(this project)';
    if (name) {
      if (!packages.has(name)) packages.set(name, new Set());
      packages.get(name)!.add(resolved.url);
    }
    return resolved;
  },
});

process.on('SIGUSR2', () => {
  const snapshot = `${file}.heapsnapshot`;
  v8.writeHeapSnapshot(snapshot);
  const report = {
    memory: process.memoryUsage(),
    heapSpaces: v8.getHeapSpaceStatistics().map((space) => ({ name: space.space_name, usedBytes: space.space_used_size })),
    modules: Object.fromEntries([...packages.entries()].map(([name, urls]) => [name, urls.size] as const).sort((a, b) => b[1] - a[1])),
    snapshot,
  };
  writeFileSync(file, JSON.stringify(report));
  process.stdout.write(`${JSON.stringify({ msg: 'memory report written', file })}\n`);
});
