// The conformance suite: runs every check against a server over HTTP and answers a structured report.
// It knows the server only through the contract and its answers, so it judges any implementation.
import { randomBytes } from 'node:crypto';
import { loadContract, type OperationId } from './contract.ts';
import { Context, type Check } from './context.ts';
import { Client, Halt, networkError } from './http.ts';
import { Recorder, type ConformanceReport } from './report.ts';
import { a2aChecks } from './checks/a2a.ts';
import { accountChecks } from './checks/account.ts';
import { agentChecks } from './checks/agents.ts';
import { authChecks } from './checks/auth.ts';
import { generalChecks } from './checks/general.ts';
import { knowledgeChecks } from './checks/knowledge.ts';
import { mcpChecks } from './checks/mcp.ts';
import { modelChecks } from './checks/models.ts';
import { ownershipChecks } from './checks/ownership.ts';
import { protocolChecks } from './checks/protocols.ts';
import { responseChecks } from './checks/responses.ts';
import { systemChecks } from './checks/system.ts';
import { teamChecks } from './checks/teams.ts';

export type { ConformanceReport } from './report.ts';
export { formatReport, summaryLine } from './report.ts';

export interface ConformanceOptions {
  baseUrl: string;
  apiKey: string;
  /** A key of another user, for the ownership checks; they are skipped without it. */
  apiKey2?: string;
  /** The chat model agents are made with; the server's first chat model by default. */
  model?: string;
  /** Only these operations (and the checks that judge them). */
  only?: readonly string[];
  /** The contract to judge by; the kit's own open-agent-api.yaml by default. */
  contractFile?: string;
  /** Per request, in milliseconds (default 60 000). */
  timeoutMs?: number;
}

const checks: readonly Check[] = [
  ...generalChecks,
  ...systemChecks,
  ...authChecks,
  ...accountChecks,
  ...modelChecks,
  ...agentChecks,
  ...protocolChecks,
  ...teamChecks,
  ...a2aChecks,
  ...knowledgeChecks,
  ...responseChecks,
  ...mcpChecks,
  ...ownershipChecks,
];

/** The run cannot start: an unknown operation in `only`, or a server that does not answer. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const contract = loadContract(options.contractFile);
  const known = new Set<string>(contract.operations.map((operation) => operation.operationId));
  const unknown = (options.only ?? []).filter((operationId) => !known.has(operationId));
  if (unknown.length) throw new UsageError(`--only names operations the contract does not have: ${unknown.join(', ')}`);
  const only = options.only?.length ? new Set(options.only) : undefined;
  const selected = (operationId: OperationId) => !only || only.has(operationId);

  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  try {
    await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(options.timeoutMs ?? 60_000) });
  } catch (error) {
    throw new UsageError(`Cannot reach ${baseUrl}: ${networkError(error)}`);
  }
  const recorder = new Recorder();
  const client = new Client({
    baseUrl,
    contract,
    recorder,
    primaryKey: options.apiKey,
    secondaryKey: options.apiKey2,
    timeoutMs: options.timeoutMs ?? 60_000,
    // A 429 waits out its Retry-After, up to a minute, five times before the kit gives up on the request.
    maxRetries: 5,
    maxRetryAfterSeconds: 60,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
  const context = new Context({
    client,
    recorder,
    selected,
    model: options.model,
    hasSecondUser: options.apiKey2 !== undefined,
    nonce: randomBytes(4).toString('hex').toUpperCase(),
  });

  try {
    for (const check of checks) {
      if (check.operations.length > 0 && !check.operations.some(selected)) continue;
      try {
        await check.run(context);
      } catch (error) {
        if (error instanceof Halt) continue;
        // A crash after an answer off the contract is that answer's fault, which is already recorded.
        if (client.lastAnswerValid) {
          const operationId = check.operations[0];
          const reason = `the check "${check.name}" stopped: ${(error as Error).message}`;
          if (operationId) recorder.fail(operationId, reason);
          else recorder.generalFail(check.name, reason);
        }
      }
    }
  } finally {
    await context.cleanUp();
  }
  const covered = new Set<string>(checks.flatMap((check) => check.operations));
  for (const operation of contract.operations) {
    if (!covered.has(operation.operationId)) {
      recorder.skip(operation.operationId, 'the kit has no check for this operation yet');
    }
  }
  return recorder.report({ contract, baseUrl, model: context.chatModel, selected });
}
