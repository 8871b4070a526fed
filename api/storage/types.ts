/**
 * The storage contract: accounts, sessions, workspaces, the payment ledger and the data
 * plane (folders, videos, captions, projects, uploads). One SQL
 * implementation (sql.ts) runs over two drivers, embedded PGlite and a real PostgreSQL
 * server; storage.test.ts is the conformance suite both must pass.
 */

export interface User {
  id: string;
  email: string | null;
  name: string | null;
  activeWorkspaceId: string;
  createdAt: Date;
}

export interface Workspace {
  id: string;
  name: string;
  role: 'owner' | 'member';
}

export interface OidcSignIn {
  provider: string;
  subject: string;
  email?: string;
  /** The provider's `email_verified`: only a verified email is stored or links accounts. */
  emailVerified?: boolean;
  name?: string;
}

export interface SessionRecord {
  userId: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface PaymentRecord {
  /** `${network}:${payer}:${nonce}` — an EIP-3009 authorization is unique per payer and nonce. */
  id: string;
  payer: string;
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  resource: string;
  transaction: string;
}

export type VideoOrigin = 'recording' | 'project' | 'trim' | 'upload';
export const VIDEO_ORIGINS: readonly VideoOrigin[] = ['recording', 'project', 'trim', 'upload'];
export type Visibility = 'public' | 'private';
/**
 * `uploading` until the bytes are complete and probed; only `ready` videos have media. A video
 * made by an edit (origin trim or project) is `rendering` until its render ends `ready` or `failed`.
 */
export type VideoState = 'uploading' | 'ready' | 'rendering' | 'failed';
export const VIDEO_STATES: readonly VideoState[] = ['uploading', 'ready', 'rendering', 'failed'];

/** Seconds, half-open [start, end). */
export interface TimeSpan {
  start: number;
  end: number;
}

/**
 * What an edit renders: stored videos' kept ranges, in output order. Kept with the video while it
 * renders, so that a render cut off by a restart runs again (`attempts` counts the starts).
 */
export interface RenderSpec {
  /** `pauses`: the pause cuts among the removed ranges (captions measure a word without them). */
  parts: Array<{ videoId: string; keep: TimeSpan[]; pauses?: TimeSpan[] }>;
  attempts: number;
}

/** How an edit was rendered: 'smart' (untouched stretches copied between keyframes) or 'full' (all re-encoded). */
export type RenderMethod = 'smart' | 'full';
export const RENDER_METHODS: readonly RenderMethod[] = ['smart', 'full'];

export type CaptionStatus = 'none' | 'processing' | 'ready';

export interface Folder {
  id: string;
  workspaceId: string;
  name: string;
  createdAt: Date;
}

export interface Video {
  id: string;
  /** Null for a guest's recording (no account, no workspace). */
  workspaceId: string | null;
  ownerId: string | null;
  folderId: string | null;
  title: string;
  origin: VideoOrigin;
  state: VideoState;
  starred: boolean;
  visibility: Visibility;
  /** Argon2id PHC string of the share password; never leaves the service. */
  sharePasswordHash: string | null;
  shareExpiresAt: Date | null;
  /** The TUS upload id of the media on our own media host. */
  hostedVideoId: string;
  /** SHA-256 of the guest token for a guest's recording. */
  guestTokenHash: string | null;
  durationSec: number | null;
  mediaBytes: number | null;
  mediaType: string | null;
  hasThumbnail: boolean;
  captionStatus: CaptionStatus;
  /** Why the last caption generation failed (`CODE: message`), shown by the status. */
  captionError: string | null;
  /** An edit's render, while it is pending (null otherwise). */
  renderSpec: RenderSpec | null;
  /** Why the render failed (`CODE: message`), for state `failed`. */
  renderError: string | null;
  /** How a trim's or export's render went: 'smart' (copied between keyframes) or 'full' (re-encoded); null before. */
  renderMethod: RenderMethod | null;
  /** Why the render was not smart (method 'full'); null otherwise. */
  renderNote: string | null;
  /** The video a trim was cut from. */
  sourceVideoId: string | null;
  /** The project an export rendered. */
  projectId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewVideo = Pick<Video, 'title' | 'origin' | 'hostedVideoId'> &
  Partial<
    Pick<
      Video,
      | 'workspaceId'
      | 'ownerId'
      | 'folderId'
      | 'visibility'
      | 'guestTokenHash'
      | 'state'
      | 'renderSpec'
      | 'sourceVideoId'
      | 'projectId'
    >
  >;

export type VideoPatch = Partial<
  Pick<
    Video,
    | 'title'
    | 'folderId'
    | 'starred'
    | 'visibility'
    | 'sharePasswordHash'
    | 'shareExpiresAt'
    | 'state'
    | 'durationSec'
    | 'mediaBytes'
    | 'mediaType'
    | 'hasThumbnail'
    | 'captionStatus'
    | 'captionError'
    | 'renderSpec'
    | 'renderError'
    | 'renderMethod'
    | 'renderNote'
  >
>;

export type VideoSortKey = 'createdAt' | 'updatedAt';

export interface VideoQuery {
  workspaceId: string;
  folderId?: string;
  origin?: VideoOrigin;
  starred?: boolean;
  sortBy: VideoSortKey;
  limit: number;
  /** Keyset position: the sort value and id of the last row of the previous page. */
  after?: { at: Date; id: string };
}

/** A timed word of the transcript: seconds from the start of the media, the word as spoken. */
export interface TranscriptWord {
  start: number;
  end: number;
  text: string;
}

/**
 * The transcript behind stored captions. Generated captions carry the engine's words; captions an
 * owner sends carry their cues as segments with no words.
 */
export interface CaptionTranscript {
  language: string;
  duration: number;
  segments: Array<{ start: number; end: number; text: string; words: TranscriptWord[] }>;
}

export interface Captions {
  videoId: string;
  vtt: string;
  srt: string;
  source: 'generated' | 'uploaded';
  /** Null for captions stored before transcripts were kept. */
  transcript: CaptionTranscript | null;
  updatedAt: Date;
}

export type NewCaptions = Omit<Captions, 'updatedAt' | 'transcript'> & { transcript?: CaptionTranscript | null };

export interface ProjectClip {
  sourceUrl: string;
  durationSec: number;
  title: string;
  /** The stretch of the source the clip keeps, in seconds; absent: from the start / to the end. */
  start?: number;
  end?: number;
}

export interface Project {
  id: string;
  workspaceId: string;
  ownerId: string;
  title: string;
  clips: ProjectClip[];
  createdAt: Date;
}

/** A word of a transcript: `segments[segment].words[word]` of GET /api/videos/{id}/transcript. */
export interface WordRef {
  segment: number;
  word: number;
}

/** The watch page's unsaved edit of a video: what it strikes, by word, and the pause cuts it keeps. */
export interface EditDraft {
  words: WordRef[];
  /** Seconds of the source to cut inside pauses; `from`/`to` are the pause's length before and after. */
  pauses: Array<{ start: number; end: number; from?: number; to?: number }>;
}

export interface EditDraftRecord {
  videoId: string;
  draft: EditDraft;
  /** The video rendered from exactly this draft; null when it never was. */
  renderedVideoId: string | null;
  updatedBy: string | null;
  updatedAt: Date;
}

export interface UploadRecord {
  /** The TUS upload id (= the video's hostedVideoId). */
  id: string;
  videoId: string;
  maxBytes: number;
  expiresAt: Date;
  completedAt: Date | null;
}

export interface Storage {
  /** Creates the user with a password credential, a first workspace and makes it active; null when the email is taken. */
  createPasswordUser(input: { email: string; passwordHash: string; name?: string }): Promise<User | null>;
  findPasswordCredential(email: string): Promise<{ userId: string; passwordHash: string } | null>;
  /**
   * The user linked to this identity; else, when the provider verified `email`, the account with that
   * email, now linked to it; else a new user (with workspace), carrying the email when it is verified.
   * An unverified email is never stored nor matched: it proves nothing.
   */
  upsertOidcUser(input: OidcSignIn): Promise<User>;
  getUser(id: string): Promise<User | null>;
  listWorkspaces(userId: string): Promise<Workspace[]>;
  /** False when the user is not a member of the workspace. */
  setActiveWorkspace(userId: string, workspaceId: string): Promise<boolean>;

