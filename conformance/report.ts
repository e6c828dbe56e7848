// What the kit found: a verdict per operation of the contract and per cross-cutting check, and the text
// and JSON forms of that report.
import type { Contract, OperationId } from './contract.ts';

export type Verdict = 'pass' | 'fail' | 'not_implemented' | 'skipped';

export interface OperationResult {
  operationId: OperationId;
  method: string;
  path: string;
  verdict: Verdict;
  /** Why it failed, is not implemented, or was skipped. */
  reasons: string[];
  /** What was not exercised, and why that is not a failure. */
  notes: string[];
  /** Requests the kit sent to this operation. */
  requests: number;
}

export interface GeneralResult {
  name: string;
  verdict: Exclude<Verdict, 'not_implemented'>;
  reasons: string[];
  notes: string[];
}

export interface Summary {
  passed: number;
  failed: number;
  not_implemented: number;
  skipped: number;
  operations: number;
}

export interface ConformanceReport {
  base_url: string;
  contract_version: string;
  model: string | null;
  operations: OperationResult[];
  general: GeneralResult[];
  summary: Summary;
  /** True when nothing failed, neither an operation nor a general check. */
  ok: boolean;
}

interface OperationLog {
  failures: Set<string>;
  notImplemented: Set<string>;
  skips: Set<string>;
  notes: Set<string>;
  requests: number;
  /** Requests answered with a status the check expected, credential probes aside. */
  answered: number;
}

interface GeneralLog {
  failures: Set<string>;
  skips: Set<string>;
  notes: Set<string>;
}

/** Collects findings while the checks run. */
export class Recorder {
  readonly #operations = new Map<OperationId, OperationLog>();
  readonly #general = new Map<string, GeneralLog>();

  #op(operationId: OperationId): OperationLog {
    let log = this.#operations.get(operationId);
    if (!log) {
      log = { failures: new Set(), notImplemented: new Set(), skips: new Set(), notes: new Set(), requests: 0, answered: 0 };
      this.#operations.set(operationId, log);
    }
    return log;
  }

  #check(name: string): GeneralLog {
    let log = this.#general.get(name);
    if (!log) {
      log = { failures: new Set(), skips: new Set(), notes: new Set() };
      this.#general.set(name, log);
    }
    return log;
  }

  request(operationId: OperationId, answered: boolean): void {
    const log = this.#op(operationId);
    log.requests++;
    if (answered) log.answered++;
  }

  fail(operationId: OperationId, reason: string): void {
    this.#op(operationId).failures.add(reason);
  }

  notImplemented(operationId: OperationId, reason: string): void {
    this.#op(operationId).notImplemented.add(reason);
  }

  isNotImplemented(operationId: OperationId): boolean {
    return (this.#operations.get(operationId)?.notImplemented.size ?? 0) > 0;
  }

  /** The operation's behaviour could not be exercised here (billing off, a quota used up). */
  skip(operationId: OperationId, reason: string): void {
    this.#op(operationId).skips.add(reason);
  }

  note(operationId: OperationId, note: string): void {
    this.#op(operationId).notes.add(note);
  }

  general(name: string): void {
    this.#check(name);
  }

  generalFail(name: string, reason: string): void {
    this.#check(name).failures.add(reason);
  }

  generalSkip(name: string, reason: string): void {
    this.#check(name).skips.add(reason);
  }

  generalNote(name: string, note: string): void {
    this.#check(name).notes.add(note);
  }

  report(input: {
    contract: Contract;
    baseUrl: string;
    model: string | null;
    /** Operations to report; the others appear only when they failed. */
    selected: (operationId: OperationId) => boolean;
  }): ConformanceReport {
    const operations: OperationResult[] = [];
    for (const spec of input.contract.operations) {
      const log = this.#operations.get(spec.operationId);
      if (!input.selected(spec.operationId) && !log?.failures.size) continue;
      let verdict: Verdict;
      let reasons: string[];
      if (log?.failures.size) [verdict, reasons] = ['fail', [...log.failures]];
      else if (log?.notImplemented.size) [verdict, reasons] = ['not_implemented', [...log.notImplemented]];
      else if (log?.skips.size) [verdict, reasons] = ['skipped', [...log.skips]];
      else if (log?.answered) [verdict, reasons] = ['pass', []];
      else [verdict, reasons] = ['skipped', ['not exercised: a check it depends on stopped earlier']];
      operations.push({
        operationId: spec.operationId,
        method: spec.method,
        path: spec.path,
        verdict,
        reasons,
        notes: [...(log?.notes ?? [])],
        requests: log?.requests ?? 0,
      });
    }
    const general: GeneralResult[] = [...this.#general].map(([name, log]) => ({
      name,
      verdict: log.failures.size ? 'fail' : log.skips.size ? 'skipped' : 'pass',
      reasons: [...(log.failures.size ? log.failures : log.skips)],
      notes: [...log.notes],
    }));
    const count = (verdict: Verdict) => operations.filter((operation) => operation.verdict === verdict).length;
    const summary: Summary = {
      passed: count('pass'),
      failed: count('fail'),
      not_implemented: count('not_implemented'),
      skipped: count('skipped'),
      operations: operations.length,
    };
    return {
      base_url: input.baseUrl,
      contract_version: input.contract.version,
      model: input.model,
      operations,
      general,
      summary,
      ok: summary.failed === 0 && general.every((check) => check.verdict !== 'fail'),
    };
  }
}

