/**
 * The SQL implementation of Storage, written once for PostgreSQL semantics and run over a
 * tiny driver interface (`SqlClient`, sql/client.ts) that PGlite and node-postgres both satisfy.
 * `open` applies the migrations (sql/migrations.ts) first.
 */

import { uuidv7 } from './ids.ts';
import type { SqlClient } from './sql/client.ts';
import * as folders from './sql/folders.ts';
import { migrate } from './sql/migrations.ts';
import * as payments from './sql/payments.ts';
import * as sessions from './sql/sessions.ts';
import * as users from './sql/users.ts';
import * as workspaces from './sql/workspaces.ts';
import type {
  CaptionStatus,
  Captions,
  CaptionTranscript,
  Folder,
  NewCaptions,
  NewVideo,
  OidcSignIn,
  PaymentRecord,
  Project,
  SessionRecord,
  Storage,
  UploadRecord,
  User,
  Video,
  VideoPatch,
  VideoQuery,
  Workspace,
} from './types.ts';

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
};

const SORT_COLUMNS = { createdAt: 'created_at', updatedAt: 'updated_at' } as const;

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

export class SqlStorage implements Storage {
  readonly #db: SqlClient;

  constructor(db: SqlClient) {
    this.#db = db;
  }

  /** Runs the migrations, then returns the storage. */
  static async open(db: SqlClient): Promise<SqlStorage> {
    await migrate(db);
    return new SqlStorage(db);
  }

