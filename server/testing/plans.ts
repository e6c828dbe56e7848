// Functional tests post and search far more than the free plan allows; they run on a plan
// without limits so that what they measure is the feature, not billing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A plan's `limits` in plans.yaml with every limit off, indented for an entry of `plans`. */
export const NO_LIMITS = `    limits:
      requests_per_minute: null
      tokens_per_month: null
      runs_per_day: null
      agents: null
      teams: null
      knowledge_documents: null
      knowledge_bytes: null
`;

export function unlimitedPlanEnv(): { PLANS_FILE: string } {
  return planEnv({});
}

/** PLANS_FILE of one plan, every user's, with the given `limits` and every other limit off. */
export function planEnv(limits: Record<string, number>): { PLANS_FILE: string } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'oaa-plans-')), 'plans.yaml');
  const lines = NO_LIMITS.replace(/^( {6})(\w+): null$/gm, (line, indent: string, metric: string) => (metric in limits ? `${indent}${metric}: ${limits[metric]}` : line));
  writeFileSync(file, `plans:\n  - id: only\n    name: Only\n${lines}`);
  return { PLANS_FILE: file };
}
