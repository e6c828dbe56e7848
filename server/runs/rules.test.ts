import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.ts';
import type { ChatMessage, ToolCall } from '../models/types.ts';
import { checkNewMessages, checkTranscript, mergeClientTools, unansweredCalls } from './rules.ts';

const call = (id: string, name = 'lookup'): ToolCall => ({ id, type: 'function', function: { name, arguments: '{}' } });
const tool = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: 'ok' });
const fieldsOf = (run: () => void) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).details?.map((detail) => detail.field);
  }
  throw new Error('no error');
};

describe('checkNewMessages', () => {
  it('takes anything but tool results when nothing is pending', () => {
    expect(() => checkNewMessages([{ role: 'user', content: 'hi' }], undefined)).not.toThrow();
    expect(fieldsOf(() => checkNewMessages([{ role: 'user', content: 'hi' }, tool('call_1')], undefined))).toEqual(['messages[1]']);
  });

  it('takes exactly one result per pending call, in any order, and nothing else', () => {
    const pending = [call('a'), call('b')];
    expect(() => checkNewMessages([tool('b'), tool('a')], pending)).not.toThrow();
    expect(fieldsOf(() => checkNewMessages([tool('a')], pending))).toEqual(['messages']);
    expect(fieldsOf(() => checkNewMessages([tool('a'), tool('a')], pending))).toEqual(['messages[1]']);
    expect(fieldsOf(() => checkNewMessages([tool('a'), { role: 'user', content: 'and?' }], pending))).toEqual(['messages[1]']);
    expect(fieldsOf(() => checkNewMessages([tool('c')], pending))).toEqual(['messages[0]']);
  });
});

describe('checkTranscript', () => {
  it('accepts tool messages that answer an earlier call once, and names the one that does not', () => {
    const ok: ChatMessage[] = [{ role: 'user', content: 'x' }, { role: 'assistant', content: null, tool_calls: [call('a')] }, tool('a')];
    expect(() => checkTranscript(ok)).not.toThrow();
    expect(fieldsOf(() => checkTranscript([...ok, tool('a')]))).toEqual(['messages[3].tool_call_id']);
    expect(fieldsOf(() => checkTranscript([tool('z')]))).toEqual(['messages[0].tool_call_id']);
  });
});

describe('unansweredCalls', () => {
  it('finds calls left unanswered before the conversation went on, not those still waiting at the end', () => {
    const asked: ChatMessage = { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] };
    expect(unansweredCalls([asked, tool('a'), tool('b'), { role: 'assistant', content: 'done' }])).toEqual([]);
    expect(unansweredCalls([asked, tool('a'), { role: 'assistant', content: 'done' }])).toEqual(['b']);
    expect(unansweredCalls([{ role: 'user', content: 'x' }, asked])).toEqual([]);
  });
});

describe('mergeClientTools', () => {
  it('lets a request redefine an agent’s own tool for the turn and keeps the rest', () => {
    const own = [{ type: 'function' as const, function: { name: 'lookup', description: 'old' } }, { type: 'function' as const, function: { name: 'keep' } }];
    const requested = [{ type: 'function' as const, function: { name: 'lookup', description: 'new' } }];
    expect(mergeClientTools(own, requested).map((tool) => `${tool.function.name}:${tool.function.description ?? ''}`)).toEqual(['keep:', 'lookup:new']);
  });
});
