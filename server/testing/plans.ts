// Functional tests post and search far more than the free plan allows; they run on a plan
// without limits so that what they measure is the feature, not billing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export function unlimitedPlanEnv(): { PLANS_FILE: string } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'oaa-plans-')), 'plans.yaml');
  writeFileSync(
    file,
    `plans:
  - id: unlimited
    name: Unlimited
    limits:
      requests_per_minute: null
      tokens_per_month: null
      runs_per_day: null
      agents: null
      teams: null
      knowledge_documents: null
      knowledge_bytes: null
`,
  );
  return { PLANS_FILE: file };
}
