/** Workspaces and their members: a new user's first workspace, the workspaces a user is in, the active one. */

import type { Workspace } from '../types.ts';
import type { Queryable } from './client.ts';

/** The user's first workspace, which they own; run in the transaction that creates the user. */
export async function insertPersonalWorkspace(tx: Queryable, workspaceId: string, userId: string): Promise<void> {
  await tx.query('INSERT INTO workspaces (id, name, owner_id) VALUES ($1, $2, $3)', [workspaceId, 'Personal', userId]);
  await tx.query("INSERT INTO workspace_members (workspace_id, user_id, role) VALUES ($1, $2, 'owner')", [
    workspaceId,
    userId,
  ]);
}

export async function listWorkspaces(db: Queryable, userId: string): Promise<Workspace[]> {
  const rows = await db.query<{ id: string; name: string; role: 'owner' | 'member' }>(
    `SELECT w.id, w.name, m.role FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.user_id = $1 ORDER BY w.created_at, w.id`,
    [userId],
  );
  return rows.map((r) => ({ id: r.id, name: r.name, role: r.role }));
}

export async function setActiveWorkspace(db: Queryable, userId: string, workspaceId: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE users SET active_workspace_id = $2 WHERE id = $1
     AND EXISTS (SELECT 1 FROM workspace_members WHERE user_id = $1 AND workspace_id = $2) RETURNING id`,
    [userId, workspaceId],
  );
  return rows.length === 1;
}

export async function isMember(db: Queryable, userId: string, workspaceId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM workspace_members WHERE user_id = $1 AND workspace_id = $2', [
    userId,
    workspaceId,
  ]);
  return rows.length === 1;
}
