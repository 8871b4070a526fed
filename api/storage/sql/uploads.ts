/** Upload records: one per TUS upload, its byte cap and expiry, completed once; expired ones listed for cleanup. */

import type { UploadRecord } from '../types.ts';
import type { Queryable } from './client.ts';

interface UploadRow {
  id: string;
  video_id: string;
  max_bytes: string | number;
  expires_at: Date;
  completed_at: Date | null;
}

const toUpload = (r: UploadRow): UploadRecord => ({
  id: r.id,
  videoId: r.video_id,
  maxBytes: Number(r.max_bytes),
  expiresAt: new Date(r.expires_at),
  completedAt: r.completed_at === null ? null : new Date(r.completed_at),
});

export async function createUpload(db: Queryable, input: Omit<UploadRecord, 'completedAt'>): Promise<UploadRecord> {
  const rows = await db.query<UploadRow>(
    'INSERT INTO uploads (id, video_id, max_bytes, expires_at) VALUES ($1, $2, $3, $4) RETURNING *',
    [input.id, input.videoId, input.maxBytes, input.expiresAt],
  );
  return toUpload(rows[0]!);
}

export async function getUpload(db: Queryable, id: string): Promise<UploadRecord | null> {
  const rows = await db.query<UploadRow>('SELECT * FROM uploads WHERE id = $1', [id]);
  return rows[0] ? toUpload(rows[0]) : null;
}

export async function completeUpload(db: Queryable, id: string, at: Date = new Date()): Promise<boolean> {
  const rows = await db.query(
    'UPDATE uploads SET completed_at = $2 WHERE id = $1 AND completed_at IS NULL RETURNING id',
    [id, at],
  );
  return rows.length === 1;
}

export async function listExpiredUploads(db: Queryable, now: Date, limit: number): Promise<UploadRecord[]> {
  const rows = await db.query<UploadRow>(
    'SELECT * FROM uploads WHERE completed_at IS NULL AND expires_at < $1 ORDER BY expires_at LIMIT $2',
    [now, limit],
  );
  return rows.map(toUpload);
}
