// Teams of agents: their lifecycle, and a team turn in every shape an agent turn has.
import type { Check, Schemas } from '../context.ts';
import { pageThrough } from './pagination.ts';
import { checkAgUi, checkProcess, checkRespond } from './protocols.ts';
import { streamTurn } from './runs.ts';

export const teamChecks: Check[] = [
  {
    name: 'team lifecycle',
    operations: ['createTeam', 'getTeam', 'updateTeam', 'listTeams', 'deleteTeam', 'deleteAgent'],
    async run(t) {
      const member = await t.createAgent({ name: `conformance ${t.nonce} member` });
      const team = await t.createTeam([member.id]);
      t.check('createTeam', team.members.length === 1 && team.members[0]!.agent_id === member.id && team.members[0]!.name === member.name, 'the team does not list its member with its name');
      t.check('createTeam', team.max_steps === 10, `max_steps is ${team.max_steps}, not its declared default 10`);

      const fetched = (await t.call('getTeam', { params: { teamId: team.id }, expect: 200 })).json as Schemas['Team'];
      t.check('getTeam', fetched.id === team.id && fetched.members.length === 1, 'GET /v1/teams/{teamId} answers another team');
      const name = `conformance ${t.nonce} team renamed`;
      const updated = (await t.call('updateTeam', { params: { teamId: team.id }, body: { name, mode: 'route' }, expect: 200 })).json as Schemas['Team'];
      t.check('updateTeam', updated.name === name && updated.mode === 'route' && updated.members.length === 1, 'PATCH did not change name and mode, or lost the members');
      const listed = await pageThrough(t, 'listTeams', {});
      t.check('listTeams', listed.ids.includes(team.id), 'the team is not listed');
      const asModel = await t.call('getModel', { params: { model: `team:${team.id}` }, expect: 200, halt: false });
      t.check('getModel', asModel.status !== 200 || (asModel.json as Schemas['Model']).owned_by === 'team', `team:${team.id} is not owned_by team`);

      const busy = await t.call('deleteAgent', { params: { agentId: member.id }, expect: 409, halt: false });
      t.check('deleteAgent', busy.status === 409, "a team's member agent could be deleted");
      await t.call('createTeam', { body: { name: 'conformance', members: [{ agent_id: 'agt_0000000000conformance' }] }, expect: [400, 404], halt: false });

      await t.call('deleteTeam', { params: { teamId: team.id }, expect: 204 });
      await t.call('getTeam', { params: { teamId: team.id }, expect: 404, halt: false });
      await t.call('deleteTeam', { params: { teamId: team.id }, expect: 404, halt: false });
      await t.call('getAgent', { params: { agentId: member.id }, expect: 200, halt: false });
    },
  },
  {
    name: 'team chat',
    operations: ['chatWithTeam'],
    async run(t) {
      const team = await t.team();
      const messages = [{ role: 'user', content: `conformance ${t.nonce} team hello` }];
      const turn = (await t.call('chatWithTeam', { params: { teamId: team.id }, body: { messages }, expect: 200 })).json as Schemas['ChatTurn'];
      t.check('chatWithTeam', turn.team_id === team.id && turn.agent_id === null, 'the turn does not name the team');
      t.check('chatWithTeam', turn.status === 'completed' && turn.message?.role === 'assistant', `the team turn ended ${turn.status} without an assistant message`);
      const streamed = await streamTurn(t, 'chatWithTeam', { teamId: team.id }, { messages });
      const started = streamed.events[0] as unknown as Schemas['RunStartedEvent'] | undefined;
      t.check('chatWithTeam', started?.team_id === team.id, 'RunStarted does not name the team');
      t.check('chatWithTeam', streamed.terminal?.type === 'RunCompleted', `the team stream ended with ${streamed.terminal?.type}`);
    },
  },
  {
    name: 'team AgentScope protocol',
    operations: ['processTeamRequest'],
    async run(t) {
      await checkProcess(t, 'processTeamRequest', { teamId: (await t.team()).id });
    },
  },
  {
    name: 'team Connexity contract',
    operations: ['respondWithTeam'],
    async run(t) {
      await checkRespond(t, 'respondWithTeam', { teamId: (await t.team()).id });
    },
  },
  {
    name: 'team AG-UI protocol',
    operations: ['runTeamWithAgUi'],
    async run(t) {
      await checkAgUi(t, 'runTeamWithAgUi', { teamId: (await t.team()).id });
    },
  },
];
