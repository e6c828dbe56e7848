// What the tables of a user's named resources (agents, teams) answer alike: each row has an `id`, the
// owner's `user_id` and a `created_at`, and another user's row is as absent as a missing one.
import { notFound } from '../errors.ts';
import { one, type Queryable } from './db.ts';

/** `what` names the resource in a 404, as in "No agent agt_…". */
export function ownedRows(db: Queryable, table: 'agents' | 'teams', what: string) {
  return {
    async remove(userId: string, id: string): Promise<void> {
      const rows = await db.query(`DELETE FROM ${table} WHERE id = $1 AND user_id = $2 RETURNING id`, [id, userId]);
      if (rows.length === 0) throw notFound(what, id);
    },

    /** Every row's id and creation time, for listing them as models. */
    async all(userId: string): Promise<{ id: string; created_at: string }[]> {
      const rows = await db.query<{ id: string; created_at: Date }>(`SELECT id, created_at FROM ${table} WHERE user_id = $1 ORDER BY id DESC`, [userId]);
      return rows.map((row) => ({ id: row.id, created_at: row.created_at.toISOString() }));
    },

    async count(userId: string, within: Queryable = db): Promise<number> {
      return (await one<{ n: number }>(within, `SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1`, [userId]))?.n ?? 0;
    },
  };
}