export function summaryLine(summary: Summary): string {
  return (
    `conformance: ${summary.passed} passed, ${summary.failed} failed, ${summary.not_implemented} not implemented, ` +
    `${summary.skipped} skipped (${summary.operations} operations)`
  );
}

const LABEL: Record<Verdict, string> = { pass: 'pass', fail: 'FAIL', not_implemented: 'not implemented', skipped: 'skipped' };

/** The report as a table for people: one line per operation, its reasons and notes indented below. */
export function formatReport(report: ConformanceReport): string {
  const lines: string[] = [`Open Agent API conformance of ${report.base_url} (contract ${report.contract_version}, model ${report.model ?? 'none'})`, ''];
  const idWidth = Math.max(...report.operations.map((operation) => operation.operationId.length), 'OPERATION'.length);
  const routeWidth = Math.max(...report.operations.map((operation) => operation.method.length + operation.path.length + 1), 'ROUTE'.length);
  lines.push(`${'OPERATION'.padEnd(idWidth)}  ${'ROUTE'.padEnd(routeWidth)}  RESULT`);
  for (const operation of report.operations) {
    lines.push(`${operation.operationId.padEnd(idWidth)}  ${`${operation.method} ${operation.path}`.padEnd(routeWidth)}  ${LABEL[operation.verdict]}`);
    for (const reason of operation.reasons) lines.push(`    - ${reason}`);
    for (const note of operation.notes) lines.push(`    · ${note}`);
  }
  const nameWidth = Math.max(...report.general.map((check) => check.name.length), 'GENERAL CHECK'.length);
  lines.push('', `${'GENERAL CHECK'.padEnd(nameWidth)}  RESULT`);
  for (const check of report.general) {
    lines.push(`${check.name.padEnd(nameWidth)}  ${LABEL[check.verdict]}`);
    for (const reason of check.reasons) lines.push(`    - ${reason}`);
    for (const note of check.notes) lines.push(`    · ${note}`);
  }
  const general = report.general;
  lines.push(
    '',
    `general checks: ${general.filter((check) => check.verdict === 'pass').length} passed, ` +
      `${general.filter((check) => check.verdict === 'fail').length} failed, ` +
      `${general.filter((check) => check.verdict === 'skipped').length} skipped`,
    summaryLine(report.summary),
  );
  return lines.join('\n');
}
