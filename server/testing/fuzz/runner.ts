// Fuzzes the real app from its contract: starts it with response validation on (so an answer off the
// contract is a 500), makes one of every kind of resource for the path parameters, then sends each
// operation's generated requests through fast-check and judges every answer. `npm test` runs it with a
// fixed seed and a few cases per kind; `npm run fuzz` runs it long.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { loadContract } from '../../http/contract.ts';
import type { AppHandlers } from '../../http/operations.ts';
import type { Engine } from '../database.ts';
import { startFakeStripe, type FakeStripe } from '../fake-stripe.ts';
import { startTestServer, type TestServer } from '../harness.ts';
import { NO_LIMITS } from '../plans.ts';
import { caseFamilies, encode, fuzzOperations, type BodySpec, type CaseFamily, type FuzzCase, type FuzzOperation, type ParamValue } from './cases.ts';
import { schemaChecker } from './schema-arbitrary.ts';

export interface FuzzOptions {
  /** Cases per operation and kind of input. */
  runs: number;
  seed: number;
  /** Only these operations (all when empty). */
  operations?: string[];
  engine?: Engine;
  /** Shrink a failing case to a smaller one (more requests, clearer report). */
  shrink?: boolean;
  /** Progress, one line per operation. */
  progress?: (line: string) => void;
  /** Handlers to put in place of the real ones: to prove the fuzzer notices a server that breaks. */
  handlers?: Partial<AppHandlers>;
}

export interface FuzzFailure {
  operationId: string;
  kind: string;
  description: string;
  request: string;
  problem: string;
  /** The server's error log lines for the request. */
  log: string[];
}

export interface OperationReport {
  operationId: string;
  validCases: number;
  invalidCases: number;
  /** How the server answered the valid cases, by status: how deep into the operation they got. */
  validStatuses: Record<string, number>;
  /** The first error message of each 4xx status among the valid cases: why they got no further. */
  validRefusals: Record<string, string>;
  kinds: number;
  failures: FuzzFailure[];
}

export interface FuzzReport {
  seed: number;
  runs: number;
  operations: OperationReport[];
  totals: { operations: number; cases: number; validCases: number; invalidCases: number; failures: number };
  durationMs: number;
}

// Far longer than any answer of the app on loopback with the local model; a case past it hung.
const REQUEST_TIMEOUT_MS = 30_000;
const BODY_LIMIT = 16 * 1024;
const KNOWLEDGE_MAX_BYTES = 16 * 1024;

/** The plans the fuzzed server sells: everything unlimited, one plan with a Stripe price so that checkout runs. */
function fuzzPlansFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'oaa-fuzz-plans-')), 'plans.yaml');
  writeFileSync(file, `plans:\n  - id: unlimited\n    name: Unlimited\n${NO_LIMITS}  - id: pro\n    name: Pro\n${NO_LIMITS}    price: { amount: 2000, currency: usd, interval: month }\n    stripe_price_id: price_fuzz_pro\n`);
  return file;
}

