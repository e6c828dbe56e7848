// Every resource belongs to one user: with a second user's key, each of the first user's resources
// answers 404, exactly like a missing one, and nothing the second user tries changes it.
import type { OperationId } from '../contract.ts';
import type { Check, Schemas } from '../context.ts';

const CHECK = "another user's resources answer 404 (--api-key-2)";

const OPERATIONS: OperationId[] = [
  'getAgent', 'updateAgent', 'deleteAgent', 'chatWithAgent', 'processAgentRequest', 'respondWithAgent', 'runAgentWithAgUi',
  'getSession', 'listSessionRuns', 'deleteSession', 'getRun', 'cancelRun', 'listRunEvents',
  'getTeam', 'updateTeam', 'deleteTeam', 'chatWithTeam', 'processTeamRequest', 'respondWithTeam', 'runTeamWithAgUi',
  'getKnowledgeDocument', 'deleteKnowledgeDocument', 'getApiKey', 'deleteApiKey', 'listAgents', 'createTeam',
];

export const ownershipChecks: Check[] = [
  {
    name: 'ownership',
    operations: OPERATIONS,
    async run(t) {
      t.recorder.general(CHECK);
      if (!t.hasSecondUser) {
        t.recorder.generalSkip(CHECK, 'no second API key: pass --api-key-2 with a key of another user');
        return;
      }
      const me = (await t.call('getAccount', { expect: 200 })).json as Schemas['Account'];
      const other = (await t.call('getAccount', { as: 'secondary', expect: 200 })).json as Schemas['Account'];
      if (me.id === other.id) {
        t.recorder.generalSkip(CHECK, '--api-key-2 belongs to the same user as --api-key');
        return;
      }
      const agent = await t.agent();
      const turn = await t.turn();
      const team = await t.team();
      const document = await t.document();
      const key = await t.createApiKey(`conformance ${t.nonce} ownership`);

      const strangerGets404 = async (id: OperationId, what: string, request: { params?: Record<string, string>; body?: unknown; accept?: string; query?: Record<string, string> }) => {
        if (!t.selected(id)) return;
        const answer = await t.call(id, { ...request, as: 'secondary', expect: 404, halt: false });
        if (answer.status !== 404) t.recorder.generalFail(CHECK, `${id}: user 2 got ${answer.status} for user 1's ${what}`);
      };
      const agentId = { agentId: agent.id };
      const teamId = { teamId: team.id };
      const runId = { runId: turn.run_id };
      const chat = { messages: [{ role: 'user', content: 'conformance' }] };
      const scope = { input: [{ role: 'user', content: [{ type: 'text', text: 'conformance' }] }], stream: false };
      await strangerGets404('getAgent', 'agent', { params: agentId });
      await strangerGets404('updateAgent', 'agent', { params: agentId, body: { name: 'taken over' } });
      await strangerGets404('deleteAgent', 'agent', { params: agentId });
      await strangerGets404('chatWithAgent', 'agent', { params: agentId, body: chat });
      await strangerGets404('processAgentRequest', 'agent', { params: agentId, body: scope });
      await strangerGets404('respondWithAgent', 'agent', { params: agentId, body: chat });
      await strangerGets404('runAgentWithAgUi', 'agent', { params: agentId, body: { threadId: 't', runId: 'r', messages: [] }, accept: 'text/event-stream' });
      await strangerGets404('getSession', 'session', { params: { sessionId: turn.session_id } });
      await strangerGets404('listSessionRuns', 'session', { params: { sessionId: turn.session_id } });
      await strangerGets404('deleteSession', 'session', { params: { sessionId: turn.session_id } });
      await strangerGets404('getRun', 'run', { params: runId });
      await strangerGets404('cancelRun', 'run', { params: runId });
      await strangerGets404('listRunEvents', 'run (as a stream)', { params: runId, accept: 'text/event-stream' });
      await strangerGets404('listRunEvents', 'run (as JSON)', { params: runId, accept: 'application/json' });
      await strangerGets404('getTeam', 'team', { params: teamId });
      await strangerGets404('updateTeam', 'team', { params: teamId, body: { name: 'taken over' } });
      await strangerGets404('deleteTeam', 'team', { params: teamId });
      await strangerGets404('chatWithTeam', 'team', { params: teamId, body: chat });
      await strangerGets404('processTeamRequest', 'team', { params: teamId, body: scope });
      await strangerGets404('respondWithTeam', 'team', { params: teamId, body: chat });
      await strangerGets404('runTeamWithAgUi', 'team', { params: teamId, body: { threadId: 't', runId: 'r', messages: [] }, accept: 'text/event-stream' });
      await strangerGets404('getKnowledgeDocument', 'document', { params: { documentId: document.id } });
      await strangerGets404('deleteKnowledgeDocument', 'document', { params: { documentId: document.id } });
      await strangerGets404('getApiKey', 'API key', { params: { keyId: key.id } });
      await strangerGets404('deleteApiKey', 'API key', { params: { keyId: key.id } });
      if (t.selected('createTeam')) {
        const stolen = await t.call('createTeam', { as: 'secondary', body: { name: 'conformance', members: [{ agent_id: agent.id }] }, expect: [400, 404], halt: false });
        if (stolen.status === 201) {
          t.recorder.generalFail(CHECK, "createTeam: user 2 made a team of user 1's agent");
          await t.call('deleteTeam', { as: 'secondary', params: { teamId: (stolen.json as Schemas['Team']).id }, expect: 204, quiet: true });
        }
      }
      if (t.selected('listAgents')) {
        const theirs = (await t.call('listAgents', { as: 'secondary', query: { limit: 100 }, expect: 200 })).json as Schemas['AgentList'];
        if (theirs.data.some((item) => item.id === agent.id)) t.recorder.generalFail(CHECK, "listAgents: user 2's list includes user 1's agent");
      }

      // Nothing user 2 tried may have touched user 1's resources.
      const intact = async (id: OperationId, params: Record<string, string>, what: string) => {
        const answer = await t.call(id, { params, expect: 200, halt: false });
        if (answer.status !== 200) t.recorder.generalFail(CHECK, `user 1's ${what} is gone after user 2's attempts (${answer.status})`);
        return answer;
      };
      const mine = await intact('getAgent', agentId, 'agent');
      if ((mine.json as Schemas['Agent'] | undefined)?.name === 'taken over') t.recorder.generalFail(CHECK, "user 2 renamed user 1's agent");
      await intact('getSession', { sessionId: turn.session_id }, 'session');
      await intact('getTeam', teamId, 'team');
      await intact('getKnowledgeDocument', { documentId: document.id }, 'document');
      await intact('getApiKey', { keyId: key.id }, 'API key');
      const run = (await intact('getRun', runId, 'run')).json as Schemas['Run'] | undefined;
      if (run && run.status !== turn.status) t.recorder.generalFail(CHECK, `user 1's run changed from ${turn.status} to ${run.status}`);
    },
  },
];
