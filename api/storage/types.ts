/**
 * The storage contract: accounts, sessions, workspaces and the payment ledger. One SQL
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

  close(): Promise<void>;
}
