// Bundles the browser playground (playground/src, Preact) with esbuild into playground/dist/, which is
// committed and served by the server at /playground.
//   node scripts/build-playground.ts           write playground/dist/ and print the bundle size
//   node scripts/build-playground.ts --check   build in memory; exit 1 if the committed files differ
// The output is committed, like generated/, so that the server needs no build step and no build tool:
// `npm install && npm start` serves it, so does an install without devDependencies or without install
// scripts, and `npm test` runs --check so that the committed bundle cannot drift from its sources.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

export const playgroundDir = fileURLToPath(new URL('../playground/', import.meta.url));
export const playgroundDist = join(playgroundDir, 'dist');

export interface PlaygroundFile {
  name: string;
  contents: Uint8Array;
}

function versionOf(contents: Uint8Array): string {
  return createHash('sha256').update(contents).digest('hex').slice(0, 12);
}

/** The files of playground/dist/, built in memory. The same sources always give the same bytes. */
export async function buildPlayground(): Promise<PlaygroundFile[]> {
  const result = await build({
    entryPoints: { app: join(playgroundDir, 'src', 'main.tsx') },
    outdir: playgroundDist,
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    // Browsers of the last two years or so; nothing is transpiled down below what they all run.
    target: ['es2022', 'chrome111', 'firefox115', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    charset: 'utf8',
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const outputs = new Map(result.outputFiles.map((file) => [file.path.slice(playgroundDist.length + 1), file.contents]));
  const js = outputs.get('app.js');
  const css = outputs.get('app.css');
  if (!js || !css) throw new Error(`esbuild produced ${[...outputs.keys()].join(', ')}; expected app.js and app.css`);
  // Content versions in the asset URLs: a new build is never mixed with a cached old one.
  const html = readFileSync(join(playgroundDir, 'index.html'), 'utf8')
    .replace('./app.js', `./app.js?v=${versionOf(js)}`)
    .replace('./app.css', `./app.css?v=${versionOf(css)}`);
  return [
    { name: 'app.css', contents: css },
    { name: 'app.js', contents: js },
    { name: 'index.html', contents: new TextEncoder().encode(html) },
  ];
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

/** One line per file and a total: raw and gzipped bytes, as the README quotes them. */
export function sizeReport(files: PlaygroundFile[]): string {
  const rows = files.map((file) => ({ name: file.name, raw: file.contents.length, gzip: gzipSync(file.contents, { level: 9 }).length }));
  const total = rows.reduce((sum, row) => ({ raw: sum.raw + row.raw, gzip: sum.gzip + row.gzip }), { raw: 0, gzip: 0 });
  return [
    ...rows.map((row) => `  ${row.name.padEnd(12)} ${kib(row.raw).padStart(10)}  ${kib(row.gzip).padStart(10)} gzipped`),
    `playground: ${kib(total.raw)} (${kib(total.gzip)} gzipped)`,
  ].join('\n');
}

function differences(files: PlaygroundFile[]): string[] {
  let committed: string[];
  try {
    committed = readdirSync(playgroundDist);
  } catch {
    committed = [];
  }
  const problems = committed.filter((name) => !files.some((file) => file.name === name)).map((name) => `${name} is not built any more`);
  for (const file of files) {
    let current: Buffer | undefined;
    try {
      current = readFileSync(join(playgroundDist, file.name));
    } catch {
      problems.push(`${file.name} is missing`);
      continue;
    }
    if (!current.equals(file.contents)) problems.push(`${file.name} differs from its sources`);
  }
  return problems;
}

async function main(): Promise<void> {
  const files = await buildPlayground();
  if (process.argv.includes('--check')) {
    const problems = differences(files);
    if (problems.length > 0) {
      console.error(`playground/dist is stale (${problems.join('; ')}); run \`npm run playground\` and commit it.`);
      process.exit(1);
    }
    console.log('playground/dist is up to date');
    return;
  }
  rmSync(playgroundDist, { recursive: true, force: true });
  mkdirSync(playgroundDist, { recursive: true });
  for (const file of files) writeFileSync(join(playgroundDist, file.name), file.contents);
  console.log(sizeReport(files));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
