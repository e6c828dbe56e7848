// The one approval model of server-side tools: a policy per tool says whether a call waits for the
// client's approval. Built-in tools default to always_allow, MCP tools to always_ask; a policy may ask
// only when the call's arguments match a JSON Schema.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';

export type ApprovalPolicy = components['schemas']['ApprovalPolicy'];
export type ApprovalAnswer = components['schemas']['ApprovalAnswer'];
export type ApprovalRequest = components['schemas']['ApprovalRequest'];

const ajv = new Ajv2020({ strict: false, allErrors: false });

/** Checks a policy's schema compiles, naming the field that holds it. */
export function checkPolicy(policy: ApprovalPolicy | undefined, fieldName: string): void {
  if (policy === undefined || typeof policy === 'string') return;
  try {
    ajv.compile(policy.ask_if);
  } catch (error) {
    throw new ApiError('invalid_request', `The approval condition is not a valid JSON Schema: ${(error as Error).message}`, {
      details: [{ field: `${fieldName}.ask_if`, message: 'invalid JSON Schema' }],
    });
  }
}

/** Whether a call under `policy` with these arguments waits for approval. */
export function needsApproval(policy: ApprovalPolicy, args: Record<string, unknown>): boolean {
  if (policy === 'always_allow') return false;
  if (policy === 'always_ask') return true;
  return ajv.compile(policy.ask_if)(args) === true;
}

/** What the model is told when the client denied a call. */
export function denialOutput(name: string, reason: string | undefined): string {
  return `Error: the user denied the call to ${name}${reason ? `, saying: ${reason}` : ''}. It was not executed.`;
}