  createSession(input: { tokenHash: string; userId: string; expiresAt: Date }): Promise<void>;
  /** The session when it exists, is not revoked and has not expired at `now`. */
  findActiveSession(tokenHash: string, now?: Date): Promise<SessionRecord | null>;
  revokeSession(tokenHash: string): Promise<void>;
  /** Deletes sessions that expired or were revoked before `now`; resolves with how many. */
  purgeSessions(now?: Date): Promise<number>;

  /** Records a settled payment; false when that payment id is already recorded. */
  recordPayment(p: PaymentRecord): Promise<boolean>;
  getPayment(id: string): Promise<(PaymentRecord & { settledAt: Date }) | null>;

  isMember(userId: string, workspaceId: string): Promise<boolean>;
  createFolder(input: { workspaceId: string; name: string }): Promise<Folder>;
  getFolder(id: string): Promise<Folder | null>;
  /** Oldest first; at most `limit`. */
  listFolders(workspaceId: string, limit: number): Promise<Folder[]>;

  createVideo(input: NewVideo): Promise<Video>;
  getVideo(id: string): Promise<Video | null>;
  /** Newest first by `sortBy`, ties broken by id; at most `limit` rows after `after`. */
  listVideos(q: VideoQuery): Promise<Video[]>;
  /** The updated video, or null when it does not exist. */
  updateVideo(id: string, patch: VideoPatch): Promise<Video | null>;
  /**
   * Moves a guest's recording into a workspace and owner when `guestTokenHash` is still its token,
   * clearing the token in the same statement (it grants nothing afterwards); null otherwise.
   */
  claimGuestVideo(
    id: string,
    guestTokenHash: string,
    to: { workspaceId: string; ownerId: string },
  ): Promise<Video | null>;
  /**
   * Applies `patch` only while the video is in state `from` (a render that ends after its video was
   * deleted, or already ended, changes nothing); the updated video, or null.
   */
  transitionVideo(id: string, from: VideoState, patch: VideoPatch): Promise<Video | null>;
  /** Videos in `state`, oldest first (the renders a restart cut off). */
  listVideosInState(state: VideoState, limit: number): Promise<Video[]>;
  /** What one account holds: the bytes of the media of the videos it owns, and its renders not yet ended. */
  ownerUsage(ownerId: string): Promise<{ mediaBytes: number; rendering: number }>;
  /** Removes the video with its captions and upload record; false when there was none. */
  deleteVideo(id: string): Promise<boolean>;
  /**
   * Moves caption status from one value to another only when it still holds `from`, so a
   * generation that finishes after the captions were replaced or the video deleted changes nothing.
   */
  transitionCaptionStatus(id: string, from: CaptionStatus, to: CaptionStatus, error?: string | null): Promise<boolean>;

