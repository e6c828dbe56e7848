// A real OpenAI-compatible embeddings server on loopback, for the tests that need a model to fail or to
// hang, and the model catalog that points at it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface Upstream {
  url: string;
  /** Answer 500 to every request. */
  failing: boolean;
  /** Hold every request unanswered until `release()`. */
  hanging: boolean;
  calls: number;
  /** Resolves when the next request arrives. */
  nextRequest(): Promise<void>;
  release(): void;
  close(): Promise<void>;
}

/** 8-dimensional unit vectors from character counts: deterministic, and different texts differ. */
function vectorOf(text: string): number[] {
  const vector = Array.from({ length: 8 }, (_, i) => 1 + [...text].filter((c) => c.charCodeAt(0) % 8 === i).length);
  const norm = Math.hypot(...vector);
  return vector.map((v) => v / norm);
}

export async function startUpstream(): Promise<Upstream> {
  const held: (() => void)[] = [];
  let arrived: (() => void)[] = [];
  const answer = (res: ServerResponse, raw: string) => {
    res.setHeader('Content-Type', 'application/json');
    if (upstream.failing) {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: { message: 'the embedding service is down', type: 'server_error' } }));
      return;
    }
    const { input } = JSON.parse(raw) as { input: string[] };
    const data = input.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text) }));
    res.end(JSON.stringify({ object: 'list', data, model: 'flaky', usage: { prompt_tokens: input.length, total_tokens: input.length } }));
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      upstream.calls += 1;
      for (const resolve of arrived) resolve();
      arrived = [];
      if (upstream.hanging) held.push(() => answer(res, raw));
      else answer(res, raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const upstream: Upstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    failing: false,
    hanging: false,
    calls: 0,
    nextRequest: () => new Promise<void>((resolve) => arrived.push(resolve)),
    release() {
      upstream.hanging = false;
      for (const send of held.splice(0)) send();
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return upstream;
}

/**
 * A catalog with models on the upstream: `flaky-embedding` (8 dimensions), `guarded-embedding` (which
 * falls back to local-embedding), and `second-embedding`, a local one that does not state its dimension.
 */
export function modelsFileFor(upstream: Upstream): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'oaa-knowledge-models-')), 'models.yaml');
  writeFileSync(
    file,
    `providers:
  - name: upstream
    type: openai-compatible
    base_url: ${upstream.url}
models:
  - id: flaky-embedding
    provider: upstream
    upstream: flaky
    capabilities: [embeddings]
    dimensions: 8
  - id: guarded-embedding
    provider: upstream
    upstream: flaky
    capabilities: [embeddings]
    dimensions: 256
    fallbacks: [local-embedding]
  - id: second-embedding
    provider: local
    upstream: local-embedding
    capabilities: [embeddings]
`,
  );
  return file;
}
