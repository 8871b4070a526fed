/** Captions: a video's WebVTT and SRT with the transcript behind them, one set per video, replaced whole. */

import type { Captions, CaptionTranscript, NewCaptions } from '../types.ts';
import type { Queryable, SqlClient } from './client.ts';

export async function putCaptions(db: SqlClient, input: NewCaptions): Promise<Captions> {
  const transcript = input.transcript ?? null;
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ updated_at: Date }>(
      `INSERT INTO captions (video_id, vtt, srt, source, transcript) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (video_id) DO UPDATE SET vtt = EXCLUDED.vtt, srt = EXCLUDED.srt, source = EXCLUDED.source,
         transcript = EXCLUDED.transcript, updated_at = date_trunc('milliseconds', clock_timestamp())
       RETURNING updated_at`,
      [input.videoId, input.vtt, input.srt, input.source, transcript === null ? null : JSON.stringify(transcript)],
    );
    await tx.query(
      `UPDATE videos SET caption_status = 'ready', caption_error = NULL, updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = $1`,
      [input.videoId],
    );
    return { ...input, transcript, updatedAt: new Date(rows[0]!.updated_at) };
  });
}

export async function getCaptions(db: Queryable, videoId: string): Promise<Captions | null> {
  const rows = await db.query<{
    video_id: string;
    vtt: string;
    srt: string;
    source: Captions['source'];
    transcript: CaptionTranscript | string | null;
    updated_at: Date;
  }>('SELECT * FROM captions WHERE video_id = $1', [videoId]);
  const r = rows[0];
  return r
    ? {
        videoId: r.video_id,
        vtt: r.vtt,
        srt: r.srt,
        source: r.source,
        transcript: typeof r.transcript === 'string' ? JSON.parse(r.transcript) : r.transcript,
        updatedAt: new Date(r.updated_at),
      }
    : null;
}
