// The contract fuzzer, bounded and with a fixed seed: every operation gets requests generated from its
// schemas, valid ones (never a 5xx) and ones broken in known ways (4xx with the envelope, or the exact
// status), against the real app with response validation on. `npm run fuzz -- --runs N` runs it long.
import { describe, expect, it } from 'vitest';
import { routes } from '../../generated/server.gen.ts';
import { ApiError } from '../errors.ts';
import { runFuzz } from '../testing/fuzz/runner.ts';

const SEED = 20261120;
const RUNS = 6;

describe('contract fuzzing', () => {
  it('finds no 5xx and no wrong answer in any operation', { timeout: 420_000 }, async () => {
    const report = await runFuzz({ runs: RUNS, seed: SEED });
    const { totals } = report;
    console.log(
      `fuzz: ${totals.operations} operations, ${totals.cases} cases (${totals.validCases} valid, ${totals.invalidCases} invalid), ${totals.failures} failures; seed ${SEED}, ${(report.durationMs / 1000).toFixed(1)} s`,
    );
    expect(report.operations.flatMap((op) => op.failures)).toEqual([]);
    expect(report.operations.map((op) => op.operationId).sort()).toEqual(routes.map((route) => route.operationId).sort());
    for (const op of report.operations) {
      expect(op.validCases, op.operationId).toBe(RUNS);
      expect(op.invalidCases, op.operationId).toBeGreaterThanOrEqual(RUNS);
    }
  });

  it('notices a handler that fails, and one that answers off the contract', { timeout: 120_000 }, async () => {
    const report = await runFuzz({
      runs: 3,
      seed: SEED,
      operations: ['getAccount', 'getAccountUsage', 'listAuthProviders'],
      handlers: {
        async getAccount() {
          throw new Error('A bug.');
        },
        async getAccountUsage() {
          return { status: 200, body: { object: 'not usage' } as never };
        },
        async listAuthProviders() {
          throw new ApiError('upstream_error');
        },
      },
    });
    const failed = report.operations.flatMap((op) => op.failures.filter((failure) => failure.kind === 'valid').map((failure) => [op.operationId, failure.problem.slice(0, 12)]));
    expect(failed.sort()).toEqual([
      ['getAccount', 'answered 500'],
      ['getAccountUsage', 'answered 500'],
      ['listAuthProviders', 'answered 502'],
    ]);
    // The server's log for the failing request comes with the report.
    const account = report.operations.find((op) => op.operationId === 'getAccount')!;
    expect(account.failures.find((failure) => failure.kind === 'valid')!.log.join('\n')).toContain('A bug.');
  });
});
