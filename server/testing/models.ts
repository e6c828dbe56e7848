// For tests of the model endpoints: a model catalog written where MODELS_FILE can name it, and the
// error of an `openai` SDK call that is meant to fail.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { APIError } from 'openai';
import { stringify } from 'yaml';

export interface ModelsFile {
  /** The catalog's path, for MODELS_FILE. */
  file: string;
  remove(): void;
}

/** Writes `catalog` (providers and models, as models.yaml has them) to a new temporary folder. */
export function writeModelsFile(prefix: string, catalog: { providers: Record<string, unknown>[]; models: Record<string, unknown>[] }): ModelsFile {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const file = path.join(dir, 'models.yaml');
  writeFileSync(file, stringify(catalog));
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The APIError the call fails with; any other outcome fails the test. */
export async function failure(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}
