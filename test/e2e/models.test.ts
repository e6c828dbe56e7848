// The model catalog as the server process reads it at start-up: a bad MODELS_FILE stops it with a message
// that names the file's problem.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from './server-process.ts';

describe('model catalog at start-up', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oaa-models-e2e-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to start on a bad MODELS_FILE, saying what is wrong', async () => {
    const file = path.join(dir, 'models.yaml');
    writeFileSync(file, 'models:\n  - id: smart\n    provider: nowhere\n');
    await expect(startServerProcess({ DATA_DIR: dir, MODELS_FILE: file })).rejects.toThrow(
      /Configuration error: the model catalog is invalid: model smart: names the unknown provider nowhere/,
    );
  });
});
