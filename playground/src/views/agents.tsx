// Agents: the list, and one form to create or edit one (model, instructions, server tools, client tools
// with JSON-schema parameters, knowledge collections).
import { useState } from 'preact/hooks';
import { allPages, ApiFailure, data, type Schemas } from '../api.ts';
import { parseParameters } from '../forms/schema.ts';
import { href, navigate } from '../router.ts';
import { DeleteButton, ErrorMessage, Field, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';

type Agent = Schemas['Agent'];
type ServerToolName = Schemas['ServerToolName'];

/** Every server tool the contract names; the Record makes the compiler ask for a new one's description. */
export const SERVER_TOOLS: Record<ServerToolName, string> = {
  current_time: 'The time now, in a given time zone.',
  calculator: 'Arithmetic on an expression.',
  knowledge_search: 'Searches the knowledge collections below (all of yours when none is picked).',
};

export const EXAMPLE_PARAMETERS = JSON.stringify({ type: 'object', properties: { city: { type: 'string', description: 'The city' } }, required: ['city'] }, null, 2);

/** The catalog's chat models, without the agents and teams that /v1/models lists as models too. */
export async function chatModels(client: ReturnType<typeof useSession>['client']): Promise<string[]> {
  const list = await data(client.GET('/v1/models'));
  return list.data
    .filter((model) => model.owned_by !== 'agent' && model.owned_by !== 'team' && (model.capabilities ?? ['chat']).includes('chat'))
    .map((model) => model.id);
}

export function AgentList() {
  const { client } = useSession();
  const agents = useLoad(() => allPages((after) => client.GET('/v1/agents', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })), []);
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  return (
    <section>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          Agents
        </h1>
        <a class="button primary" href={href('agents', 'new')}>
          New agent
        </a>
      </div>
      <ErrorMessage error={agents.error} />
      {agents.loading && !agents.data && <Loading what="agents" />}
      {agents.data?.length === 0 && <p class="empty">No agents yet. An agent is a model with instructions and tools: make one to chat with it.</p>}
      {agents.data && agents.data.length > 0 && (
        <ul class="cards">
          {agents.data.map((agent) => (
            <li key={agent.id} class="card">
              <h2>
                <a href={href('agents', agent.id)}>{agent.name}</a>
              </h2>
              {agent.description && <p>{agent.description}</p>}
              <p class="meta">
                <span>{agent.model}</span>
                {agent.server_tools.length + agent.tools.length > 0 && <span>{[...agent.server_tools, ...agent.tools.map((tool) => tool.function.name)].join(', ')}</span>}
                <span>updated {formatTime(agent.updated_at)}</span>
              </p>
              <p class="actions">
                <a class="button primary" href={href('chat', 'agent', agent.id)}>
                  Chat
                </a>
                <a class="button" href={href('agents', agent.id)}>
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

interface ToolDraft {
  key: number;
  name: string;
  description: string;
  parameters: string;
}

interface Draft {
  name: string;
  description: string;
  model: string;
  instructions: string;
  serverTools: ServerToolName[];
  tools: ToolDraft[];
  collections: string[];
  maxSteps: string;
}

let toolKeys = 0;

function draftOf(agent: Agent | null): Draft {
  return {
    name: agent?.name ?? '',
    description: agent?.description ?? '',
    model: agent?.model ?? '',
    instructions: agent?.instructions ?? '',
    serverTools: agent?.server_tools ?? [],
    tools: (agent?.tools ?? []).map((tool) => ({
      key: ++toolKeys,
      name: tool.function.name,
      description: tool.function.description ?? '',
      parameters: tool.function.parameters ? JSON.stringify(tool.function.parameters, null, 2) : '',
    })),
    collections: agent?.knowledge_collections ?? [],
    maxSteps: String(agent?.max_steps ?? 10),
  };
}

/** The request body, or the first problem found in the client tools (named as the person sees them). */
function bodyOf(draft: Draft): Schemas['AgentCreate'] {
  const tools = draft.tools.map((tool, index) => {
    const parsed = parseParameters(tool.parameters);
    if (parsed.error) throw new ApiFailure(`Client tool ${index + 1} (${tool.name || 'unnamed'}): ${parsed.error}`, 400);
    return {
      type: 'function' as const,
      function: {
        name: tool.name.trim(),
        ...(tool.description.trim() ? { description: tool.description.trim() } : {}),
        ...(parsed.schema ? { parameters: parsed.schema } : {}),
      },
    };
  });
  return {
    name: draft.name.trim(),
    description: draft.description.trim() || null,
    instructions: draft.instructions.trim() || null,
    ...(draft.model ? { model: draft.model } : {}),
    server_tools: draft.serverTools,
    tools,
    knowledge_collections: draft.collections,
    max_steps: Number(draft.maxSteps) || 10,
  };
}

export function AgentEditor({ agentId }: { agentId: string | null }) {
  const { client } = useSession();
  const loaded = useLoad(async () => {
    const [agent, models, collections] = await Promise.all([
      agentId ? data(client.GET('/v1/agents/{agentId}', { params: { path: { agentId } } })) : Promise.resolve(null),
      chatModels(client),
      data(client.GET('/v1/knowledge/collections', { params: { query: { limit: 100 } } })).then((list) => list.data.map((collection) => collection.name)),
    ]);
    return { agent, models, collections };
  }, [agentId]);
  const heading = useFocusHeading<HTMLHeadingElement>([loaded.data !== undefined]);

  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="the agent" />;
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        {agentId ? `Edit ${loaded.data.agent?.name ?? 'agent'}` : 'New agent'}
      </h1>
      <AgentForm agent={loaded.data.agent} models={loaded.data.models} collections={loaded.data.collections} />
    </section>
  );
}

function AgentForm({ agent, models, collections }: { agent: Agent | null; models: string[]; collections: string[] }) {
  const { client } = useSession();
  const [draft, setDraft] = useState(() => draftOf(agent));
  const [newCollection, setNewCollection] = useState('');
  const [saved, setSaved] = useState(false);
  const set = (patch: Partial<Draft>) => {
    setSaved(false);
    setDraft((current) => ({ ...current, ...patch }));
  };
  const setTool = (key: number, patch: Partial<ToolDraft>) => set({ tools: draft.tools.map((tool) => (tool.key === key ? { ...tool, ...patch } : tool)) });

  const save = useAction(async () => {
    const body = bodyOf(draft);
    if (agent) {
      await data(client.PATCH('/v1/agents/{agentId}', { params: { path: { agentId: agent.id } }, body }));
      setSaved(true);
    } else {
      const created = await data(client.POST('/v1/agents', { body }));
      navigate(href('agents', created.id));
    }
  });
  const remove = useAction(async () => {
    await data(client.DELETE('/v1/agents/{agentId}', { params: { path: { agentId: agent!.id } } }));
    navigate(href('agents'));
  });

  const allCollections = [...new Set([...collections, ...draft.collections])];
  return (
    <form class="editor" onSubmit={(event) => { event.preventDefault(); void save.run(); }}>
      <Field label="Name">{(id) => <input id={id} required maxLength={100} value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} />}</Field>
      <Field label="Description">{(id) => <input id={id} maxLength={2000} value={draft.description} onInput={(e) => set({ description: e.currentTarget.value })} />}</Field>
      <Field label="Model" hint="From the server's catalog (GET /v1/models).">
        {(id, hint) => (
          <select id={id} aria-describedby={hint} value={draft.model} onChange={(e) => set({ model: e.currentTarget.value })}>
            <option value="">The server's default</option>
            {[...new Set([...models, ...(draft.model ? [draft.model] : [])])].map((model) => (
              <option key={model} value={model}>
                {model}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Instructions" hint="The system prompt.">
        {(id, hint) => <textarea id={id} rows={5} aria-describedby={hint} value={draft.instructions} onInput={(e) => set({ instructions: e.currentTarget.value })} />}
      </Field>

      <fieldset>
        <legend>Server tools</legend>
        <p class="hint">Tools the server runs itself, shown as cards in the chat.</p>
        {(Object.keys(SERVER_TOOLS) as ServerToolName[]).map((name) => (
          <label key={name} class="check">
            <input
              type="checkbox"
              checked={draft.serverTools.includes(name)}
              onChange={(e) => set({ serverTools: e.currentTarget.checked ? [...draft.serverTools, name] : draft.serverTools.filter((tool) => tool !== name) })}
            />
            <code>{name}</code> <span class="muted">{SERVER_TOOLS[name]}</span>
          </label>
        ))}
      </fieldset>

      <fieldset>
        <legend>Client tools</legend>
        <p class="hint">Tools the client runs: a call halts the run until the page answers it, with a form built from the parameters.</p>
        {draft.tools.map((tool, index) => (
          <div class="tool-draft" key={tool.key}>
            <Field label={`Tool ${index + 1} name`}>
              {(id) => <input id={id} required pattern="[a-zA-Z0-9_\-]{1,64}" value={tool.name} onInput={(e) => setTool(tool.key, { name: e.currentTarget.value })} />}
            </Field>
            <Field label={`Tool ${index + 1} description`}>
              {(id) => <input id={id} maxLength={4096} value={tool.description} onInput={(e) => setTool(tool.key, { description: e.currentTarget.value })} />}
            </Field>
            <Field label={`Tool ${index + 1} parameters (JSON Schema)`} hint={parseParameters(tool.parameters).error ?? 'An object schema; its properties become the form fields.'}>
              {(id, hint) => (
                <textarea
                  id={id}
                  class="code"
                  rows={6}
                  spellcheck={false}
                  aria-describedby={hint}
                  aria-invalid={parseParameters(tool.parameters).error ? true : undefined}
                  value={tool.parameters}
                  onInput={(e) => setTool(tool.key, { parameters: e.currentTarget.value })}
                />
              )}
            </Field>
            <button type="button" onClick={() => set({ tools: draft.tools.filter((other) => other.key !== tool.key) })}>
              Remove tool {index + 1}
            </button>
          </div>
        ))}
        <button type="button" onClick={() => set({ tools: [...draft.tools, { key: ++toolKeys, name: '', description: '', parameters: EXAMPLE_PARAMETERS }] })}>
          Add a client tool
        </button>
      </fieldset>

      <fieldset>
        <legend>Knowledge collections</legend>
        <p class="hint">Picking any gives the agent the knowledge_search tool over them.</p>
        {allCollections.length === 0 && <p class="muted">No collections yet; upload documents on the Knowledge page, or name one here.</p>}
        {allCollections.map((name) => (
          <label key={name} class="check">
            <input
              type="checkbox"
              checked={draft.collections.includes(name)}
              onChange={(e) => set({ collections: e.currentTarget.checked ? [...draft.collections, name] : draft.collections.filter((other) => other !== name) })}
            />
            {name}
          </label>
        ))}
        <div class="inline">
          <Field label="Another collection">
            {(id) => <input id={id} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}" value={newCollection} onInput={(e) => setNewCollection(e.currentTarget.value)} />}
          </Field>
          <button
            type="button"
            disabled={!newCollection.trim()}
            onClick={() => {
              set({ collections: [...new Set([...draft.collections, newCollection.trim()])] });
              setNewCollection('');
            }}
          >
            Add
          </button>
        </div>
      </fieldset>

      <Field label="Most model calls per run">
        {(id) => <input id={id} type="number" min={1} max={50} value={draft.maxSteps} onInput={(e) => set({ maxSteps: e.currentTarget.value })} />}
      </Field>

      <ErrorMessage error={save.error ?? remove.error} />
      {saved && (
        <p class="ok" role="status">
          Saved.
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          {agent ? 'Save' : 'Create agent'}
        </button>
        {agent && (
          <a class="button" href={href('chat', 'agent', agent.id)}>
            Chat
          </a>
        )}
        {agent && <DeleteButton label="Delete agent" busy={remove.busy} onConfirm={() => void remove.run()} />}
      </div>
    </form>
  );
}
