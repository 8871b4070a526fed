/** Folders: named groups of a workspace's videos. */

import { uuidv7 } from '../ids.ts';
import type { Folder } from '../types.ts';
import type { Queryable } from './client.ts';

interface FolderRow {
  id: string;
  workspace_id: string;
  name: string;
  created_at: Date;
}

const toFolder = (r: FolderRow): Folder => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  createdAt: new Date(r.created_at),
});

export async function createFolder(db: Queryable, input: { workspaceId: string; name: string }): Promise<Folder> {
  const rows = await db.query<FolderRow>(
    'INSERT INTO folders (id, workspace_id, name) VALUES ($1, $2, $3) RETURNING *',
    [uuidv7(), input.workspaceId, input.name],
  );
  return toFolder(rows[0]!);
}

export async function getFolder(db: Queryable, id: string): Promise<Folder | null> {
  const rows = await db.query<FolderRow>('SELECT * FROM folders WHERE id = $1', [id]);
  return rows[0] ? toFolder(rows[0]) : null;
}

export async function listFolders(db: Queryable, workspaceId: string, limit: number): Promise<Folder[]> {
  const rows = await db.query<FolderRow>(
    'SELECT * FROM folders WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2',
    [workspaceId, limit],
  );
  return rows.map(toFolder);
}
