import type { components } from '../../generated/openapi.gen.ts';
import { one, type Queryable } from '../store/db.ts';
import { newId } from '../store/ids.ts';

export type Account = components['schemas']['Account'];

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  plan_id: string;
  subscription_status: Account['subscription_status'];
  created_at: Date;
}

export function toAccount(row: UserRow): Account {
  return {
    id: row.id,
    object: 'account',
    email: row.email,
    name: row.name,
    plan_id: row.plan_id,
    subscription_status: row.subscription_status,
    created_at: row.created_at.toISOString(),
  };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const COLUMNS = 'id, email, name, plan_id, subscription_status, created_at';

/** The user with this email, created when there is none. */
export async function findOrCreateUser(db: Queryable, email: string): Promise<{ user: UserRow; created: boolean }> {
  const address = normalizeEmail(email);
  const inserted = await one<UserRow>(
    db,
    `INSERT INTO users (id, email) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING RETURNING ${COLUMNS}`,
    [newId('usr'), address],
  );
  if (inserted) return { user: inserted, created: true };
  const existing = await one<UserRow>(db, `SELECT ${COLUMNS} FROM users WHERE email = $1`, [address]);
  if (!existing) throw new Error(`user ${address} vanished while signing in`);
  return { user: existing, created: false };
}

export async function getUser(db: Queryable, id: string): Promise<UserRow | undefined> {
  return one<UserRow>(db, `SELECT ${COLUMNS} FROM users WHERE id = $1`, [id]);
}

export async function updateUserName(db: Queryable, id: string, name: string | null): Promise<UserRow | undefined> {
  return one<UserRow>(db, `UPDATE users SET name = $2, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [id, name]);
}
