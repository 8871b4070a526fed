/**
 * The SQL implementation of Storage, written once for PostgreSQL semantics and run over a
 * tiny driver interface (`SqlClient`, sql/client.ts) that PGlite and node-postgres both satisfy.
 * This is its front door: `open` applies the migrations (sql/migrations.ts), and each method hands
 * its call to the file of its resource under sql/ (users, workspaces, sessions, payments, folders,
 * videos, captions, projects, edit drafts, uploads), where the queries live.
 */

import * as captions from './sql/captions.ts';
import type { SqlClient } from './sql/client.ts';
import * as drafts from './sql/edit-drafts.ts';
import * as folders from './sql/folders.ts';
import { migrate } from './sql/migrations.ts';
import * as payments from './sql/payments.ts';
import * as projects from './sql/projects.ts';
import * as sessions from './sql/sessions.ts';
import * as uploads from './sql/uploads.ts';
import * as users from './sql/users.ts';
import * as videos from './sql/videos.ts';
import * as workspaces from './sql/workspaces.ts';
import type {
  CaptionStatus,
  Captions,
  EditDraftRecord,
  Folder,
  NewCaptions,
  NewVideo,
  OidcSignIn,
  PaymentRecord,
  Project,
  ProjectClip,
  SessionRecord,
  Storage,
  UploadRecord,
  User,
  Video,
  VideoPatch,
  VideoQuery,
  VideoState,
  Workspace,
} from './types.ts';

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

  createVideo(input: NewVideo): Promise<Video> {
    return videos.createVideo(this.#db, input);
  }

  getVideo(id: string): Promise<Video | null> {
    return videos.getVideo(this.#db, id);
  }

  listVideos(q: VideoQuery): Promise<Video[]> {
    return videos.listVideos(this.#db, q);
  }

  updateVideo(id: string, patch: VideoPatch): Promise<Video | null> {
    return videos.updateVideo(this.#db, id, patch);
  }

  claimGuestVideo(
    id: string,
    guestTokenHash: string,
    to: { workspaceId: string; ownerId: string },
  ): Promise<Video | null> {
    return videos.claimGuestVideo(this.#db, id, guestTokenHash, to);
  }

  transitionVideo(id: string, from: VideoState, patch: VideoPatch): Promise<Video | null> {
    return videos.transitionVideo(this.#db, id, from, patch);
  }

  listVideosInState(state: VideoState, limit: number): Promise<Video[]> {
    return videos.listVideosInState(this.#db, state, limit);
  }

  ownerUsage(ownerId: string): Promise<{ mediaBytes: number; rendering: number }> {
    return videos.ownerUsage(this.#db, ownerId);
  }

  deleteVideo(id: string): Promise<boolean> {
    return videos.deleteVideo(this.#db, id);
  }

  transitionCaptionStatus(id: string, from: CaptionStatus, to: CaptionStatus, error?: string | null): Promise<boolean> {
    return videos.transitionCaptionStatus(this.#db, id, from, to, error);
  }

  putCaptions(input: NewCaptions): Promise<Captions> {
    return captions.putCaptions(this.#db, input);
  }

  getCaptions(videoId: string): Promise<Captions | null> {
    return captions.getCaptions(this.#db, videoId);
  }

  createProject(input: Omit<Project, 'id' | 'createdAt'>): Promise<Project> {
    return projects.createProject(this.#db, input);
  }

  listProjects(q: { workspaceId: string; limit: number; after?: { at: Date; id: string } }): Promise<Project[]> {
    return projects.listProjects(this.#db, q);
  }

  getProject(id: string): Promise<Project | null> {
    return projects.getProject(this.#db, id);
  }

  addProjectClip(id: string, clip: ProjectClip, maxClips: number): Promise<Project | null> {
    return projects.addProjectClip(this.#db, id, clip, maxClips);
  }

  setProjectClips(id: string, clips: ProjectClip[]): Promise<Project | null> {
    return projects.setProjectClips(this.#db, id, clips);
  }

  latestProjectExport(projectId: string): Promise<Video | null> {
    return videos.latestProjectExport(this.#db, projectId);
  }

  getEditDraft(videoId: string): Promise<EditDraftRecord | null> {
    return drafts.getEditDraft(this.#db, videoId);
  }

  putEditDraft(input: Omit<EditDraftRecord, 'updatedAt'>): Promise<EditDraftRecord | null> {
    return drafts.putEditDraft(this.#db, input);
  }

  deleteEditDraft(videoId: string): Promise<boolean> {
    return drafts.deleteEditDraft(this.#db, videoId);
  }

  createUpload(input: Omit<UploadRecord, 'completedAt'>): Promise<UploadRecord> {
    return uploads.createUpload(this.#db, input);
  }

  getUpload(id: string): Promise<UploadRecord | null> {
    return uploads.getUpload(this.#db, id);
  }

  completeUpload(id: string, at?: Date): Promise<boolean> {
    return uploads.completeUpload(this.#db, id, at);
  }

  listExpiredUploads(now: Date, limit: number): Promise<UploadRecord[]> {
    return uploads.listExpiredUploads(this.#db, now, limit);
  }

  listGuestVideosBefore(before: Date, limit: number): Promise<Video[]> {
    return videos.listGuestVideosBefore(this.#db, before, limit);
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}
