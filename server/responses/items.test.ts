// Approval items in a Responses transcript: which answers a request takes, and the chat history a chain
// with approval requests, answers and the calls that ran makes for the model.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.ts';
import { unansweredCalls } from '../runs/rules.ts';
import { answeredApprovals, approvalRequestItemId, serverCallItemId, toChatMessages, type Item } from './items.ts';

const user = (text: string): Item => ({ id: `msg_${text}`, type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text }] });
const request = (callId: string): Item => ({ id: approvalRequestItemId(callId), type: 'mcp_approval_request', server_label: 'open-agent-api', name: 'counter__increment', arguments: '{}' });
const answer = (callId: string, approve: boolean, reason: string | null = null): Item => ({
  id: `mcpa_${callId}`,
  type: 'mcp_approval_response',
  approval_request_id: approvalRequestItemId(callId),
  approve,
  reason,
});
const ran = (callId: string, output: string | null, error: string | null = null): Item => ({
  id: serverCallItemId(callId),
  type: 'mcp_call',
  server_label: 'open-agent-api',
  name: 'counter__increment',
  arguments: '{}',
  output,
  error,
  status: error ? 'failed' : 'completed',
});

function refusal(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).message;
  }
  throw new Error('not refused');
}

describe('approval items', () => {
  it('takes one answer per pending request, naming the call it answers', () => {
    const history = [user('go'), request('call_1'), request('call_2')];
    expect(answeredApprovals(history, [answer('call_1', true), answer('call_2', false, 'no')])).toEqual({
      calls: [
        { id: 'call_1', type: 'function', function: { name: 'counter__increment', arguments: '{}' } },
        { id: 'call_2', type: 'function', function: { name: 'counter__increment', arguments: '{}' } },
      ],
      answers: [
        { tool_call_id: 'call_1', decision: 'approve' },
        { tool_call_id: 'call_2', decision: 'deny', reason: 'no' },
      ],
    });
    expect(answeredApprovals(history, [user('something else')])).toBeUndefined();
  });

  it('refuses an answer to no request, to an answered one, twice, or after the conversation went on', () => {
    expect(refusal(() => answeredApprovals([user('go')], [answer('call_1', true)]))).toContain('no approval request');
    expect(refusal(() => answeredApprovals([request('call_1'), answer('call_1', true)], [answer('call_1', false)]))).toContain('already answered');
    expect(refusal(() => answeredApprovals([request('call_1')], [answer('call_1', true), answer('call_1', true)]))).toContain('already answered');
    expect(refusal(() => answeredApprovals([user('go'), request('call_1'), user('never mind')], [answer('call_1', true)]))).toContain('lapsed');
  });

  it('makes a valid history: an answered request is its call, the mcp_call that ran its result, an unanswered one nothing', () => {
    const chain = [user('go'), request('call_1'), answer('call_1', true), ran('call_1', 'count is 1'), user('again'), request('call_2')];
    const history = toChatMessages(chain);
    expect(history).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'counter__increment', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'count is 1' },
      { role: 'user', content: 'again' },
    ]);
    expect(unansweredCalls(history)).toEqual([]);
    // While the answered call has not run yet (the run that answers it runs it first), it waits at the end.
    expect(toChatMessages([user('go'), request('call_1'), answer('call_1', false)]).at(-1)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_1' }] });
    // A denied call's mcp_call carries the denial as its result.
    expect(toChatMessages([user('go'), request('call_1'), answer('call_1', false), ran('call_1', null, 'denied')]).at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: 'denied' });
  });
});
