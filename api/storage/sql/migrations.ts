/** The schema: append-only migrations, applied in order under an advisory lock, recorded in `schema_migrations`. */

import type { SqlClient } from './client.ts';

/** Append-only: never edit a shipped migration, add the next one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE users (
     id text PRIMARY KEY,
     email text UNIQUE,
     name text,
     active_workspace_id text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE TABLE workspaces (
     id text PRIMARY KEY,
     name text NOT NULL,
     owner_id text NOT NULL REFERENCES users(id) DEFERRABLE INITIALLY DEFERRED,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE TABLE workspace_members (
     workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     role text NOT NULL CHECK (role IN ('owner', 'member')),
     PRIMARY KEY (workspace_id, user_id)
   );
   CREATE TABLE password_credentials (
     user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
     password_hash text NOT NULL
   );
   CREATE TABLE oidc_identities (
     provider text NOT NULL,
     subject text NOT NULL,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     PRIMARY KEY (provider, subject)
   );
   CREATE TABLE sessions (
     token_hash text PRIMARY KEY,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     created_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL,
     revoked_at timestamptz
   );
   CREATE INDEX sessions_user_idx ON sessions (user_id);
   CREATE TABLE payments (
     id text PRIMARY KEY,
     payer text NOT NULL,
     amount text NOT NULL,
     network text NOT NULL,
     asset text NOT NULL,
     pay_to text NOT NULL,
     resource text NOT NULL,
     transaction text NOT NULL,
     settled_at timestamptz NOT NULL DEFAULT now()
   );`,
  // The data plane: folders, videos, captions, projects, uploads.
  `CREATE TABLE folders (
     id text PRIMARY KEY,
     workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
     name text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE INDEX folders_workspace_idx ON folders (workspace_id);
   CREATE TABLE videos (
     id text PRIMARY KEY,
     workspace_id text REFERENCES workspaces(id) ON DELETE CASCADE,
     owner_id text REFERENCES users(id) ON DELETE SET NULL,
     folder_id text REFERENCES folders(id) ON DELETE SET NULL,
     title text NOT NULL,
     origin text NOT NULL CHECK (origin IN ('recording', 'project', 'trim', 'upload')),
     state text NOT NULL DEFAULT 'uploading' CHECK (state IN ('uploading', 'ready')),
     starred boolean NOT NULL DEFAULT false,
     visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('public', 'private')),
     share_password_hash text,
     share_expires_at timestamptz,
     hosted_video_id text NOT NULL UNIQUE,
     guest_token_hash text UNIQUE,
     duration_sec double precision,
     media_bytes bigint,
     media_type text,
     has_thumbnail boolean NOT NULL DEFAULT false,
     caption_status text NOT NULL DEFAULT 'none' CHECK (caption_status IN ('none', 'processing', 'ready')),
     caption_error text,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
   );
   CREATE INDEX videos_list_created_idx ON videos (workspace_id, created_at DESC, id DESC);
   CREATE INDEX videos_list_updated_idx ON videos (workspace_id, updated_at DESC, id DESC);
   CREATE TABLE captions (
     video_id text PRIMARY KEY REFERENCES videos(id) ON DELETE CASCADE,
     vtt text NOT NULL,
     srt text NOT NULL,
     source text NOT NULL CHECK (source IN ('generated', 'uploaded')),
     updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
   );
   CREATE TABLE projects (
     id text PRIMARY KEY,
     workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
     owner_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     title text NOT NULL,
     clips jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp()
   );
   CREATE INDEX projects_list_idx ON projects (workspace_id, created_at DESC, id DESC);
   CREATE TABLE uploads (
     id text PRIMARY KEY,
     video_id text NOT NULL UNIQUE REFERENCES videos(id) ON DELETE CASCADE,
     max_bytes bigint NOT NULL,
     expires_at timestamptz NOT NULL,
     completed_at timestamptz
   );
   CREATE INDEX uploads_expiry_idx ON uploads (expires_at) WHERE completed_at IS NULL;`,
  // Keyset cursors carry a JavaScript Date, which has milliseconds; a sort key with microseconds
  // made `(created_at, id) < (cursor)` skip the rows in the cursor's millisecond. Keys are now
  // stored at the cursor's precision.
  `ALTER TABLE videos
     ALTER COLUMN created_at SET DEFAULT date_trunc('milliseconds', clock_timestamp()),
     ALTER COLUMN updated_at SET DEFAULT date_trunc('milliseconds', clock_timestamp());
   ALTER TABLE projects ALTER COLUMN created_at SET DEFAULT date_trunc('milliseconds', clock_timestamp());
   UPDATE videos SET created_at = date_trunc('milliseconds', created_at),
                     updated_at = date_trunc('milliseconds', updated_at);
   UPDATE projects SET created_at = date_trunc('milliseconds', created_at);`,
  // The transcript behind the captions, with its word times, for the read-along. Null for
  // captions stored before it was kept.
  'ALTER TABLE captions ADD COLUMN transcript jsonb;',
  // Edit by transcript: a video made by cutting another (origin trim) or by joining a project's
  // clips (origin project) is rendered after it is created. Its render spec stays with it so that a
  // render cut off by a restart runs again; a render that fails leaves the video failed, with why.
  `ALTER TABLE videos DROP CONSTRAINT IF EXISTS videos_state_check;
   ALTER TABLE videos ADD CONSTRAINT videos_state_check
     CHECK (state IN ('uploading', 'ready', 'rendering', 'failed'));
   ALTER TABLE videos ADD COLUMN render_spec jsonb, ADD COLUMN render_error text,
     ADD COLUMN source_video_id text, ADD COLUMN project_id text REFERENCES projects(id) ON DELETE SET NULL;
   CREATE INDEX videos_rendering_idx ON videos (created_at) WHERE state = 'rendering';
   CREATE INDEX videos_project_idx ON videos (project_id, created_at DESC) WHERE project_id IS NOT NULL;`,
  // The watch page's edit draft: a video's struck words and kept pause cuts, one per video, saved as
  // they change so that a reload or another device finds them; `rendered_video_id` names the video
  // rendered from exactly this draft (null: never rendered).
  `CREATE TABLE edit_drafts (
     video_id text PRIMARY KEY REFERENCES videos(id) ON DELETE CASCADE,
     draft jsonb NOT NULL,
     rendered_video_id text REFERENCES videos(id) ON DELETE SET NULL,
     updated_by text REFERENCES users(id) ON DELETE SET NULL,
     updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
   );`,
  // An account's storage quota and render share sum its videos on every upload and render
  // (ownerUsage): without this index that sum reads the whole table.
  'CREATE INDEX videos_owner_idx ON videos (owner_id);',
  // Which way an edit's render went ('smart': copied between keyframes, re-encoded around the cuts;
  // 'full': all re-encoded) and, for 'full', why not smart.
  'ALTER TABLE videos ADD COLUMN render_method text, ADD COLUMN render_note text;',
];

/** Arbitrary constant: serialises concurrent migrators on one database. */
const MIGRATION_LOCK = 740_402_001;

export async function migrate(db: SqlClient): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const rows = await tx.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    const current = rows[0]?.v ?? 0;
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      await tx.query(MIGRATIONS[v - 1]!);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v]);
    }
    return MIGRATIONS.length - current;
  });
}
