// Cross-cutting rules that belong to no one operation: what the server answers off its routes.
import type { Check, Context } from '../context.ts';

type RawAnswer = Awaited<ReturnType<Context['client']['raw']>>;

/** What is wrong with an error answer: its status, the envelope, its code and its request id. */
function envelopeProblems(t: Context, answer: RawAnswer, statuses: number[]): string[] {
  const problems: string[] = [];
  if (!statuses.includes(answer.status)) problems.push(`answered ${answer.status}; expected ${statuses.join(' or ')}`);
  if (!answer.headers.get('content-type')?.startsWith('application/json')) {
    problems.push(`answered as ${answer.headers.get('content-type') ?? 'no content type'}, not application/json`);
  }
  const invalid = t.contract.schema('Error')(answer.json);
  if (invalid) {
    problems.push(`the body is not the error envelope: ${invalid} (body: ${answer.text.slice(0, 200)})`);
    return problems;
  }
  const error = (answer.json as { error: { code: string; request_id: string } }).error;
  const requestId = answer.headers.get('x-request-id');
  if (!requestId) problems.push('no X-Request-Id header');
  else if (error.request_id !== requestId) problems.push(`error.request_id ${error.request_id} differs from X-Request-Id ${requestId}`);
  const status = t.contract.statusOfCode.get(error.code);
  if (status !== undefined && status !== answer.status) problems.push(`error code ${error.code} belongs with ${status}, not ${answer.status}`);
  return problems;
}

async function general(t: Context, name: string, method: string, path: string, statuses: number[]): Promise<void> {
  t.recorder.general(name);
  try {
    const answer = await t.client.raw(method, path);
    for (const problem of envelopeProblems(t, answer, statuses)) t.recorder.generalFail(name, `${method} ${path} ${problem}`);
  } catch (error) {
    t.recorder.generalFail(name, `${method} ${path} failed: ${(error as Error).message}`);
  }
}

export const generalChecks: Check[] = [
  {
    name: 'unknown routes',
    operations: [],
    run: (t) => general(t, 'an unknown route answers 404 with the error envelope', 'GET', `/v1/conformance-no-such-route-${t.nonce}`, [404]),
  },
  {
    name: 'wrong methods',
    operations: [],
    run: (t) => general(t, 'a method a route does not take answers 405 (or 404) with the error envelope', 'DELETE', '/v1/models', [404, 405]),
  },
];
