// One agent's loop within a run: call the model (streaming), emit what it says, execute server-side
// tools and go on, until the model answers or calls a client-side tool, which halts the run.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import type { ModelGateway } from '../models/gateway.ts';
import type { AssistantMessage, ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { ModelSpec } from '../models/catalog.ts';
import { ToolInputError, type KnowledgeSource, type ToolResult } from '../tools/registry.ts';
import { denialOutput } from '../mcp/approvals.ts';
import { addUsage, type RunEventBody, type Speaker, type TokenUsage } from './events.ts';

export type ModelSettings = components['schemas']['ModelSettings'];

export type ApprovalRequest = components['schemas']['ApprovalRequest'];
export type ApprovalAnswer = components['schemas']['ApprovalAnswer'];

/** A tool the loop executes itself: a built-in, a remote MCP server's, or (for a team's leader) a delegation to a member. */
export interface LoopTool {
  definition: FunctionTool;
  run(args: Record<string, unknown>, signal: AbortSignal, call: ToolCall): Promise<ToolResult>;
  /** Set for a remote MCP server's tool. */
  mcp?: { server: string; tool: string };
  /** Whether a call with these arguments waits for the client's approval (its policy); never when absent. */
  approval?: (args: Record<string, unknown>) => boolean;
}

/**
 * Thrown by a tool whose work halts for client-side tools of its own (a team member's): the whole run
 * halts, and the call is executed again, to go on, when the results come.
 */
export class HaltForClient extends Error {
  readonly toolCalls: ToolCall[];
  readonly from: Speaker;
  /** Which of the calls are server-side calls waiting for approval rather than client-side tools. */
  readonly approvals: ApprovalRequest[];

  constructor(toolCalls: ToolCall[], from: Speaker, approvals: ApprovalRequest[] = []) {
    super('halted for client-side tools');
    this.toolCalls = toolCalls;
    this.from = from;
    this.approvals = approvals;
  }
}

export interface LoopSpec {
  model: string;
  instructions: string | null;
  settings: ModelSettings;
  /** Tools the client runs: a call to one halts the run. */
  clientTools: FunctionTool[];
  serverTools: LoopTool[];
  maxSteps: number;
  /** Who speaks, stamped on every event (team runs). */
  speaker?: Speaker;
  /** The client's answers to the approvals the run waited for, by tool call id. */
  decisions?: ReadonlyMap<string, ApprovalAnswer>;
  /** Why this turn's client cannot be asked for approval; a call that would ask is refused with it. */
  cannotAsk?: string | undefined;
}

export interface LoopIO {
  gateway: ModelGateway;
  emit(body: RunEventBody): void;
  /** Keeps messages as they are produced (the session's history). */
  persist(messages: ChatMessage[]): Promise<void>;
  /** Meters one model call. */
  meter(model: ModelSpec | string, usage: { prompt_tokens: number; completion_tokens: number }): Promise<void>;
  log: { error(details: object, message: string): void };
  signal: AbortSignal;
}

export type LoopOutcome =
  | { kind: 'completed'; message: AssistantMessage | null; finishReason: 'stop' | 'length' | 'content_filter' }
  | {
      kind: 'requires_action';
      /** The calls the client must answer. */
      toolCalls: ToolCall[];
      /** Who asked, when it is not the loop's own speaker (a team member). */
      from?: Speaker;
      /** Calls of the halted step still to execute when the run goes on (a team leader's). */
      pending?: ToolCall[];
      /** Which of `toolCalls` wait for approval: server-side calls to execute once approved. */
      approvals?: ApprovalRequest[];
    };

/** What a loop accumulates across its steps (and across resumes of the same run). */
export interface LoopState {
  usage: TokenUsage;
  sources: KnowledgeSource[];
}

function settingsToRequest(settings: ModelSettings, tools: FunctionTool[]) {
  const { tool_choice, parallel_tool_calls, ...rest } = settings;
  return {
    ...rest,
    ...(tools.length > 0 ? { tools, ...(tool_choice ? { tool_choice } : {}), ...(parallel_tool_calls !== undefined ? { parallel_tool_calls } : {}) } : {}),
  };
}

function parseArguments(text: string): Record<string, unknown> | string {
  try {
    const value: unknown = JSON.parse(text || '{}');
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    return 'the arguments must be a JSON object';
  } catch (error) {
    return `the arguments are not valid JSON (${(error as Error).message})`;
  }
}

interface StepResult {
  message: AssistantMessage;
  finishReason: string | null;
}

/** One model call, streamed: text deltas go out as they come; tool calls are assembled from their pieces. */
async function step(spec: LoopSpec, history: ChatMessage[], io: LoopIO, state: LoopState): Promise<StepResult> {
  const from = spec.speaker ? { from: spec.speaker } : {};
  const tools = [...spec.clientTools, ...spec.serverTools.map((tool) => tool.definition)];
  const messages: ChatMessage[] = spec.instructions ? [{ role: 'system', content: spec.instructions }, ...history] : [...history];
  const messageId = `msg_${randomUUID().replaceAll('-', '')}`;
  const stream = io.gateway.chatStream(spec.model, { messages, ...settingsToRequest(spec.settings, tools) }, { signal: io.signal });
  let text = '';
  let finishReason: string | null = null;
  let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let served: ModelSpec | string;
  for (;;) {
    const next = await stream.next();
    if (next.done) {
      served = next.value;
      break;
    }
    const chunk = next.value;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    const piece = choice.delta.content;
    if (piece) {
      text += piece;
      io.emit({ type: 'RunResponse', ...from, message_id: messageId, delta: piece });
    }
    for (const call of choice.delta.tool_calls ?? []) {
      const current = calls.get(call.index) ?? { id: '', name: '', arguments: '' };
      if (call.id) current.id = call.id;
      if (call.function?.name) current.name += call.function.name;
      if (call.function?.arguments) current.arguments += call.function.arguments;
      calls.set(call.index, current);
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  // An answer drawn from knowledge says where it came from.
  if (calls.size === 0 && state.sources.length > 0) {
    const footer = `\n\nSources: ${state.sources.map((source) => (source.source ? `${source.title ?? source.document_id} (${source.source})` : (source.title ?? source.document_id))).join('; ')}`;
    text += footer;
    io.emit({ type: 'RunResponse', ...from, message_id: messageId, delta: footer });
  }
  const toolCalls: ToolCall[] = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => ({ id: call.id || `call_${messageId}_${index}`, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  const message: AssistantMessage = { role: 'assistant', content: text || null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
  io.emit({ type: 'RunResponse', ...from, message_id: messageId, message });
  if (usage) {
    addUsage(state.usage, usage);
    // The meter batches its writes; the run goes on without waiting for them.
    io.meter(served, usage).catch((error: unknown) => io.log.error({ err: error }, 'metering a model call failed'));
  }
  return { message, finishReason };
}

async function runServerTool(tool: LoopTool, call: ToolCall, io: LoopIO, state: LoopState): Promise<ToolResult> {
  const args = parseArguments(call.function.arguments);
  if (typeof args === 'string') return { output: `Error: ${args}. Call ${call.function.name} again with a JSON object.`, isError: true };
  try {
    const result = await tool.run(args, io.signal, call);
    if (result.sources) {
      for (const source of result.sources) {
        if (!state.sources.some((known) => known.document_id === source.document_id)) state.sources.push(source);
      }
    }
    return result;
  } catch (error) {
    if (io.signal.aborted || error instanceof HaltForClient) throw error;
    if (error instanceof ToolInputError) return { output: `Error: ${error.message}`, isError: true };
    io.log.error({ err: error, tool: call.function.name }, 'server-side tool failed');
    return { output: `Error: the tool ${call.function.name} failed.`, isError: true };
  }
}

/**
 * Executes one step's tool calls in order: server-side ones here (with their events), client-side ones
 * collected to halt the run, unknown ones answered with an error for the model. Results join the history.
 */
async function executeCalls(spec: LoopSpec, calls: ToolCall[], history: ChatMessage[], io: LoopIO, state: LoopState): Promise<LoopOutcome | undefined> {
  const from = spec.speaker ? { from: spec.speaker } : {};
  const serverTools = new Map(spec.serverTools.map((tool) => [tool.definition.function.name, tool]));
  const clientTools = new Set(spec.clientTools.map((tool) => tool.function.name));
  const results: ChatMessage[] = [];
  const halting: ToolCall[] = [];
  /** A call the server answers itself with an error, shown like a tool run so that the turn's events hold its result. */
  const answer = (call: ToolCall, output: string) => {
    io.emit({ type: 'ToolCallStarted', ...from, tool_call: call });
    io.emit({ type: 'ToolCallCompleted', ...from, tool_call_id: call.id, name: call.function.name, output, is_error: true });
    results.push({ role: 'tool', tool_call_id: call.id, content: output });
  };
  const keep = async () => {
    history.push(...results);
    await io.persist(results);
  };
  const approvals: ApprovalRequest[] = [];
  for (const [index, call] of calls.entries()) {
    const server = serverTools.get(call.function.name);
    if (server) {
      const mcp = server.mcp ? { mcp: server.mcp } : {};
      const args = parseArguments(call.function.arguments);
      const asks = typeof args !== 'string' && server.approval?.(args) === true;
      // A call the client answered keeps its answer even if its policy changed since: a denial holds.
      const decision: ApprovalAnswer | undefined = spec.decisions?.get(call.id) ?? (asks && spec.cannotAsk ? { tool_call_id: call.id, decision: 'deny', reason: spec.cannotAsk } : undefined);
      if (asks && !decision) {
        // Waits for the client like a client-side tool; executed (or refused) when the run goes on.
        halting.push(call);
        approvals.push({ tool_call_id: call.id, name: call.function.name, ...mcp });
        continue;
      }
      const approval = decision ? { approval: { decision: decision.decision, ...(decision.reason ? { reason: decision.reason } : {}) } } : {};
      io.emit({ type: 'ToolCallStarted', ...from, tool_call: call, ...mcp, ...approval });
      if (decision?.decision === 'deny') {
        const output = denialOutput(call.function.name, decision.reason);
        io.emit({ type: 'ToolCallCompleted', ...from, tool_call_id: call.id, name: call.function.name, output, is_error: true });
        results.push({ role: 'tool', tool_call_id: call.id, content: output });
        continue;
      }
      let result: ToolResult;
      try {
        result = await runServerTool(server, call, io, state);
      } catch (error) {
        if (!(error instanceof HaltForClient)) throw error;
        await keep();
        return {
          kind: 'requires_action',
          toolCalls: error.toolCalls,
          from: error.from,
          pending: [...halting, ...calls.slice(index)],
          ...(error.approvals.length ? { approvals: error.approvals } : {}),
        };
      }
      io.emit({ type: 'ToolCallCompleted', ...from, tool_call_id: call.id, name: call.function.name, output: result.output, is_error: result.isError });
      results.push({ role: 'tool', tool_call_id: call.id, content: result.output });
    } else if (clientTools.has(call.function.name)) {
      const args = parseArguments(call.function.arguments);
      // Malformed arguments go back to the model to fix, rather than to the client to choke on.
      if (typeof args === 'string') answer(call, `Error: ${args}. Call ${call.function.name} again with a JSON object.`);
      else halting.push(call);
    } else {
      answer(call, `Error: there is no tool named ${call.function.name}.`);
    }
  }
  await keep();
  if (halting.length === 0) return undefined;
  return { kind: 'requires_action', toolCalls: halting, ...(approvals.length ? { approvals } : {}) };
}

/**
 * Runs steps until the model answers (completed), asks for client-side tools (requires_action) or the
 * step limit is reached (completed with finish reason `length`). `history` is the conversation the
 * model sees; it grows as the loop goes. `pending` are calls of a halted step, executed first.
 */
export async function runLoop(spec: LoopSpec, history: ChatMessage[], io: LoopIO, state: LoopState, pending: ToolCall[] = []): Promise<LoopOutcome> {
  if (pending.length > 0) {
    const halted = await executeCalls(spec, pending, history, io, state);
    if (halted) return halted;
  }
  let last: AssistantMessage | null = null;
  for (let steps = 0; steps < spec.maxSteps; steps++) {
    const { message, finishReason } = await step(spec, history, io, state);
    last = message;
    history.push(message);
    await io.persist([message]);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      return { kind: 'completed', message, finishReason: finishReason === 'length' || finishReason === 'content_filter' ? finishReason : 'stop' };
    }
    const halted = await executeCalls(spec, calls, history, io, state);
    if (halted) return halted;
  }
  return { kind: 'completed', message: last, finishReason: 'length' };
}
