// Teams: the list, and one form to create or edit one (members with roles, who leads, the mode).
import { useState } from 'preact/hooks';
import { allPages, data, type Schemas } from '../api.ts';
import { href, navigate } from '../router.ts';
import { DeleteButton, ErrorMessage, Field, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';
import { chatModels } from './agents.tsx';

type Team = Schemas['Team'];
type TeamMode = Schemas['TeamMode'];

const MODES: Record<TeamMode, string> = {
  coordinate: 'The leader delegates sub-tasks to members, as tools it calls, and writes the answer from their results.',
  route: "The leader picks one member, whose answer is the team's.",
  broadcast: 'Every member answers and the leader synthesizes.',
};

export function TeamList() {
  const { client } = useSession();
  const teams = useLoad(() => allPages((after) => client.GET('/v1/teams', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })), []);
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  return (
    <section>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          Teams
        </h1>
        <a class="button primary" href={href('teams', 'new')}>
          New team
        </a>
      </div>
      <ErrorMessage error={teams.error} />
      {teams.loading && !teams.data && <Loading what="teams" />}
      {teams.data?.length === 0 && <p class="empty">No teams yet. A team puts agents under a leader that delegates, routes or asks everyone.</p>}
      {teams.data && teams.data.length > 0 && (
        <ul class="cards">
          {teams.data.map((team) => (
            <li key={team.id} class="card">
              <h2>
                <a href={href('teams', team.id)}>{team.name}</a>
              </h2>
              {team.description && <p>{team.description}</p>}
              <p class="meta">
                <span>{team.mode}</span>
                <span>led by {team.leader.name}</span>
                <span>{team.members.map((member) => member.name).join(', ')}</span>
                <span>updated {formatTime(team.updated_at)}</span>
              </p>
              <p class="actions">
                <a class="button primary" href={href('chat', 'team', team.id)}>
                  Chat
                </a>
                <a class="button" href={href('teams', team.id)}>
                  Edit
                </a>
              </p>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

interface MemberDraft {
  included: boolean;
  role: string;
}

export function TeamEditor({ teamId }: { teamId: string | null }) {
  const { client } = useSession();
  const loaded = useLoad(async () => {
    const [team, agents, models] = await Promise.all([
      teamId ? data(client.GET('/v1/teams/{teamId}', { params: { path: { teamId } } })) : Promise.resolve(null),
      allPages((after) => client.GET('/v1/agents', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
      chatModels(client),
    ]);
    return { team, agents, models };
  }, [teamId]);
  const heading = useFocusHeading<HTMLHeadingElement>([loaded.data !== undefined]);
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="the team" />;
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        {teamId ? `Edit ${loaded.data.team?.name ?? 'team'}` : 'New team'}
      </h1>
      {loaded.data.agents.length === 0 ? (
        <p class="empty">
          A team is made of agents: <a href={href('agents', 'new')}>make an agent</a> first.
        </p>
      ) : (
        <TeamForm team={loaded.data.team} agents={loaded.data.agents} models={loaded.data.models} />
      )}
    </section>
  );
}

function TeamForm({ team, agents, models }: { team: Team | null; agents: Schemas['Agent'][]; models: string[] }) {
  const { client } = useSession();
  const [name, setName] = useState(team?.name ?? '');
  const [description, setDescription] = useState(team?.description ?? '');
  const [instructions, setInstructions] = useState(team?.instructions ?? '');
  const [mode, setMode] = useState<TeamMode>(team?.mode ?? 'coordinate');
  const [leaderModel, setLeaderModel] = useState(team?.leader_model ?? '');
  const [leader, setLeader] = useState<string>(team?.members.find((member) => member.is_leader)?.agent_id ?? '');
  const [members, setMembers] = useState<Record<string, MemberDraft>>(() =>
    Object.fromEntries(
      agents.map((agent) => {
        const member = team?.members.find((m) => m.agent_id === agent.id);
        return [agent.id, { included: Boolean(member), role: member?.role ?? '' }];
      }),
    ),
  );
  const [saved, setSaved] = useState(false);
  const setMember = (agentId: string, patch: Partial<MemberDraft>) => {
    setSaved(false);
    setMembers((current) => ({ ...current, [agentId]: { ...current[agentId]!, ...patch } }));
  };

  const save = useAction(async () => {
    const chosen = agents.filter((agent) => members[agent.id]?.included);
    const body = {
      name: name.trim(),
      description: description.trim() || null,
      instructions: instructions.trim() || null,
      mode,
      members: chosen.map((agent) => ({ agent_id: agent.id, role: members[agent.id]!.role.trim() || null, is_leader: agent.id === leader })),
    };
    if (team) {
      await data(client.PATCH('/v1/teams/{teamId}', { params: { path: { teamId: team.id } }, body: { ...body, leader_model: leaderModel || null } }));
      setSaved(true);
    } else {
      const created = await data(client.POST('/v1/teams', { body: { ...body, ...(leaderModel ? { leader_model: leaderModel } : {}) } }));
      navigate(href('teams', created.id));
    }
  });
  const remove = useAction(async () => {
    await data(client.DELETE('/v1/teams/{teamId}', { params: { path: { teamId: team!.id } } }));
    navigate(href('teams'));
  });

  return (
    <form class="editor" onSubmit={(event) => { event.preventDefault(); void save.run(); }}>
      <Field label="Name">{(id) => <input id={id} required maxLength={100} value={name} onInput={(e) => { setSaved(false); setName(e.currentTarget.value); }} />}</Field>
      <Field label="Description">{(id) => <input id={id} maxLength={2000} value={description} onInput={(e) => { setSaved(false); setDescription(e.currentTarget.value); }} />}</Field>

      <fieldset>
        <legend>Mode</legend>
        {(Object.keys(MODES) as TeamMode[]).map((value) => (
          <label key={value} class="check">
            <input type="radio" name="mode" value={value} checked={mode === value} onChange={() => { setSaved(false); setMode(value); }} />
            <strong>{value}</strong> <span class="muted">{MODES[value]}</span>
          </label>
        ))}
      </fieldset>

      <fieldset>
        <legend>Members</legend>
        <p class="hint">The leader reads each member's role when it delegates.</p>
        {agents.map((agent) => (
          <div key={agent.id} class="member">
            <label class="check">
              <input
                type="checkbox"
                checked={members[agent.id]?.included}
                onChange={(e) => {
                  setMember(agent.id, { included: e.currentTarget.checked });
                  if (!e.currentTarget.checked && leader === agent.id) setLeader('');
                }}
              />
              {agent.name} <span class="muted">{agent.model}</span>
            </label>
            {members[agent.id]?.included && (
              <Field label={`${agent.name}'s role`}>
                {(id) => <input id={id} maxLength={500} value={members[agent.id]!.role} onInput={(e) => setMember(agent.id, { role: e.currentTarget.value })} />}
              </Field>
            )}
          </div>
        ))}
      </fieldset>

      <fieldset>
        <legend>Leader</legend>
        <label class="check">
          <input type="radio" name="leader" checked={leader === ''} onChange={() => { setSaved(false); setLeader(''); }} />
          A leader built by the server from the instructions below
        </label>
        {agents
          .filter((agent) => members[agent.id]?.included)
          .map((agent) => (
            <label key={agent.id} class="check">
              <input type="radio" name="leader" checked={leader === agent.id} onChange={() => { setSaved(false); setLeader(agent.id); }} />
              {agent.name} leads
            </label>
          ))}
      </fieldset>
      {leader === '' && (
        <>
          <Field label="Leader's instructions">
            {(id) => <textarea id={id} rows={4} value={instructions} onInput={(e) => { setSaved(false); setInstructions(e.currentTarget.value); }} />}
          </Field>
          <Field label="Leader's model">
            {(id) => (
              <select id={id} value={leaderModel} onChange={(e) => { setSaved(false); setLeaderModel(e.currentTarget.value); }}>
                <option value="">The server's default</option>
                {models.map((model) => (
                  <option key={model} value={model}>
                    {model}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </>
      )}

      <ErrorMessage error={save.error ?? remove.error} />
      {saved && (
        <p class="ok" role="status">
          Saved.
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {team ? 'Save' : 'Create team'}
        </button>
        {team && (
          <a class="button" href={href('chat', 'team', team.id)}>
            Chat
          </a>
        )}
        {team && <DeleteButton label="Delete team" busy={remove.busy} onConfirm={() => void remove.run()} />}
      </div>
    </form>
  );
}