  createPasswordUser(input: { email: string; passwordHash: string; name?: string }): Promise<User | null> {
    return users.createPasswordUser(this.#db, input);
  }

  findPasswordCredential(email: string): Promise<{ userId: string; passwordHash: string } | null> {
    return users.findPasswordCredential(this.#db, email);
  }

  upsertOidcUser(input: OidcSignIn): Promise<User> {
    return users.upsertOidcUser(this.#db, input);
  }

  getUser(id: string): Promise<User | null> {
    return users.getUser(this.#db, id);
  }

  listWorkspaces(userId: string): Promise<Workspace[]> {
    return workspaces.listWorkspaces(this.#db, userId);
  }

  setActiveWorkspace(userId: string, workspaceId: string): Promise<boolean> {
    return workspaces.setActiveWorkspace(this.#db, userId, workspaceId);
  }

  createSession(input: { tokenHash: string; userId: string; expiresAt: Date }): Promise<void> {
    return sessions.createSession(this.#db, input);
  }

  findActiveSession(tokenHash: string, now?: Date): Promise<SessionRecord | null> {
    return sessions.findActiveSession(this.#db, tokenHash, now);
  }

  revokeSession(tokenHash: string): Promise<void> {
    return sessions.revokeSession(this.#db, tokenHash);
  }

  purgeSessions(now?: Date): Promise<number> {
    return sessions.purgeSessions(this.#db, now);
  }

  recordPayment(p: PaymentRecord): Promise<boolean> {
    return payments.recordPayment(this.#db, p);
  }

  getPayment(id: string): Promise<(PaymentRecord & { settledAt: Date }) | null> {
    return payments.getPayment(this.#db, id);
  }

  isMember(userId: string, workspaceId: string): Promise<boolean> {
    return workspaces.isMember(this.#db, userId, workspaceId);
  }

  createFolder(input: { workspaceId: string; name: string }): Promise<Folder> {
    return folders.createFolder(this.#db, input);
  }

  getFolder(id: string): Promise<Folder | null> {
    return folders.getFolder(this.#db, id);
  }

  listFolders(workspaceId: string, limit: number): Promise<Folder[]> {
    return folders.listFolders(this.#db, workspaceId, limit);
  }

  async createVideo(input: NewVideo): Promise<Video> {
    const rows = await this.#db.query<VideoRow>(
      `INSERT INTO videos (id, workspace_id, owner_id, folder_id, title, origin, visibility, hosted_video_id, guest_token_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
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
      ],
    );
    return toVideo(rows[0]!);
  }

  async getVideo(id: string): Promise<Video | null> {
    const rows = await this.#db.query<VideoRow>('SELECT * FROM videos WHERE id = $1', [id]);
    return rows[0] ? toVideo(rows[0]) : null;
  }

  async listVideos(q: VideoQuery): Promise<Video[]> {
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
    const rows = await this.#db.query<VideoRow>(
      `SELECT * FROM videos WHERE ${where.join(' AND ')} ORDER BY ${col} DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toVideo);
  }

  async updateVideo(id: string, patch: VideoPatch): Promise<Video | null> {
    const sets: string[] = [];
    const params: unknown[] = [id];
    for (const [key, column] of Object.entries(VIDEO_PATCH_COLUMNS) as Array<[keyof VideoPatch, string]>) {
      if (patch[key] === undefined) continue;
      params.push(patch[key]);
      sets.push(`${column} = $${params.length}`);
    }
    sets.push("updated_at = date_trunc('milliseconds', clock_timestamp())");
    const rows = await this.#db.query<VideoRow>(
      `UPDATE videos SET ${sets.join(', ')} WHERE id = $1 RETURNING *`,
      params,
    );
    return rows[0] ? toVideo(rows[0]) : null;
  }

  async claimGuestVideo(
    id: string,
    guestTokenHash: string,
    to: { workspaceId: string; ownerId: string },
  ): Promise<Video | null> {
    const rows = await this.#db.query<VideoRow>(
      `UPDATE videos SET workspace_id = $3, owner_id = $4, guest_token_hash = NULL,
         updated_at = date_trunc('milliseconds', clock_timestamp())
       WHERE id = $1 AND guest_token_hash = $2 AND workspace_id IS NULL RETURNING *`,
      [id, guestTokenHash, to.workspaceId, to.ownerId],
    );
    return rows[0] ? toVideo(rows[0]) : null;
  }

  async deleteVideo(id: string): Promise<boolean> {
    const rows = await this.#db.query('DELETE FROM videos WHERE id = $1 RETURNING id', [id]);
    return rows.length === 1;
  }

  async transitionCaptionStatus(
    id: string,
    from: CaptionStatus,
    to: CaptionStatus,
    error: string | null = null,
  ): Promise<boolean> {
    const rows = await this.#db.query(
      `UPDATE videos SET caption_status = $3, caption_error = $4, updated_at = date_trunc('milliseconds', clock_timestamp())
       WHERE id = $1 AND caption_status = $2 RETURNING id`,
      [id, from, to, error],
    );
    return rows.length === 1;
  }

  async putCaptions(input: NewCaptions): Promise<Captions> {
    const transcript = input.transcript ?? null;
    return this.#db.transaction(async (tx) => {
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

  async getCaptions(videoId: string): Promise<Captions | null> {
    const rows = await this.#db.query<{
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

  async createProject(input: Omit<Project, 'id' | 'createdAt'>): Promise<Project> {
    const rows = await this.#db.query<ProjectRow>(
      `INSERT INTO projects (id, workspace_id, owner_id, title, clips) VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING *`,
      [uuidv7(), input.workspaceId, input.ownerId, input.title, JSON.stringify(input.clips)],
    );
    return toProject(rows[0]!);
  }

  async listProjects(q: { workspaceId: string; limit: number; after?: { at: Date; id: string } }): Promise<Project[]> {
    const params: unknown[] = [q.workspaceId, q.limit];
    let after = '';
    if (q.after) {
      params.push(q.after.at, q.after.id);
      after = 'AND (created_at, id) < ($3, $4)';
    }
    const rows = await this.#db.query<ProjectRow>(
      `SELECT * FROM projects WHERE workspace_id = $1 ${after} ORDER BY created_at DESC, id DESC LIMIT $2`,
      params,
    );
    return rows.map(toProject);
  }

  async createUpload(input: Omit<UploadRecord, 'completedAt'>): Promise<UploadRecord> {
    const rows = await this.#db.query<UploadRow>(
      'INSERT INTO uploads (id, video_id, max_bytes, expires_at) VALUES ($1, $2, $3, $4) RETURNING *',
      [input.id, input.videoId, input.maxBytes, input.expiresAt],
    );
    return toUpload(rows[0]!);
  }

  async getUpload(id: string): Promise<UploadRecord | null> {
    const rows = await this.#db.query<UploadRow>('SELECT * FROM uploads WHERE id = $1', [id]);
    return rows[0] ? toUpload(rows[0]) : null;
  }

  async completeUpload(id: string, at: Date = new Date()): Promise<boolean> {
    const rows = await this.#db.query(
      'UPDATE uploads SET completed_at = $2 WHERE id = $1 AND completed_at IS NULL RETURNING id',
      [id, at],
    );
    return rows.length === 1;
  }

  async listExpiredUploads(now: Date, limit: number): Promise<UploadRecord[]> {
    const rows = await this.#db.query<UploadRow>(
      'SELECT * FROM uploads WHERE completed_at IS NULL AND expires_at < $1 ORDER BY expires_at LIMIT $2',
      [now, limit],
    );
    return rows.map(toUpload);
  }

  async listGuestVideosBefore(before: Date, limit: number): Promise<Video[]> {
    const rows = await this.#db.query<VideoRow>(
      'SELECT * FROM videos WHERE guest_token_hash IS NOT NULL AND created_at < $1 ORDER BY created_at LIMIT $2',
      [before, limit],
    );
    return rows.map(toVideo);
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}