  /** Stores (replaces) the captions and marks the video's captions ready. */
  putCaptions(input: NewCaptions): Promise<Captions>;
  getCaptions(videoId: string): Promise<Captions | null>;

  createProject(input: Omit<Project, 'id' | 'createdAt'>): Promise<Project>;
  listProjects(q: { workspaceId: string; limit: number; after?: { at: Date; id: string } }): Promise<Project[]>;
  getProject(id: string): Promise<Project | null>;
  /** Appends a clip while the project has fewer than `maxClips`; the updated project, or null (absent or full). */
  addProjectClip(id: string, clip: ProjectClip, maxClips: number): Promise<Project | null>;
  /** Replaces the project's clips (reordered, removed); the updated project, or null when it is gone. */
  setProjectClips(id: string, clips: ProjectClip[]): Promise<Project | null>;
  /** The project's newest export (a video of origin project), or null. */
  latestProjectExport(projectId: string): Promise<Video | null>;

  getEditDraft(videoId: string): Promise<EditDraftRecord | null>;
  /** Stores (replaces) a video's draft; null when the video is gone. */
  putEditDraft(input: Omit<EditDraftRecord, 'updatedAt'>): Promise<EditDraftRecord | null>;
  /** False when there was none. */
  deleteEditDraft(videoId: string): Promise<boolean>;

  createUpload(input: Omit<UploadRecord, 'completedAt'>): Promise<UploadRecord>;
  getUpload(id: string): Promise<UploadRecord | null>;
  /** Marks it complete; false when it was already complete or does not exist (one completion per upload). */
  completeUpload(id: string, at?: Date): Promise<boolean>;
  /** Uploads that are not complete and expired before `now`. */
  listExpiredUploads(now: Date, limit: number): Promise<UploadRecord[]>;
  /** Guests' videos (no workspace, a guest token) created before `before`, oldest first. */
  listGuestVideosBefore(before: Date, limit: number): Promise<Video[]>;

  close(): Promise<void>;
}
