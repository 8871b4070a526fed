/** Projects: a workspace's titled lists of clips (source URL, duration, title), listed newest first. */

import { uuidv7 } from '../ids.ts';
import type { Project, ProjectClip } from '../types.ts';
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

export async function getProject(db: Queryable, id: string): Promise<Project | null> {
  const rows = await db.query<ProjectRow>('SELECT * FROM projects WHERE id = $1', [id]);
  return rows[0] ? toProject(rows[0]) : null;
}

/** One statement: two clips added at once both land, and the cap holds. */
export async function addProjectClip(
  db: Queryable,
  id: string,
  clip: ProjectClip,
  maxClips: number,
): Promise<Project | null> {
  const rows = await db.query<ProjectRow>(
    `UPDATE projects SET clips = clips || jsonb_build_array($2::jsonb)
     WHERE id = $1 AND jsonb_array_length(clips) < $3 RETURNING *`,
    [id, JSON.stringify(clip), maxClips],
  );
  return rows[0] ? toProject(rows[0]) : null;
}

export async function setProjectClips(db: Queryable, id: string, clips: ProjectClip[]): Promise<Project | null> {
  const rows = await db.query<ProjectRow>('UPDATE projects SET clips = $2::jsonb WHERE id = $1 RETURNING *', [
    id,
    JSON.stringify(clips),
  ]);
  return rows[0] ? toProject(rows[0]) : null;
}
