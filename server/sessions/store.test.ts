// The session store on both engines, for what it writes in batches: sessions opened at once each get their
// own row (and one naming an external id another took gets a 409), and appends made at once to several
// sessions keep each session's order, positions and count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { createSessionStore } from './store.ts';

describe.each(await availableEngines())('the session store on %s', (engine) => {
  let database: TestDatabase;
  let userId: string;
  const target = { agentId: null, teamId: null };
  // External ids are unique per agent or team.
  const agent = { agentId: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D', teamId: null };

  beforeAll(async () => {
    database = await createTestDatabase(engine);
    userId = (await findOrCreateUser(database.db, `session-store-${engine}@example.com`)).user.id;
    await database.db.query(`INSERT INTO agents (id, user_id, name, model, max_steps, run_timeout_seconds) VALUES ($1, $2, 'Store', 'local', 5, 60)`, [agent.agentId, userId]);
  });
  afterAll(() => database?.drop());

  it('opens sessions made at once each with its own row, and refuses a second session for one external id', async () => {
    const sessions = createSessionStore(database.db);
    const results = await Promise.allSettled([
      sessions.create(userId, target, [{ role: 'user', content: 'first' }]),
      sessions.create(userId, agent, [{ role: 'user', content: 'second' }], { tag: 'b' }, 'client-1'),
      sessions.create(userId, agent, [{ role: 'user', content: 'third' }], {}, 'client-1'),
      sessions.create(userId, target, [{ role: 'user', content: 'fourth' }]),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'conflict' });
    const made = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    expect(made.map((session) => session.title)).toEqual(['first', 'second', 'fourth']);
    expect(new Set(made.map((session) => session.id)).size).toBe(3);
    expect(made[1]).toMatchObject({ user_id: userId, agent_id: agent.agentId, status: 'running', metadata: { tag: 'b' }, message_count: 0 });
  });

  it('appends made at once to several sessions in each session’s order, with positions after its count', async () => {
    const sessions = createSessionStore(database.db);
    const [one, two] = await Promise.all([sessions.create(userId, target, []), sessions.create(userId, target, [])]);
    await sessions.append(one.id, 'run_before', [{ role: 'user', content: 'earlier' }]);
    const text = (content: string) => ({ role: 'user' as const, content });
    await Promise.all([
      sessions.append(one.id, 'run_a', [text('a1'), text('a2')]),
      sessions.append(two.id, 'run_x', [text('x1')]),
      sessions.append(one.id, 'run_b', [text('b1')]),
      sessions.append(two.id, 'run_y', [text('y1'), text('y2')]),
      sessions.append('ses_gone', 'run_z', [text('nowhere')]),
    ]);
    expect((await sessions.messages(one.id)).map((message) => message.content)).toEqual(['earlier', 'a1', 'a2', 'b1']);
    expect((await sessions.messages(two.id)).map((message) => message.content)).toEqual(['x1', 'y1', 'y2']);
    const rows = await database.db.query<{ session_id: string; position: number; run_id: string }>(
      'SELECT session_id, position, run_id FROM session_messages WHERE session_id = ANY($1::text[]) ORDER BY session_id = $2 DESC, position',
      [[one.id, two.id], one.id],
    );
    expect(rows.map((row) => [row.session_id === one.id ? 'one' : 'two', row.position, row.run_id])).toEqual([
      ['one', 0, 'run_before'],
      ['one', 1, 'run_a'],
      ['one', 2, 'run_a'],
      ['one', 3, 'run_b'],
      ['two', 0, 'run_x'],
      ['two', 1, 'run_y'],
      ['two', 2, 'run_y'],
    ]);
    expect((await sessions.get(userId, one.id)).message_count).toBe(4);
    expect((await sessions.get(userId, two.id)).message_count).toBe(3);
  });
});
