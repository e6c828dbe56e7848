// What every check gets: the client, the recorder, assertions that name the operation they judge, and
// the shared resources (a chat model, an agent, a team, …) made once per run and removed at the end.
import type { components } from '../generated/openapi.gen.ts';
import type { Contract, OperationId } from './contract.ts';
import { Halt, type CallOptions, type Client, type Exchange } from './http.ts';
import type { Recorder } from './report.ts';

export type Schemas = components['schemas'];
export type Agent = Schemas['Agent'];
export type Team = Schemas['Team'];
export type ChatTurn = Schemas['ChatTurn'];
export type KnowledgeDocument = Schemas['KnowledgeDocument'];

export interface Check {
  name: string;
  /** The operations this check judges; with `only`, the check runs when one of them is selected. */
  operations: readonly OperationId[];
  run(t: Context): Promise<void>;
}

/** The tool the kit offers an agent, named in the message so that a model has every reason to call it. */
export const TOOL_NAME = 'conformance_lookup';
export const TOOL = {
  type: 'function' as const,
  function: {
    name: TOOL_NAME,
    description: 'Looks a word up in the conformance kit. Call it when asked to.',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
};
/** One collection for every run, so that runs against a real deployment do not pile up collections. */
export const KNOWLEDGE_COLLECTION = 'conformance';
export const TOOL_PROMPT = `Call the ${TOOL_NAME} tool with {"query": "conformance"} and tell me what it returns.`;

interface Created {
  agents: string[];
  teams: string[];
  documents: string[];
  apiKeys: string[];
}

export class Context {
  readonly client: Client;
  readonly recorder: Recorder;
  readonly contract: Contract;
  /** A word unique to this run, so that its resources are told apart from others'. */
  readonly nonce: string;
  readonly hasSecondUser: boolean;
  readonly created: Created = { agents: [], teams: [], documents: [], apiKeys: [] };
  readonly #selected: (operationId: OperationId) => boolean;
  readonly #requestedModel: string | undefined;
  readonly #fixtures = new Map<string, Promise<unknown>>();
  /** The chat model agents are made with, once known. */
  chatModel: string | null = null;

  constructor(input: {
    client: Client;
    recorder: Recorder;
    selected: (operationId: OperationId) => boolean;
    model: string | undefined;
    hasSecondUser: boolean;
    nonce: string;
  }) {
    this.client = input.client;
    this.recorder = input.recorder;
    this.contract = input.client.contract;
    this.#selected = input.selected;
    this.#requestedModel = input.model;
    this.hasSecondUser = input.hasSecondUser;
    this.nonce = input.nonce;
  }

  selected(operationId: OperationId): boolean {
    return this.#selected(operationId);
  }

  call(operationId: OperationId, options: CallOptions): Promise<Exchange> {
    return this.client.call(operationId, options);
  }

  /** Records a failure of `operationId` unless `condition` holds; answers `condition`. */
  check(operationId: OperationId, condition: boolean, failure: string): boolean {
    if (!condition) this.recorder.fail(operationId, failure);
    return condition;
  }

  /** As `check`, and stops the check when it fails. */
  require(operationId: OperationId, condition: boolean, failure: string): void {
    if (!this.check(operationId, condition, failure)) throw new Halt(failure);
  }

  note(operationId: OperationId, note: string): void {
    this.recorder.note(operationId, note);
  }

  skip(operationId: OperationId, reason: string): void {
    this.recorder.skip(operationId, reason);
  }

  /** Notes what a create operation made, for the clean-up, even when the answer was not the one expected. */
  #made(operationId: OperationId, response: Exchange, expect: number | readonly number[], ids: string[]): unknown {
    const made = response.json as { id?: unknown } | undefined;
    if (response.status < 300 && typeof made?.id === 'string' && !ids.includes(made.id)) ids.push(made.id);
    if (!(typeof expect === 'number' ? [expect] : expect).includes(response.status)) throw new Halt(`${operationId} answered ${response.status}`);
    this.require(operationId, typeof made?.id === 'string', `${operationId} answered no id`);
    return made;
  }

  #once<T>(key: string, make: () => Promise<T>): Promise<T> {
    let fixture = this.#fixtures.get(key) as Promise<T> | undefined;
    if (!fixture) {
      fixture = make();
      this.#fixtures.set(key, fixture);
    }
    return fixture;
  }

  /** The models of `GET /v1/models`. */
  models(): Promise<Schemas['Model'][]> {
    return this.#once('models', async () => {
      const list = await this.call('listModels', { expect: 200 });
      return ((list.json as Schemas['ModelList'] | undefined)?.data ?? []).filter((model) => typeof model?.id === 'string');
    });
  }

  /** `--model`, or the server's first chat model that is not one of the caller's agents or teams. */
  model(): Promise<string> {
    return this.#once('model', async () => {
      if (this.#requestedModel) return (this.chatModel = this.#requestedModel);
      const models = await this.models();
      const chat = models.find(
        (model) =>
          !/^(agent|team):/.test(model.id) &&
          (model.capabilities === undefined ? true : model.capabilities.includes('chat')),
      );
      this.require('listModels', chat !== undefined, 'GET /v1/models lists no chat model to make agents with (pass --model)');
      return (this.chatModel = chat!.id);
    });
  }

  /** Makes an agent with the kit's model; it is deleted at the end of the run. */
  async createAgent(fields: Partial<Schemas['AgentCreate']> = {}): Promise<Agent> {
    const model = await this.model();
    const response = await this.call('createAgent', {
      body: { name: `conformance ${this.nonce}`, model, metadata: { conformance: this.nonce }, ...fields },
      expect: 201,
      halt: false,
    });
    return this.#made('createAgent', response, 201, this.created.agents) as Agent;
  }

  /** The run's shared agent, for checks that only need one to exist. */
  agent(): Promise<Agent> {
    return this.#once('agent', () => this.createAgent({ name: `conformance ${this.nonce} shared` }));
  }

  async createTeam(members: string[]): Promise<Team> {
    const response = await this.call('createTeam', {
      body: { name: `conformance ${this.nonce} team`, members: members.map((agent_id) => ({ agent_id })), metadata: { conformance: this.nonce } },
      expect: 201,
      halt: false,
    });
    return this.#made('createTeam', response, 201, this.created.teams) as Team;
  }

  team(): Promise<Team> {
    return this.#once('team', async () => this.createTeam([(await this.agent()).id]));
  }

  async createApiKey(name: string): Promise<Schemas['ApiKeyWithSecret']> {
    const response = await this.call('createApiKey', { body: { name }, expect: 201, halt: false });
    return this.#made('createApiKey', response, 201, this.created.apiKeys) as Schemas['ApiKeyWithSecret'];
  }

  /** Adds a document to the kit's collection; it is deleted at the end of the run. */
  async createDocument(text: string): Promise<{ status: number; document: KnowledgeDocument }> {
    const response = await this.call('createKnowledgeDocument', {
      body: { text, title: `conformance ${this.nonce}`, collection: KNOWLEDGE_COLLECTION, metadata: { conformance: this.nonce } },
      expect: [201, 202],
      halt: false,
    });
    const document = this.#made('createKnowledgeDocument', response, [201, 202], this.created.documents) as KnowledgeDocument;
    return { status: response.status, document };
  }

  document(): Promise<KnowledgeDocument> {
    return this.#once('document', async () => (await this.createDocument(`Conformance kit fixture ${this.nonce}.`)).document);
  }

  /** A completed turn with the shared agent: a session and a run to look at. */
  turn(): Promise<ChatTurn> {
    return this.#once('turn', async () => {
      const agent = await this.agent();
      const response = await this.call('chatWithAgent', {
        params: { agentId: agent.id },
        body: { messages: [{ role: 'user', content: `conformance ${this.nonce} hello` }] },
        expect: 200,
      });
      const turn = response.json as ChatTurn;
      this.require('chatWithAgent', typeof turn?.run_id === 'string', 'the chat turn has no run_id');
      return turn;
    });
  }

  /** Removes what the run made, best effort and without judging. */
  async cleanUp(): Promise<void> {
    const remove = async (operationId: OperationId, params: Record<string, string>) => {
      try {
        await this.client.call(operationId, { params, expect: [204, 404], quiet: true });
      } catch {
        // best effort: a resource left behind is not a finding
      }
    };
    for (const teamId of this.created.teams) await remove('deleteTeam', { teamId });
    for (const agentId of this.created.agents) await remove('deleteAgent', { agentId });
    for (const documentId of this.created.documents) await remove('deleteKnowledgeDocument', { documentId });
    for (const keyId of this.created.apiKeys) await remove('deleteApiKey', { keyId });
  }
}
