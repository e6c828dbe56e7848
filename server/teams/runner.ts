// Team turns on the run engine. The leader (a member agent or a built orchestrator) works through the
// same loop as an agent; members run as real runs of their agents, linked to the team run, and their
// output is streamed into the team's events under their own name.
//   coordinate: the leader delegates sub-tasks through one tool per member and answers from the results;
//               it also calls the team's remote MCP servers' tools, under the approval model.
//   route:      the leader picks one member, whose answer is the team's.
//   broadcast:  every member answers; the leader synthesizes.
// A member's client-side tool halts the whole team run; the results resume the member, then the leader.
import type { Logger } from 'pino';
import { checkToolNames, type Agent, type AgentStore } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import { textOf, type AssistantMessage, type ChatMessage, type FunctionTool, type ToolCall } from '../models/types.ts';
import type { RunHandle, TeamTurnInput, TurnContext, TurnOptions, TurnOutcome, TurnSpec } from '../runs/engine.ts';
import { addUsage, zeroUsage, type RunEventBody, type Speaker } from '../runs/events.ts';
import type { MemberUsage, OpenRun, RunEnding, RunLifecycle } from '../runs/lifecycle.ts';
import { turnMcpServers } from '../mcp/config.ts';
import { remoteTools, type RemoteToolsDeps } from '../mcp/remote.ts';
import { HaltForClient, runLoop, type ApprovalRequest, type LoopOutcome, type LoopSpec, type LoopState, type LoopTool } from '../runs/loop.ts';
import type { RunStore } from '../runs/store.ts';
import { approvalCalls, mergeClientTools } from '../runs/rules.ts';
import type { ServerToolsFor } from '../runs/tools.ts';
import { orchestratorName, type Team, type TeamStore } from './teams.ts';

interface Member {
  agent: Agent;
  role: string | null;
  isLeader: boolean;
  speaker: Speaker;
}

/** What a halted team run keeps to go on. */
interface TeamRunState {
  /** The halted member run, and the leader's call it answers (coordinate). */
  member?: { runId: string; agentId: string; callId: string | null };
  /** The leader's calls of the halted step still to execute (coordinate). */
  pending?: ToolCall[];
  /** Answers so far and members still to ask (broadcast). */
  answers?: { agentId: string; text: string }[];
  remaining?: string[];
  breakdown: MemberUsage[];
}

/** A member's halt, naming its run so that the team can resume it. */
class MemberHalt extends HaltForClient {
  readonly runId: string;

  constructor(toolCalls: ToolCall[], from: Speaker, runId: string, approvals: ApprovalRequest[] = []) {
    super(toolCalls, from, approvals);
    this.runId = runId;
  }
}

/** What a halted member run keeps: its conversation, and the calls waiting for approval to execute first. */
interface MemberRunState {
  history: ChatMessage[];
  pending?: ToolCall[];
}

/** A halted member's approvals, for the team's own halt. */
function approvalsOf(halt: HaltForClient): { approvals?: ApprovalRequest[] } {
  return halt.approvals.length > 0 ? { approvals: halt.approvals } : {};
}

const FORWARDED = new Set(['RunResponse', 'ToolCallStarted', 'ToolCallCompleted']);

function slug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '').slice(0, 40) || 'member';
}

/** Tool names per member, unique even when names collide. */
function toolNames(members: Member[], prefix: string): Map<string, Member> {
  const names = new Map<string, Member>();
  for (const member of members) {
    let name = `${prefix}${slug(member.agent.name)}`;
    for (let n = 2; names.has(name); n++) name = `${prefix}${slug(member.agent.name)}_${n}`;
    names.set(name, member);
  }
  return names;
}

function lastUserText(history: ChatMessage[]): string {
  const message = history.findLast((m) => m.role === 'user');
  return message ? textOf(message.content) : '';
}

function describe(member: Member): string {
  return `${member.agent.name}${member.role ? ` (${member.role})` : ''}`;
}

export interface TeamRunnerDeps {
  /** Starts a turn on the run engine with a team's plan. */
  startTurn(turn: TurnSpec, options: TurnOptions): Promise<RunHandle>;
  /** Opens and ends the member runs. */
  lifecycle: RunLifecycle;
  serverTools: ServerToolsFor;
  /** How the leader reaches the team's remote MCP servers. */
  remoteTools: RemoteToolsDeps;
  teams: TeamStore;
  /** A member's own MCP servers. */
  agents: Pick<AgentStore, 'mcpServers'>;
  runs: RunStore;
  logger: Logger;
}

/** A member's answer, and the id its message had in the events (the team's adoption of it reuses the id). */
interface MemberAnswer {
  message: AssistantMessage | null;
  messageId: string | undefined;
}