function seedOf(seed: number, ...parts: string[]): number {
  return createHash('sha256').update([seed, ...parts].join(':')).digest().readInt32LE(0);
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface Fixtures {
  existing: Record<string, string>;
  fresh: Record<string, () => Promise<string>>;
  /** Values for properties of these names, per operation: a model that does what the operation asks. */
  hints(operationId: string): Record<string, fc.Arbitrary<unknown>>;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const document = loadContract().document;
  const errorLog: string[] = [];
  const logger = pino(
    { level: 'error' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        errorLog.push(chunk.toString());
        done();
      },
    }),
  );
  const stripe: FakeStripe = await startFakeStripe({ prices: ['price_fuzz_pro'] });
  let server: TestServer | undefined;
  try {
    server = await startTestServer({
      engine: options.engine ?? 'pglite',
      logger,
      ...(options.handlers ? { handlers: options.handlers } : {}),
      env: {
        ...stripe.env,
        PLANS_FILE: fuzzPlansFile(),
        BODY_LIMIT_BYTES: String(BODY_LIMIT),
        KNOWLEDGE_MAX_BYTES: String(KNOWLEDGE_MAX_BYTES),
        KNOWLEDGE_INLINE_MAX_BYTES: String(KNOWLEDGE_MAX_BYTES),
      },
    });
    const user = await server.signUp();
    const api = apiClient(server.url, user.apiKey);
    const fixtures = await makeFixtures(api, server.url);
    const check = schemaChecker(document);
    const envelopeValid = check({ $ref: '#/components/schemas/Error' });

    const wanted = new Set(options.operations ?? []);
    const operations = fuzzOperations(document).filter((op) => wanted.size === 0 || wanted.has(op.operationId));
    const unknown = [...wanted].filter((id) => !operations.some((op) => op.operationId === id));
    if (unknown.length > 0) throw new Error(`No such operation in the contract: ${unknown.join(', ')}`);

    let sent = 0;
    const execute = async (op: FuzzOperation, fuzzCase: FuzzCase): Promise<{ answer: Answer | Error; request: string; requestId: string }> => {
      const requestId = `fuzz_${++sent}`;
      const built = await buildRequest(server!.url, op, fuzzCase, fixtures, user.apiKey, requestId);
      try {
        const response = await fetch(built.url, { ...built.init, redirect: 'manual', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        return { answer: { status: response.status, headers: response.headers, text: await response.text() }, request: built.summary, requestId };
      } catch (error) {
        return { answer: error as Error, request: built.summary, requestId };
      }
    };
    const judge = (op: FuzzOperation, fuzzCase: FuzzCase, answer: Answer | Error): string | undefined => {
      if (answer instanceof Error) return `no complete answer: ${String((answer.cause as Error | undefined)?.message ?? answer.message)}`;
      const { status } = answer;
      // A feature this deployment lacks (pgvector on PostgreSQL, say), where the contract says it may.
      if (status === 503 && op.mayBeUnavailable && fuzzCase.expect.kind === 'no-5xx' && envelopeValid(parseJson(answer.text))) return undefined;
      if (status >= 500) return `answered ${status}: ${answer.text.slice(0, 300)}`;
      if (status >= 400) {
        const body = parseJson(answer.text);
        if (body === undefined) return `answered ${status} without the JSON envelope: ${answer.text.slice(0, 200)}`;
        // A protocol's own error shape (A2A's) has no request_id. A request that never reached the operation
        // (a method the path lacks, a path that does not decode) is answered with the envelope.
        if (op.errorSchema && check(op.errorSchema)(body)) return undefined;
        if (!envelopeValid(body)) return `answered ${status} with a body off the envelope: ${answer.text.slice(0, 300)}`;
        const replayed = answer.headers.get('idempotent-replayed') === 'true';
        if (!replayed && (body as { error: { request_id: string } }).error.request_id !== answer.headers.get('x-request-id')) {
          return 'the envelope\'s request_id is not the X-Request-Id';
        }
      }
      const expect = fuzzCase.expect;
      if (expect.kind === '4xx' && (status < 400 || status > 499)) return `expected a 4xx, answered ${status}: ${answer.text.slice(0, 200)}`;
      if (expect.kind === 'status' && status !== expect.status) return `expected ${expect.status}, answered ${status}: ${answer.text.slice(0, 200)}`;
      return undefined;
    };

    const reports: OperationReport[] = [];
    const context = {
      document,
      jsonLimit: (operationId: string) => (operationId === 'createKnowledgeDocument' ? Math.max(BODY_LIMIT, KNOWLEDGE_MAX_BYTES + 64 * 1024) : BODY_LIMIT),
      fileLimit: KNOWLEDGE_MAX_BYTES,
    };
    for (const op of operations) {
      const opStarted = Date.now();
      const report: OperationReport = { operationId: op.operationId, validCases: 0, invalidCases: 0, validStatuses: {}, validRefusals: {}, kinds: 0, failures: [] };
      const families: CaseFamily[] = caseFamilies(op, { ...context, hints: fixtures.hints(op.operationId) });
      report.kinds = families.length;
      for (const family of families) {
        let last: { request: string; problem: string; requestId: string } | undefined;
        const property = fc.asyncProperty(family.arbitrary, async (fuzzCase) => {
          const { answer, request, requestId } = await execute(op, fuzzCase);
          const problem = judge(op, fuzzCase, answer);
          if (family.valid) {
            report.validCases += 1;
            const status = answer instanceof Error ? 'none' : String(answer.status);
            report.validStatuses[status] = (report.validStatuses[status] ?? 0) + 1;
            if (!(answer instanceof Error) && answer.status >= 400 && !(status in report.validRefusals)) {
              report.validRefusals[status] = answer.text.slice(0, 300);
            }
          } else {
            report.invalidCases += 1;
          }
          if (problem) {
            last = { request, problem, requestId };
            throw new Error(problem);
          }
        });
        const details = await fc.check(property, { seed: seedOf(options.seed, op.operationId, family.kind), numRuns: options.runs, endOnFailure: !options.shrink });
        if (details.failed && details.counterexample && last) {
          const [fuzzCase] = details.counterexample;
          const marker = `"${last.requestId}"`;
          report.failures.push({
            operationId: op.operationId,
            kind: family.kind,
            description: fuzzCase.description,
            request: last.request,
            problem: last.problem,
            log: errorLog.filter((line) => line.includes(marker)).map((line) => line.trim()),
          });
        } else if (details.failed) {
          report.failures.push({ operationId: op.operationId, kind: family.kind, description: 'the generator failed', request: '', problem: String(details.errorInstance ?? ''), log: [] });
        }
      }
      reports.push(report);
      const statuses = Object.entries(report.validStatuses)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, count]) => `${status}×${count}`)
        .join(' ');
      options.progress?.(
        `${op.operationId.padEnd(28)} ${String(report.validCases).padStart(5)} valid ${String(report.invalidCases).padStart(6)} invalid ${String(Date.now() - opStarted).padStart(7)} ms  ${report.failures.length === 0 ? 'ok' : `${report.failures.length} FAILED`}  (valid: ${statuses})`,
      );
    }
    const validCases = reports.reduce((sum, r) => sum + r.validCases, 0);
    const invalidCases = reports.reduce((sum, r) => sum + r.invalidCases, 0);
    return {
      seed: options.seed,
      runs: options.runs,
      operations: reports,
      totals: {
        operations: reports.length,
        cases: validCases + invalidCases,
        validCases,
        invalidCases,
        failures: reports.reduce((sum, r) => sum + r.failures.length, 0),
      },
      durationMs: Date.now() - started,
    };
  } finally {
    await server?.close();
    await stripe.close();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

type Api = (method: string, url: string, body?: unknown) => Promise<Record<string, unknown>>;

function apiClient(baseUrl: string, apiKey: string): Api {
  return async (method, url, body) => {
    const response = await fetch(`${baseUrl}${url}`, {
      method,
      headers: { Authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`Fuzz setup: ${method} ${url} answered ${response.status}: ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
}

/** One of every resource a path names, makers of fresh ones for deletes, and values the bodies should use. */
async function makeFixtures(api: Api, baseUrl: string): Promise<Fixtures> {
  const models = ((await api('GET', '/v1/models')).data as { id: string; capabilities?: string[] }[]).filter((model) => !model.id.startsWith('agent:'));
  const able = (capability: string) => models.filter((model) => model.capabilities?.includes(capability)).map((model) => model.id);
  const [chatModels, completionModels, embeddingModels] = [able('chat'), able('completions'), able('embeddings')];
  const plans = ((await api('GET', '/v1/billing/plans')).data as { id: string }[]).map((plan) => plan.id);
  let made = 0;
  const newAgent = async () => String((await api('POST', '/v1/agents', { name: `Fuzz ${++made}`, model: chatModels[0], server_tools: ['calculator'], knowledge_collections: ['fuzz'] })).id);
  const newDocument = async () => String((await api('POST', '/v1/knowledge/documents', { text: `Fuzz document ${++made}: returns within 30 days.`, collection: 'fuzz' })).id);
  // First, as the agents search its collection.
  const documentId = await newDocument();
  const agentId = await newAgent();
  const memberId = await newAgent();
  const newTeam = async () => String((await api('POST', '/v1/teams', { name: `Fuzz team ${++made}`, members: [{ agent_id: memberId }], leader_model: chatModels[0] })).id);
  // Fresh sessions come from an agent of their own: the fuzzed updates of `agentId` (a run timeout of a
  // few seconds, say) must not make the set-up of a later case fail.
  const turnAgentId = await newAgent();
  const newTurn = async () => api('POST', `/v1/agents/${turnAgentId}/chat`, { messages: [{ role: 'user', content: `Hello ${++made}` }] });
  const newKey = async () => String((await api('POST', '/v1/api-keys', { name: `fuzz ${++made}` })).id);
  const turn = await newTurn();
  const teamId = await newTeam();
  const teamTurn = await api('POST', `/v1/teams/${teamId}/chat`, { messages: [{ role: 'user', content: 'Hello team' }] });
  await api('POST', '/v1/billing/checkout', { plan_id: 'pro', success_url: `${baseUrl}/done`, cancel_url: `${baseUrl}/cancel` });
  const existing = {
    agentId,
    teamId,
    sessionId: String(turn.session_id),
    runId: String(turn.run_id),
    documentId,
    keyId: await newKey(),
  };
  const url = fc.constantFrom(`${baseUrl}/billing`, `${baseUrl}/done?x=1`);
  return {
    existing,
    fresh: {
      agentId: newAgent,
      teamId: newTeam,
      sessionId: async () => String((await newTurn()).session_id),
      runId: async () => String((await newTurn()).run_id),
      documentId: newDocument,
      keyId: newKey,
    },
    hints: (operationId) => ({
      model:
        operationId === 'createEmbedding' && embeddingModels.length > 0 ? fc.constantFrom(...embeddingModels)
        : operationId === 'createCompletion' && completionModels.length > 0 ? fc.constantFrom(...completionModels)
        : fc.constantFrom(...chatModels, `agent:${agentId}`),
      leader_model: fc.constantFrom(...chatModels),
      embedding_model: fc.constantFrom(...embeddingModels, ...chatModels.slice(0, 1)),
      agent_id: fc.constantFrom(agentId, memberId),
      // A session is an agent's or a team's; the other's answers 404.
      session_id: fc.constantFrom(/Team/.test(operationId) ? String(teamTurn.session_id) : existing.sessionId),
      collection: fc.constantFrom('fuzz', 'default'),
      collections: fc.constantFrom(['fuzz'], ['fuzz', 'default']),
      knowledge_collections: fc.constantFrom(['fuzz'], []),
      plan_id: fc.constantFrom(...plans),
      success_url: url,
      cancel_url: url,
      return_url: url,
      redirect_url: url,
    }),
  };
}

interface BuiltRequest {
  url: string;
  init: RequestInit;
  /** The request as a reader would want it in a report. */
  summary: string;
}

async function paramText(name: string, value: ParamValue, fixtures: Fixtures): Promise<string> {
  if ('raw' in value) return value.raw;
  if ('literal' in value) return encode(value.literal);
  const maker = fixtures.fresh[name];
  const id = value.fixture === 'fresh' && maker ? await maker() : fixtures.existing[name];
  if (!id) throw new Error(`No fixture for the path parameter ${name}.`);
  return encode(id);
}

function bodyOf(spec: BodySpec | undefined): { body?: BodyInit; contentType?: string; summary: string } {
  if (!spec) return { summary: '' };
  if (spec.type === 'json') {
    const text = JSON.stringify(spec.value);
    return { body: text, contentType: 'application/json', summary: text };
  }
  if (spec.type === 'raw') return { body: spec.text, ...(spec.contentType ? { contentType: spec.contentType } : {}), summary: `(${spec.contentType ?? 'no content type'}) ${spec.text}` };
  const form = new FormData();
  for (const [name, value] of Object.entries(spec.fields)) form.append(name, value);
  if (spec.file) form.append('file', new Blob([spec.file.content], { type: spec.file.type }), spec.file.name);
  return { body: form, summary: `multipart ${JSON.stringify({ ...spec.fields, ...(spec.file ? { file: { ...spec.file, content: spec.file.content.slice(0, 100) } } : {}) })}` };
}

async function buildRequest(baseUrl: string, op: FuzzOperation, fuzzCase: FuzzCase, fixtures: Fixtures, apiKey: string, requestId: string): Promise<BuiltRequest> {
  let pathText = op.path;
  for (const p of op.pathParams) {
    pathText = pathText.replace(`{${p.name}}`, await paramText(p.name, fuzzCase.params[p.name] ?? { fixture: 'existing' }, fixtures));
  }
  const query = [...fuzzCase.query.map(([name, value]) => `${encode(name)}=${encode(value)}`), ...(fuzzCase.rawQuery ? [fuzzCase.rawQuery] : [])].join('&');
  const target = `${pathText}${query ? `?${query}` : ''}`;
  const headers: Record<string, string> = { 'X-Request-Id': requestId, ...fuzzCase.headers };
  if (fuzzCase.credential === 'valid') headers.Authorization = `Bearer ${apiKey}`;
  if (fuzzCase.credential === 'garbage' && fuzzCase.garbage) headers[fuzzCase.garbage.header] = fuzzCase.garbage.value;
  const { body, contentType, summary } = bodyOf(fuzzCase.body);
  if (contentType) headers['Content-Type'] = contentType;
  const shown = Object.entries(headers)
    .filter(([name]) => name !== 'Authorization' || fuzzCase.credential !== 'valid')
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  return {
    url: `${baseUrl}${target}`,
    init: { method: fuzzCase.method, headers, ...(body !== undefined && fuzzCase.method !== 'GET' ? { body } : {}) },
    summary: `${fuzzCase.method} ${target}\n${shown}${summary ? `\n\n${summary.slice(0, 2000)}` : ''}`,
  };
}
