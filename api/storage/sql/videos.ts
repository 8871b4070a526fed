/** Videos: the library's records (guests' recordings too): lists, patches, guest claims, caption status. */

import { uuidv7 } from '../ids.ts';
import type {
  CaptionStatus,
  NewVideo,
  RenderMethod,
  RenderSpec,
  Video,
  VideoPatch,
  VideoQuery,
  VideoState,
} from '../types.ts';
import type { Queryable } from './client.ts';

interface VideoRow {
  id: string;
  workspace_id: string | null;
  owner_id: string | null;
  folder_id: string | null;
  title: string;
  origin: Video['origin'];
  state: Video['state'];
  starred: boolean;
  visibility: Video['visibility'];
  share_password_hash: string | null;
  share_expires_at: Date | null;
  hosted_video_id: string;
  guest_token_hash: string | null;
  duration_sec: number | null;
  media_bytes: string | number | null;
  media_type: string | null;
  has_thumbnail: boolean;
  caption_status: CaptionStatus;
  caption_error: string | null;
  render_spec: RenderSpec | string | null;
  render_error: string | null;
  render_method: RenderMethod | null;
  render_note: string | null;
  source_video_id: string | null;
  project_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const toVideo = (r: VideoRow): Video => ({
  id: r.id,
  workspaceId: r.workspace_id,
  ownerId: r.owner_id,
  folderId: r.folder_id,
  title: r.title,
  origin: r.origin,
  state: r.state,
  starred: r.starred,
  visibility: r.visibility,
  sharePasswordHash: r.share_password_hash,
  shareExpiresAt: r.share_expires_at === null ? null : new Date(r.share_expires_at),
  hostedVideoId: r.hosted_video_id,
  guestTokenHash: r.guest_token_hash,
  durationSec: r.duration_sec,
  // bigint comes back as a string from node-postgres.
  mediaBytes: r.media_bytes === null ? null : Number(r.media_bytes),
  mediaType: r.media_type,
  hasThumbnail: r.has_thumbnail,
  captionStatus: r.caption_status,
  captionError: r.caption_error,
  renderSpec: typeof r.render_spec === 'string' ? JSON.parse(r.render_spec) : r.render_spec,
  renderError: r.render_error,
  renderMethod: r.render_method,
  renderNote: r.render_note,
  sourceVideoId: r.source_video_id,
  projectId: r.project_id,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

/** VideoPatch key → column; the only columns an update may touch. */
const VIDEO_PATCH_COLUMNS: Readonly<Record<keyof VideoPatch, string>> = {
  title: 'title',
  folderId: 'folder_id',
  starred: 'starred',
  visibility: 'visibility',
  sharePasswordHash: 'share_password_hash',
  shareExpiresAt: 'share_expires_at',
  state: 'state',
  durationSec: 'duration_sec',
  mediaBytes: 'media_bytes',
  mediaType: 'media_type',
  hasThumbnail: 'has_thumbnail',
  captionStatus: 'caption_status',
  captionError: 'caption_error',
  renderSpec: 'render_spec',
  renderError: 'render_error',
  renderMethod: 'render_method',
  renderNote: 'render_note',
};

/** jsonb columns take their value as JSON text. */
const JSON_COLUMNS = new Set(['render_spec']);

const SORT_COLUMNS = { createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export async function createVideo(db: Queryable, input: NewVideo): Promise<Video> {
  const rows = await db.query<VideoRow>(
    `INSERT INTO videos (id, workspace_id, owner_id, folder_id, title, origin, visibility, hosted_video_id,
       guest_token_hash, state, render_spec, source_video_id, project_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13) RETURNING *`,
    [
      uuidv7(),
      input.workspaceId ?? null,
      input.ownerId ?? null,
      input.folderId ?? null,
      input.title,
      input.origin,
      input.visibility ?? 'private',
      input.hostedVideoId,
      input.guestTokenHash ?? null,
      input.state ?? 'uploading',
      input.renderSpec ? JSON.stringify(input.renderSpec) : null,
      input.sourceVideoId ?? null,
      input.projectId ?? null,
    ],
  );
  return toVideo(rows[0]!);
}

export async function getVideo(db: Queryable, id: string): Promise<Video | null> {
  const rows = await db.query<VideoRow>('SELECT * FROM videos WHERE id = $1', [id]);
  return rows[0] ? toVideo(rows[0]) : null;
}

export async function listVideos(db: Queryable, q: VideoQuery): Promise<Video[]> {
  const col = SORT_COLUMNS[q.sortBy];
  const where = ['workspace_id = $1'];
  const params: unknown[] = [q.workspaceId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (q.folderId !== undefined) add('folder_id = ?', q.folderId);
  if (q.origin !== undefined) add('origin = ?', q.origin);
  if (q.starred !== undefined) add('starred = ?', q.starred);
  if (q.after) {
    params.push(q.after.at, q.after.id);
    where.push(`(${col}, id) < ($${params.length - 1}, $${params.length})`);
  }
  params.push(q.limit);
  const rows = await db.query<VideoRow>(
    `SELECT * FROM videos WHERE ${where.join(' AND ')} ORDER BY ${col} DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toVideo);
}

export async function updateVideo(db: Queryable, id: string, patch: VideoPatch): Promise<Video | null> {
  return patchVideo(db, id, patch, null);
}

export async function transitionVideo(
  db: Queryable,
  id: string,
  from: VideoState,
  patch: VideoPatch,
): Promise<Video | null> {
  return patchVideo(db, id, patch, from);
}

async function patchVideo(
  db: Queryable,
  id: string,
  patch: VideoPatch,
  from: VideoState | null,
): Promise<Video | null> {
  const sets: string[] = [];
  const params: unknown[] = [id];
  for (const [key, column] of Object.entries(VIDEO_PATCH_COLUMNS) as Array<[keyof VideoPatch, string]>) {
    const value = patch[key];
    if (value === undefined) continue;
    const json = JSON_COLUMNS.has(column);
    params.push(json && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${params.length}${json ? '::jsonb' : ''}`);
  }
  sets.push("updated_at = date_trunc('milliseconds', clock_timestamp())");
  let where = 'id = $1';
  if (from !== null) {
    params.push(from);
    where += ` AND state = $${params.length}`;
  }
  const rows = await db.query<VideoRow>(`UPDATE videos SET ${sets.join(', ')} WHERE ${where} RETURNING *`, params);
  return rows[0] ? toVideo(rows[0]) : null;
}

/** What one account holds: bytes of its videos' media, and its renders not yet ended. */
export async function ownerUsage(db: Queryable, ownerId: string): Promise<{ mediaBytes: number; rendering: number }> {
  const rows = await db.query<{ bytes: string | number | null; rendering: string | number }>(
    `SELECT COALESCE(SUM(media_bytes), 0) AS bytes, COUNT(*) FILTER (WHERE state = 'rendering') AS rendering
       FROM videos WHERE owner_id = $1`,
    [ownerId],
  );
  return { mediaBytes: Number(rows[0]?.bytes ?? 0), rendering: Number(rows[0]?.rendering ?? 0) };
}

export async function listVideosInState(db: Queryable, state: VideoState, limit: number): Promise<Video[]> {
  const rows = await db.query<VideoRow>('SELECT * FROM videos WHERE state = $1 ORDER BY created_at LIMIT $2', [
    state,
    limit,
  ]);
  return rows.map(toVideo);
}

export async function latestProjectExport(db: Queryable, projectId: string): Promise<Video | null> {
  const rows = await db.query<VideoRow>(
    'SELECT * FROM videos WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [projectId],
  );
  return rows[0] ? toVideo(rows[0]) : null;
}

export async function claimGuestVideo(
  db: Queryable,
  id: string,
  guestTokenHash: string,
  to: { workspaceId: string; ownerId: string },
): Promise<Video | null> {
  const rows = await db.query<VideoRow>(
    `UPDATE videos SET workspace_id = $3, owner_id = $4, guest_token_hash = NULL,
       updated_at = date_trunc('milliseconds', clock_timestamp())
     WHERE id = $1 AND guest_token_hash = $2 AND workspace_id IS NULL RETURNING *`,
    [id, guestTokenHash, to.workspaceId, to.ownerId],
  );
  return rows[0] ? toVideo(rows[0]) : null;
}

export async function deleteVideo(db: Queryable, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM videos WHERE id = $1 RETURNING id', [id]);
  return rows.length === 1;
}

export async function transitionCaptionStatus(
  db: Queryable,
  id: string,
  from: CaptionStatus,
  to: CaptionStatus,
  error: string | null = null,
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE videos SET caption_status = $3, caption_error = $4, updated_at = date_trunc('milliseconds', clock_timestamp())
     WHERE id = $1 AND caption_status = $2 RETURNING id`,
    [id, from, to, error],
  );
  return rows.length === 1;
}

export async function listGuestVideosBefore(db: Queryable, before: Date, limit: number): Promise<Video[]> {
  const rows = await db.query<VideoRow>(
    'SELECT * FROM videos WHERE guest_token_hash IS NOT NULL AND created_at < $1 ORDER BY created_at LIMIT $2',
    [before, limit],
  );
  return rows.map(toVideo);
}