export function createTeamRunner(deps: TeamRunnerDeps) {
  const { lifecycle, runs } = deps;

  async function startTeamTurn(input: TeamTurnInput, options: TurnOptions): Promise<RunHandle> {
    const team = input.team?.id === input.teamId ? input.team : await deps.teams.get(input.userId, input.teamId);
    checkToolNames(input.tools ?? [], 'tools');
    const members: Member[] = (await deps.teams.memberAgents(input.userId, team)).map(({ agent, role, isLeader }) => ({
      agent,
      role,
      isLeader,
      speaker: { agent_id: agent.id, name: agent.name, role, is_leader: isLeader },
    }));
    const memberLeader = members.find((member) => member.isLeader);
    const leaderSpeaker: Speaker = memberLeader?.speaker ?? { agent_id: null, name: orchestratorName(team), role: 'leader', is_leader: true };
    const others = members.filter((member) => !member.isLeader);
    const clientTools = input.clientTools !== false;
    return deps.startTurn(
      {
        input,
        target: { agentId: null, teamId: team.id },
        model: team.leader.model,
        timeoutSeconds: Math.max(...members.map((member) => member.agent.run_timeout_seconds)),
        resultsGoToMember: (pending) => Boolean((pending.state as TeamRunState | null)?.member),
        execute: (context) => execute(context, { input, team, members, others, memberLeader, leaderSpeaker, clientTools }),
        onStop: (context, status) => stopMembers(context, status),
      },
      options,
    );
  }

  interface Plan {
    input: TeamTurnInput;
    team: Team;
    members: Member[];
    others: Member[];
    memberLeader: Member | undefined;
    leaderSpeaker: Speaker;
    clientTools: boolean;
  }

  /** Member runs left waiting or running when the team run stops are stopped with it. */
  async function stopMembers(context: TurnContext, status: 'canceled' | 'failed'): Promise<void> {
    const ending: RunEnding = status === 'canceled' ? { status } : { status, error: { code: 'internal_error', message: 'The team run stopped.' } };
    for (const child of await runs.children(context.run.id)) {
      if (child.status !== 'in_progress' && child.status !== 'requires_action') continue;
      await lifecycle.endStored(child, ending, { from: ['in_progress', 'requires_action'] });
    }
  }

  async function execute(context: TurnContext, plan: Plan): Promise<TurnOutcome> {
    const saved = (context.resumed ? (context.run.state as TeamRunState | null) : null) ?? { breakdown: [] };
    const breakdown = new Map(saved.breakdown.map((entry) => [entry.run_id, entry]));
    const runMember = memberRunner(context, plan, breakdown);
    const finish: Finish = (outcome, speaker, state = {}) => {
      const leaderEntry = leaderUsage(context, plan, breakdown);
      const all = [...breakdown.values(), ...(leaderEntry ? [leaderEntry] : [])];
      return { outcome, speaker, state: { ...state, breakdown: [...breakdown.values()] }, usageBreakdown: all };
    };
    const resumeWith = saved.member ? { runId: saved.member.runId, results: context.newMessages } : undefined;
    const turn: ModeTurn = { context, plan, runMember, resumeWith, saved, finish };

    switch (plan.team.mode) {
      case 'route':
        return route(turn);
      case 'broadcast':
        return broadcast(turn);
      default:
        return coordinate(turn);
    }
  }

  /** The leader's own share of the usage, when it is a built orchestrator or a member agent. */
  function leaderUsage(context: TurnContext, plan: Plan, breakdown: Map<string, MemberUsage>): MemberUsage | undefined {
    const members = zeroUsage();
    for (const entry of breakdown.values()) addUsage(members, entry.usage);
    const total = context.state.usage;
    const leader = { prompt_tokens: total.prompt_tokens - members.prompt_tokens, completion_tokens: total.completion_tokens - members.completion_tokens };
    if (leader.prompt_tokens + leader.completion_tokens === 0) return undefined;
    return {
      agent_id: plan.leaderSpeaker.agent_id,
      name: plan.leaderSpeaker.name,
      role: plan.leaderSpeaker.role,
      run_id: context.run.id,
      usage: { ...leader, total_tokens: leader.prompt_tokens + leader.completion_tokens },
    };
  }

  type RunMember = (member: Member, start: { task: string } | { runId: string; results: ChatMessage[] }) => Promise<MemberAnswer>;
  type Finish = (outcome: LoopOutcome, speaker: Speaker, state?: Omit<TeamRunState, 'breakdown'>) => TurnOutcome;
  /** What each mode runs with: the turn and its plan, how to run a member, the member run a resumed turn continues and the state it saved, and `finish`. */
  interface ModeTurn {
    context: TurnContext;
    plan: Plan;
    runMember: RunMember;
    resumeWith: { runId: string; results: ChatMessage[] } | undefined;
    saved: TeamRunState;
    finish: Finish;
  }

  /**
   * Runs (or resumes) one member as a real run of its agent, linked to the team run. The member's work is
   * relayed into the team run's events under its name and with `member_run_id`, so that it is shown but
   * stays the member's conversation.
   */
  function memberRunner(context: TurnContext, plan: Plan, breakdown: Map<string, MemberUsage>): RunMember {
    const { input, team } = plan;
    return async (member, start) => {
      let child: OpenRun;
      let history: ChatMessage[];
      let waiting: ToolCall[] = [];
      if ('task' in start) {
        child = await lifecycle.open({
          userId: input.userId,
          sessionId: context.sessionId,
          agentId: member.agent.id,
          teamId: team.id,
          parentRunId: context.run.id,
          model: member.agent.model,
        });
        history = [{ role: 'user', content: start.task }];
      } else {
        child = await lifecycle.resume(start.runId);
        const saved = child.row.state as MemberRunState | null;
        history = [...(saved?.history ?? []), ...start.results];
        waiting = saved?.pending ?? [];
      }
      const memberRunId = child.row.id;
      const state: LoopState = { usage: { ...child.row.usage }, sources: context.state.sources };
      const before = { ...child.row.usage };
      // A member keeps its own MCP servers in a team, under the same approvals as when it runs alone.
      const servers = member.agent.mcp_servers.length > 0 ? await deps.agents.mcpServers(input.userId, member.agent.id) : [];
      const remote = servers.length > 0 ? await remoteTools(servers, deps.remoteTools, context.io.signal) : undefined;
      const spec: LoopSpec = {
        model: member.agent.model,
        instructions: [member.agent.instructions, ...(remote?.unavailable ?? [])].filter(Boolean).join('\n'),
        settings: member.agent.model_settings,
        clientTools: plan.clientTools ? member.agent.tools : [],
        serverTools: [...deps.serverTools(member.agent, input, () => context.io.signal), ...(remote?.tools ?? [])],
        maxSteps: member.agent.max_steps,
        decisions: new Map((input.approvals ?? []).map((answer) => [answer.tool_call_id, answer])),
        cannotAsk: input.cannotAsk,
      };
      const account = () => {
        addUsage(context.state.usage, {
          prompt_tokens: state.usage.prompt_tokens - before.prompt_tokens,
          completion_tokens: state.usage.completion_tokens - before.completion_tokens,
        });
        breakdown.set(memberRunId, { agent_id: member.agent.id, name: member.agent.name, role: member.role, run_id: memberRunId, usage: { ...state.usage } });
      };
      let messageId: string | undefined;
      let outcome: LoopOutcome;
      try {
        outcome = await runLoop(
          spec,
          history,
          {
            ...context.io,
            emit: (body: RunEventBody) => {
              child.recorder.emit(body);
              if (body.type === 'RunResponse' && body.message) messageId = body.message_id;
              if (FORWARDED.has(body.type)) context.io.emit({ ...body, from: member.speaker, member_run_id: memberRunId } as RunEventBody);
            },
            persist: async () => {},
          },
          state,
          waiting,
        );
      } catch (error) {
        await remote?.close();
        account();
        const ending: RunEnding = context.io.signal.aborted
          ? { status: 'canceled' }
          : { status: 'failed', error: error instanceof ApiError ? { code: error.code, message: error.message } : { code: 'internal_error', message: 'The member run failed.' } };
        await lifecycle.end(child, ending, state.usage);
        throw error;
      }
      await remote?.close();
      account();
      if (outcome.kind === 'requires_action') {
        // Calls waiting for approval run (or are refused) first when the member goes on, as an agent's do.
        const memberState: MemberRunState = { history, pending: approvalCalls(outcome.toolCalls, outcome.approvals) };
        await lifecycle.end(child, { status: 'requires_action', toolCalls: outcome.toolCalls, ...(outcome.approvals ? { approvals: outcome.approvals } : {}), state: memberState }, state.usage);
        throw new MemberHalt(outcome.toolCalls, member.speaker, memberRunId, outcome.approvals);
      }
      await lifecycle.end(child, { status: 'completed', message: outcome.message, finishReason: outcome.finishReason }, state.usage);
      return { message: outcome.message, messageId };
    };
  }

  function delegationTool(name: string, member: Member, run: (call: ToolCall, task: string) => Promise<string>): LoopTool {
    return {
      definition: {
        type: 'function',
        function: {
          name,
          description: `Delegates a sub-task to ${describe(member)} and answers with their result.`,
          parameters: { type: 'object', properties: { task: { type: 'string', description: 'What they should do, in full.' } }, required: ['task'] },
        },
      },
      async run(args, _signal, call) {
        return { output: await run(call, typeof args.task === 'string' ? args.task : JSON.stringify(args)), isError: false };
      },
    };
  }

  function roster(plan: Plan, tools: Map<string, Member>, verb: string): string {
    const lines = [...tools.entries()].map(([tool, member]) => `- ${describe(member)}: ${verb} with ${tool}`);
    return `Your team:\n${lines.join('\n')}`;
  }

  function leaderBase(plan: Plan, extraInstructions: string): Pick<LoopSpec, 'model' | 'instructions' | 'settings' | 'maxSteps' | 'speaker'> {
    const own = plan.memberLeader ? plan.memberLeader.agent.instructions : (plan.team.instructions ?? 'You lead a team of agents.');
    return {
      model: plan.team.leader.model,
      instructions: [own, extraInstructions, plan.input.instructions].filter(Boolean).join('\n\n'),
      settings: { ...(plan.memberLeader?.agent.model_settings ?? {}), ...plan.input.modelSettings },
      maxSteps: plan.team.max_steps,
      speaker: plan.leaderSpeaker,
    };
  }

  /** The leader's own tools: a member leader keeps its agent's; request tools go to the leader. */
  function leaderOwnTools(plan: Plan, context: TurnContext): { client: FunctionTool[]; server: LoopTool[] } {
    const leader = plan.memberLeader?.agent;
    return {
      client: plan.clientTools ? mergeClientTools(leader?.tools ?? [], plan.input.tools ?? []) : [],
      server: leader ? deps.serverTools(leader, plan.input, () => context.io.signal) : [],
    };
  }

  async function coordinate({ context, plan, runMember, resumeWith, saved, finish }: ModeTurn) {
    const tools = toolNames(plan.others, 'ask_');
    let resuming = resumeWith && saved.member ? { ...resumeWith, callId: saved.member.callId } : undefined;
    let halted: TeamRunState['member'];
    const delegations = [...tools.entries()].map(([name, member]) =>
      delegationTool(name, member, async (call, task) => {
        const resume = resuming?.callId === call.id ? resuming : undefined;
        resuming = undefined;
        try {
          const { message } = await runMember(member, resume ? { runId: resume.runId, results: resume.results } : { task });
          return message ? textOf(message.content) : '';
        } catch (error) {
          if (error instanceof MemberHalt) halted = { runId: error.runId, agentId: member.agent.id, callId: call.id };
          if (error instanceof HaltForClient || context.io.signal.aborted) throw error;
          return `${member.agent.name} could not do it: ${error instanceof Error ? error.message : 'the run failed'}.`;
        }
      }),
    );
    const own = leaderOwnTools(plan, context);
    // The team's MCP servers, and the request's (which replace the team's of the same name), are the leader's.
    const teamServers = plan.team.mcp_servers.length > 0 ? await deps.teams.mcpServers(plan.input.userId, plan.team.id) : [];
    const servers = turnMcpServers(teamServers, plan.input.mcpServers);
    const remote = servers.length > 0 ? await remoteTools(servers, deps.remoteTools, context.io.signal) : undefined;
    try {
      const delegate = tools.size ? `${roster(plan, tools, 'delegate')}\nDelegate sub-tasks with these tools, then write the final answer from their results.` : '';
      const spec: LoopSpec = {
        ...leaderBase(plan, [delegate, ...(remote?.unavailable ?? [])].filter(Boolean).join('\n')),
        clientTools: own.client,
        serverTools: [...own.server, ...(remote?.tools ?? []), ...delegations],
        decisions: new Map([...(plan.input.approvals ?? []), ...(plan.input.answeredCalls?.answers ?? [])].map((answer) => [answer.tool_call_id, answer])),
        cannotAsk: plan.input.cannotAsk,
      };
      // A stateless protocol's next request answers approvals in a new run: its calls go first, as a resumed run's.
      const waiting = context.resumed ? (saved.pending ?? []) : (plan.input.answeredCalls?.calls ?? []);
      const outcome = await runLoop(spec, context.history, context.io, context.state, waiting);
      if (outcome.kind === 'requires_action') {
        // Calls waiting for approval run (or are refused) first when the answers come, as an agent's do.
        const pending = outcome.pending ?? approvalCalls(outcome.toolCalls, outcome.approvals);
        return finish(outcome, plan.leaderSpeaker, { ...(halted ? { member: halted } : {}), pending });
      }
      return finish(outcome, plan.leaderSpeaker);
    } finally {
      await remote?.close();
    }
  }

  /**
   * The member's answer becomes the team's: the team run says it (under the member's name and the same
   * message id, so that a client showing the relayed reply shows it once) and the session keeps it.
   */
  async function adopt(context: TurnContext, member: Member, answer: MemberAnswer): Promise<AssistantMessage> {
    const message: AssistantMessage = { role: 'assistant', content: answer.message ? textOf(answer.message.content) : '' };
    context.io.emit({ type: 'RunResponse', from: member.speaker, message_id: answer.messageId ?? `msg_${context.run.id}`, message });
    await context.io.persist([message]);
    return message;
  }

  async function route({ context, plan, runMember, resumeWith, saved, finish }: ModeTurn) {
    let chosen: Member | undefined = saved.member ? plan.members.find((m) => m.agent.id === saved.member!.agentId) : undefined;
    if (!resumeWith || !chosen) {
      chosen = undefined;
      const tools = toolNames(plan.others.length ? plan.others : plan.members, 'route_to_');
      const spec: LoopSpec = {
        ...leaderBase(plan, `${roster(plan, tools, 'hand the request over')}\nPick the one member who should answer.`),
        settings: { ...leaderBase(plan, '').settings, tool_choice: 'required' },
        clientTools: [],
        serverTools: [...tools.entries()].map(([name, member]) => ({
          definition: { type: 'function', function: { name, description: `Hands the request to ${describe(member)}.`, parameters: { type: 'object', properties: {} } } },
          async run() {
            chosen ??= member;
            return { output: `Handed to ${member.agent.name}.`, isError: false };
          },
        })),
        maxSteps: 1,
      };
      const picked = await runLoop(spec, context.history, context.io, context.state);
      if (!chosen) return finish(picked, plan.leaderSpeaker);
    }
    const member: Member = chosen;
    try {
      const answer = await runMember(member, resumeWith && saved.member ? { runId: resumeWith.runId, results: resumeWith.results } : { task: lastUserText(context.history) });
      return finish({ kind: 'completed', message: await adopt(context, member, answer), finishReason: 'stop' }, member.speaker);
    } catch (error) {
      if (error instanceof MemberHalt) {
        return finish({ kind: 'requires_action', toolCalls: error.toolCalls, from: error.from, ...approvalsOf(error) }, member.speaker, { member: { runId: error.runId, agentId: member.agent.id, callId: null } });
      }
      throw error;
    }
  }

  async function broadcast({ context, plan, runMember, resumeWith, saved, finish }: ModeTurn) {
    const asked = plan.others.length ? plan.others : plan.members;
    const answers = [...(saved.answers ?? [])];
    let remaining = saved.remaining ?? asked.map((member) => member.agent.id);
    const task = lastUserText(context.history);
    for (const agentId of [...remaining]) {
      const member = asked.find((m) => m.agent.id === agentId);
      if (!member) continue;
      const resume = resumeWith && saved.member?.agentId === agentId ? resumeWith : undefined;
      try {
        const { message } = await runMember(member, resume ? { runId: resume.runId, results: resume.results } : { task });
        answers.push({ agentId, text: message ? textOf(message.content) : '' });
      } catch (error) {
        if (error instanceof MemberHalt) {
          return finish({ kind: 'requires_action', toolCalls: error.toolCalls, from: error.from, ...approvalsOf(error) }, member.speaker, {
            member: { runId: error.runId, agentId, callId: null },
            answers,
            remaining,
          });
        }
        if (context.io.signal.aborted) throw error;
        answers.push({ agentId, text: `(no answer: ${error instanceof Error ? error.message : 'the run failed'})` });
      }
      remaining = remaining.filter((id) => id !== agentId);
    }
    const summary = answers
      .map((answer) => {
        const member = asked.find((m) => m.agent.id === answer.agentId);
        return `${member ? describe(member) : answer.agentId}: ${answer.text}`;
      })
      .join('\n\n');
    const spec: LoopSpec = { ...leaderBase(plan, ''), clientTools: [], serverTools: [] };
    // The synthesis prompt is the leader's working, not the conversation: it is not stored.
    const working: ChatMessage[] = [...context.history, { role: 'user', content: `Your team answered the request:\n\n${summary}\n\nWrite the final answer.` }];
    const outcome = await runLoop(spec, working, context.io, context.state);
    return finish(outcome, plan.leaderSpeaker);
  }

  return { startTeamTurn };
}

export type TeamRunner = ReturnType<typeof createTeamRunner>;
