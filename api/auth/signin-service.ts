/**
 * Accounts and sessions without HTTP: sign-up, password sign-in, sign-in with a provider's
 * identity, session views, sign-out. Each way in ends the same way (`#grant`): a new session,
 * the old one revoked, and the browser and network trusted for the account (the device id the
 * routes put in the `auth.device` cookie), so a stranger's guesses can never lock the owner out
 * of the place they signed up or signed in from. The routes (./routes.ts) read cookies and the
 * client's address into an `AuthClient` and set the cookies this returns.
 */

import { ApiError } from '../errors.ts';
import type { AuthClient, AuthLimiter, DeviceGrant } from '../ratelimit.ts';
import type { Storage, User } from '../storage/types.ts';
import type { PasswordBlocklist } from './blocklist.ts';
import type { BreachCheck } from './breach-check.ts';
import type { OidcIdentity } from './oidc.ts';
import {
  PASSWORD_MIN_CHARS,
  PASSWORD_PROBLEM_MESSAGES,
  type PasswordVerdict,
  passwordVerdict,
} from './password-policy.ts';
import { dummyPasswordHash, hashPassword, verifyPassword } from './passwords.ts';
import { hashSessionToken, newSessionToken } from './session.ts';

export interface SignInServiceOptions {
  storage: Storage;
  limiter: AuthLimiter;
  sessionTtlSec: number;
  /** The operator's PASSWORD_BLOCKLIST, when set. */
  blocklist?: PasswordBlocklist;
  /** The Pwned Passwords range API, when the breach check is on. */
  breaches?: BreachCheck;
}

/** The client as the service sees it: its budgets' key, and the session it may already hold. */
export interface SignInClient extends AuthClient {
  /** The hash of the session this browser holds now, replaced by the new one. */
  sessionHash: string | null;
}

/** What a successful sign-up or sign-in hands the browser. */
export interface Granted {
  user: User;
  session: { token: string; expiresAt: Date };
  /** Absent for an account with no email (the device id is keyed by it). */
  device?: DeviceGrant;
}

export interface Credentials {
  email: string;
  password: string;
  name?: string;
}

export class SignInService {
  readonly #o: SignInServiceOptions;

  constructor(o: SignInServiceOptions) {
    this.#o = o;
  }

  /**
   * 400 PASSWORD_TOO_WEAK (with the reason) or PASSWORD_BREACHED, 409 EMAIL_TAKEN, 429 past the
   * network's budget. `signal`: the client went away (stops the breach check).
   */
  async signUp(body: Credentials, client: SignInClient, signal?: AbortSignal): Promise<Granted> {
    await this.#o.limiter.signUp(client);
    await this.#checkNewPassword(body, signal);
    const passwordHash = await hashPassword(body.password);
    const input = body.name === undefined ? { email: body.email, passwordHash } : { ...body, passwordHash };
    const user = await this.#o.storage.createPasswordUser(input);
    // A deliberate choice (api/README.md, "Sign-up and enumeration"): with no mail channel
    // to send the outcome out of band, sign-up says so; the sign-up budget per network is
    // what bounds how many addresses a stranger can test this way.
    if (!user) throw new ApiError(409, 'EMAIL_TAKEN', 'An account with this email already exists.');
    return this.#grant(user, client, await this.#o.limiter.trust(client, body.email));
  }

  /** 401 INVALID_CREDENTIALS (the same for an unknown email), 429 while a budget is locked. */
  async signIn(body: Credentials, client: SignInClient): Promise<Granted> {
    const attempt = await this.#o.limiter.signIn(client, body.email);
    const credential = await this.#o.storage.findPasswordCredential(body.email);
    // Unknown email and wrong password run the same Argon2 work and answer the same way.
    const ok = await verifyPassword(body.password, credential?.passwordHash ?? (await dummyPasswordHash()));
    const user = ok && credential ? await this.#o.storage.getUser(credential.userId) : null;
    if (!user) throw new ApiError(401, 'INVALID_CREDENTIALS', 'Wrong email or password.');
    return this.#grant(user, client, await attempt.succeeded());
  }

  /** A provider vouched for this identity (Google's callback). */
  async signInWith(provider: 'google', identity: OidcIdentity, client: SignInClient): Promise<Granted> {
    const user = await this.#o.storage.upsertOidcUser({ provider, ...identity });
    const device = user.email ? await this.#o.limiter.trust(client, user.email) : undefined;
    return this.#grant(user, client, device);
  }

  async signOut(sessionHash: string | null): Promise<void> {
    if (sessionHash !== null) await this.#o.storage.revokeSession(sessionHash);
  }

  /** The user and their workspaces as the session routes show them, or null for a deleted user. */
  async sessionView(userId: string) {
    const user = await this.#o.storage.getUser(userId);
    if (!user) return null;
    const { id, email, name, activeWorkspaceId } = user;
    return { id, email, name, activeWorkspaceId, workspaces: await this.#o.storage.listWorkspaces(userId) };
  }

  /** 403 FORBIDDEN when the user is not a member. */
  async setActiveWorkspace(userId: string, workspaceId: string): Promise<void> {
    if (!(await this.#o.storage.setActiveWorkspace(userId, workspaceId))) {
      throw new ApiError(403, 'FORBIDDEN', 'Not a member of that workspace.');
    }
  }

  /**
   * Every account password is set through here. The local policy first (no network), then the
   * operator's blocklist, then the breach corpus, which fails open when it cannot be asked.
   */
  async #checkNewPassword(body: Credentials, signal: AbortSignal | undefined): Promise<void> {
    const verdict: PasswordVerdict | null =
      passwordVerdict(body.password, body.email, body.name) ??
      (this.#o.blocklist?.has(body.password) ? { problem: 'blocklisted' } : null);
    if (verdict) throw tooWeak(verdict);
    const count = (await this.#o.breaches?.count(body.password, signal)) ?? 0;
    if (count > 0) {
      throw new ApiError(
        400,
        'PASSWORD_BREACHED',
        `This password has appeared in data breaches (${count.toLocaleString('en')} times in Pwned Passwords), so attackers try it early; choose another.`,
        { details: { reason: 'breached', count, minLength: PASSWORD_MIN_CHARS } },
      );
    }
  }

  async #grant(user: User, client: SignInClient, device: DeviceGrant | undefined): Promise<Granted> {
    // Signing in again replaces the browser's session: the old one is revoked, not orphaned.
    if (client.sessionHash !== null) await this.#o.storage.revokeSession(client.sessionHash);
    const token = newSessionToken();
    const expiresAt = new Date(Date.now() + this.#o.sessionTtlSec * 1000);
    await this.#o.storage.createSession({ tokenHash: hashSessionToken(token), userId: user.id, expiresAt });
    return { user, session: { token, expiresAt }, ...(device ? { device } : {}) };
  }
}

function tooWeak(verdict: PasswordVerdict): ApiError {
  const { problem, ...why } = verdict;
  const message = why.warning
    ? `${PASSWORD_PROBLEM_MESSAGES[problem]} (${why.warning})`
    : PASSWORD_PROBLEM_MESSAGES[problem];
  return new ApiError(400, 'PASSWORD_TOO_WEAK', message, {
    details: { reason: problem, minLength: PASSWORD_MIN_CHARS, ...why },
  });
}
