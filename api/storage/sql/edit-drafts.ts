/** Edit drafts: one per video, replaced whole, gone with the video. */

import type { EditDraft, EditDraftRecord } from '../types.ts';
import type { Queryable } from './client.ts';

interface DraftRow {
  video_id: string;
  draft: EditDraft | string;
  rendered_video_id: string | null;
  updated_by: string | null;
  updated_at: Date;
}

const toRecord = (r: DraftRow): EditDraftRecord => ({
  videoId: r.video_id,
  draft: typeof r.draft === 'string' ? JSON.parse(r.draft) : r.draft,
  renderedVideoId: r.rendered_video_id,
  updatedBy: r.updated_by,
  updatedAt: new Date(r.updated_at),
});

export async function getEditDraft(db: Queryable, videoId: string): Promise<EditDraftRecord | null> {
  const rows = await db.query<DraftRow>('SELECT * FROM edit_drafts WHERE video_id = $1', [videoId]);
  return rows[0] ? toRecord(rows[0]) : null;
}

/** Null when the video (or the rendered video named) is gone: the foreign keys refuse the row. */
export async function putEditDraft(
  db: Queryable,
  input: Omit<EditDraftRecord, 'updatedAt'>,
): Promise<EditDraftRecord | null> {
  const rows = await db.query<DraftRow>(
    `INSERT INTO edit_drafts (video_id, draft, rendered_video_id, updated_by)
     SELECT $1, $2::jsonb, (SELECT id FROM videos WHERE id = $3), $4 WHERE EXISTS (SELECT 1 FROM videos WHERE id = $1)
     ON CONFLICT (video_id) DO UPDATE SET draft = EXCLUDED.draft, rendered_video_id = EXCLUDED.rendered_video_id,
       updated_by = EXCLUDED.updated_by, updated_at = date_trunc('milliseconds', clock_timestamp())
     RETURNING *`,
    [input.videoId, JSON.stringify(input.draft), input.renderedVideoId, input.updatedBy],
  );
  return rows[0] ? toRecord(rows[0]) : null;
}

export async function deleteEditDraft(db: Queryable, videoId: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM edit_drafts WHERE video_id = $1 RETURNING video_id', [videoId]);
  return rows.length > 0;
}
