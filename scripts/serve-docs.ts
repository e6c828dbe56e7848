// Serves the built docs/ folder over HTTP, so the pages can be opened at
// http://localhost:8080/redoc/index.html and http://localhost:8080/swagger-ui/index.html.
//   node scripts/serve-docs.ts [--port N] [--host H]     (PORT also sets the port; default 8080)
// Builds the docs first when they are missing or older than open-agent-api.yaml.
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { buildDocs, defaultDocsDir } from './build-docs.ts';
import { contractPath } from './contract.ts';

export interface DocsServerOptions {
  /** The folder to serve; defaults to docs/. */
  root?: string;
  /** Interface to listen on; loopback by default, since these are docs for the person at this machine. */
  host?: string;
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.yaml': 'application/yaml; charset=utf-8',
  '.yml': 'application/yaml; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

// Files like LICENSE and NOTICE have no extension but are plain text.
const fallbackType = 'text/plain; charset=utf-8';

const landingPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Open Agent API docs</title><link rel="icon" href="data:,"></head>
<body><ul><li><a href="/redoc/index.html">ReDoc</a></li><li><a href="/swagger-ui/index.html">Swagger UI</a></li></ul></body></html>
`;

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** Maps a URL path to a file under root, or null when it is malformed, hidden or escapes root. */
async function locate(root: string, realRoot: string, urlPath: string): Promise<string | null> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  // Dot-segments are already folded by URL parsing, but a decoded %2F can still smuggle in "..".
  const segments = decoded.split('/').filter(Boolean);
  if (segments.some((s) => s.startsWith('.'))) return null;
  const candidate = resolve(root, ...segments);
  if (candidate !== root && !candidate.startsWith(root + sep)) return null;
  try {
    // A symlink inside docs/ must not lead outside it either.
    const real = await realpath(candidate);
    if (real !== realRoot && !real.startsWith(realRoot + sep)) return null;
    return real;
  } catch {
    return null;
  }
}

async function handle(root: string, realRoot: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, 'Method not allowed\n', { Allow: 'GET, HEAD' });
    return;
  }
  const target = req.url ?? '';
  if (!target.startsWith('/')) {
    send(res, 400, 'Bad request\n');
    return;
  }
  // Prefixing an origin (rather than passing one as the base) keeps "//name" a path instead of a host.
  const { pathname } = new URL(`http://localhost${target}`);
  if (pathname === '/') {
    send(res, 200, landingPage, { 'Content-Type': 'text/html; charset=utf-8' });
    return;
  }
  let file = await locate(root, realRoot, pathname);
  let info = file ? await stat(file).catch(() => null) : null;
  if (file && info?.isDirectory()) {
    if (!pathname.endsWith('/')) {
      // Relative asset URLs in index.html only resolve against a path ending in "/". Rebuilt from its
      // segments so that "//host" cannot turn into a protocol-relative redirect to another site.
      const location = `/${pathname.split('/').filter(Boolean).join('/')}/`;
      send(res, 301, 'Moved\n', { Location: location });
      return;
    }
    file = await locate(root, realRoot, `${pathname}index.html`);
    info = file ? await stat(file).catch(() => null) : null;
  }
  if (!file || !info?.isFile()) {
    send(res, 404, 'Not found\n');
    return;
  }
  res.writeHead(200, {
    'Content-Type': contentTypes[extname(file).toLowerCase()] ?? fallbackType,
    'Content-Length': String(info.size),
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
  });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res);
}

/** Starts serving root (docs/ by default) on port (0 picks a free one) and resolves once it listens. */
export async function startDocsServer(port: number, options: DocsServerOptions = {}): Promise<Server> {
  const root = resolve(options.root ?? defaultDocsDir);
  const realRoot = await realpath(root);
  const server = createServer((req, res) => {
    handle(root, realRoot, req, res).catch(() => {
      if (!res.headersSent) send(res, 500, 'Internal error\n');
      else res.destroy();
    });
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(port, options.host ?? '127.0.0.1', () => {
      server.off('error', fail);
      done();
    });
  });
  return server;
}

async function mtime(path: string): Promise<number | null> {
  return stat(path).then(
    (s) => s.mtimeMs,
    () => null,
  );
}

/** True when either page is missing or was built before the contract last changed. */
async function docsNeedBuild(root: string): Promise<boolean> {
  const contract = await mtime(contractPath);
  for (const page of ['redoc/index.html', 'swagger-ui/index.html']) {
    const built = await mtime(join(root, page));
    if (built === null || (contract !== null && built < contract)) return true;
  }
  return false;
}

function parseArgs(argv: string[]): { port: number; host: string } {
  let port: string | undefined = process.env.PORT;
  let host = '127.0.0.1';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const [flag, inline] = arg.split('=', 2) as [string, string | undefined];
    const value = inline ?? argv[i + 1];
    if ((flag === '--port' || flag === '--host') && value !== undefined) {
      if (inline === undefined) i++;
      if (flag === '--port') port = value;
      else host = value;
    } else {
      throw new Error(`Unknown argument ${arg}. Usage: node scripts/serve-docs.ts [--port N] [--host H]`);
    }
  }
  const parsed = port === undefined || port === '' ? 8080 : Number(port);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535) throw new Error(`Invalid port: ${port}`);
  return { port: parsed, host };
}

if (import.meta.main) {
  const { port, host } = parseArgs(process.argv.slice(2));
  if (await docsNeedBuild(defaultDocsDir)) {
    console.log('Docs are missing or older than open-agent-api.yaml; building them first.');
    await buildDocs();
  }
  const server = await startDocsServer(port, { host });
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const shown = host === '127.0.0.1' || host === '::1' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  const base = `http://${shown}:${actualPort}`;
  console.log(`Serving ${defaultDocsDir}\n  ${base}/redoc/index.html\n  ${base}/swagger-ui/index.html\nCtrl+C to stop.`);
}
