// Ending runs in the store on both engines, several at once (one statement, store/group-commit.ts): each
// run that ends gets its state, its terminal event and its session's status, a run another server holds
// or that already ended is left alone, and a second ending of one run in the same turn finds it ended.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import { createSessionStore } from '../sessions/store.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import type { RunEvent } from './events.ts';
import { createRunStore } from './store.ts';

const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };

describe.each(await availableEngines())('ending runs in the store on %s', (engine) => {
  let database: TestDatabase;
  let userId: string;

  beforeAll(async () => {
    database = await createTestDatabase(engine);
    userId = (await findOrCreateUser(database.db, `run-store-${engine}@example.com`)).user.id;
  });
  afterAll(() => database?.drop());

  it('ends the runs of one turn together, each as its own ending says, and only those it may end', async () => {
    const sessions = createSessionStore(database.db);
    const runs = createRunStore(database.db);
    const open = async (owner: string) => {
      const session = await sessions.create(userId, { agentId: null, teamId: null }, []);
      return runs.create({ userId, sessionId: session.id, agentId: null, teamId: null, parentRunId: null, model: 'local', owner });
    };
    const [done, waiting, elsewhere] = await Promise.all([open('inst_me'), open('inst_me'), open('inst_other')]);
    const event = (runId: string, type: string, sequence: number) => ({ run_id: runId, sequence_number: sequence, type, created_at: 1 }) as unknown as RunEvent;
    const calls = [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }];

    const [completed, halted, notMine, again] = await Promise.all([
      runs.close(done.id, { status: 'completed', usage }, ['in_progress'], { owner: 'inst_me', event: event(done.id, 'RunCompleted', 5), sessionStatus: 'idle' }),
      runs.close(
        waiting.id,
        { status: 'requires_action', usage, requiredAction: { type: 'submit_tool_outputs', tool_calls: calls } as never, state: { pending: 1 } },
        ['in_progress'],
        { owner: 'inst_me', event: event(waiting.id, 'ToolRequest', 2), sessionStatus: 'requires_action' },
      ),
      runs.close(elsewhere.id, { status: 'failed', usage }, ['in_progress'], { owner: 'inst_me', event: event(elsewhere.id, 'RunError', 1), sessionStatus: 'idle' }),
      runs.close(done.id, { status: 'failed', usage }, ['in_progress'], { owner: 'inst_me', event: event(done.id, 'RunError', 6), sessionStatus: 'idle' }),
    ]);

    expect(completed).toMatchObject({ id: done.id, status: 'completed', usage, error: null, last_sequence_number: 5 });
    expect(completed!.completed_at).toBeInstanceOf(Date);
    expect(halted).toMatchObject({ id: waiting.id, status: 'requires_action', required_action: { tool_calls: calls }, state: { pending: 1 }, completed_at: null, last_sequence_number: 2 });
    expect(notMine).toBeUndefined();
    expect(again).toBeUndefined();

    expect((await runs.get(userId, done.id)).status).toBe('completed');
    expect((await runs.get(userId, elsewhere.id)).status).toBe('in_progress');
    expect((await runs.events(done.id, 0, 10)).map((stored) => stored.type)).toEqual(['RunCompleted']);
    expect((await runs.events(waiting.id, 0, 10)).map((stored) => stored.type)).toEqual(['ToolRequest']);
    expect(await runs.events(elsewhere.id, 0, 10)).toEqual([]);
    const statusOf = async (runId: string) => (await sessions.get(userId, (await runs.get(userId, runId)).session_id)).status;
    expect([await statusOf(done.id), await statusOf(waiting.id), await statusOf(elsewhere.id)]).toEqual(['idle', 'requires_action', 'running']);
  });
});
