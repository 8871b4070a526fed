/** Projects: a workspace's titled lists of clips (source URL, duration, title), listed newest first. */

import { uuidv7 } from '../ids.ts';
import type { Project } from '../types.ts';
import type { Queryable } from './client.ts';

interface ProjectRow {
  id: string;
  workspace_id: string;
  owner_id: string;
  title: string;
  clips: Project['clips'] | string;
  created_at: Date;
}

const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  workspaceId: r.workspace_id,
  ownerId: r.owner_id,
  title: r.title,
  clips: typeof r.clips === 'string' ? JSON.parse(r.clips) : r.clips,
  createdAt: new Date(r.created_at),
});

export async function createProject(db: Queryable, input: Omit<Project, 'id' | 'createdAt'>): Promise<Project> {
  const rows = await db.query<ProjectRow>(
    `INSERT INTO projects (id, workspace_id, owner_id, title, clips) VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
    [uuidv7(), input.workspaceId, input.ownerId, input.title, JSON.stringify(input.clips)],
  );
  return toProject(rows[0]!);
}

export async function listProjects(
  db: Queryable,
  q: { workspaceId: string; limit: number; after?: { at: Date; id: string } },
): Promise<Project[]> {
  const params: unknown[] = [q.workspaceId, q.limit];
  let after = '';
  if (q.after) {
    params.push(q.after.at, q.after.id);
    after = 'AND (created_at, id) < ($3, $4)';
  }
  const rows = await db.query<ProjectRow>(
    `SELECT * FROM projects WHERE workspace_id = $1 ${after} ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return rows.map(toProject);
}
