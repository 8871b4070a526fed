/**
 * Whether a new password is in a breach corpus, by the Pwned Passwords range API with
 * k-anonymity: only the first 5 hex digits of the password's SHA-1 leave the service
 * (`GET {base}/range/ABCDE`), and the answer is every known suffix under that prefix with
 * its count, one `SUFFIX:COUNT` a line, which is searched here. `Add-Padding: true` asks the
 * server to pad the answer with made-up suffixes of count 0, so that its size does not tell an
 * observer of the traffic which prefix was asked; those are not breaches.
 *
 * The check is a second opinion after the local policy, never a gate on the service being up:
 * when the API cannot be reached in time (a short timeout, or the caller's signal), an answer
 * is malformed or too large, the check fails open (the password is judged by the local policy
 * alone), with one warning line and the `onUnavailable` hook (a metric).
 */

import { createHash } from 'node:crypto';
import { EngineError } from '../../engine/errors.ts';

/** The public API; PWNED_PASSWORDS_URL names a mirror speaking the same protocol. */
export const PWNED_PASSWORDS_API = 'https://api.pwnedpasswords.com';
export const BREACH_CHECK_TIMEOUT_MS = 1500;
/** A real answer is about 30 KB (some 800 suffixes, up to about 1 000 with padding). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export type BreachCheckFailure = 'timeout' | 'unreachable' | 'http_status' | 'malformed';

export interface BreachCheckOptions {
  /** The API's base URL, without `/range`. */
  baseUrl: string;
  timeoutMs?: number;
  /** One line per failed check (the service's logger). */
  warn: (message: string, details: Record<string, unknown>) => void;
  /** Counts a failed check (a metric). */
  onUnavailable?: (reason: BreachCheckFailure) => void;
}

/** How often the password was seen in breaches; 0 when never; null when the check could not be made. */
export type BreachCount = number | null;

export class BreachCheck {
  readonly #base: string;
  readonly #timeoutMs: number;
  readonly #o: BreachCheckOptions;

  constructor(o: BreachCheckOptions) {
    this.#base = o.baseUrl.replace(/\/+$/, '');
    this.#timeoutMs = o.timeoutMs ?? BREACH_CHECK_TIMEOUT_MS;
    this.#o = o;
  }

  get baseUrl(): string {
    return this.#base;
  }

  async count(password: string, signal?: AbortSignal): Promise<BreachCount> {
    const hex = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
    const prefix = hex.slice(0, 5);
    const suffix = hex.slice(5);
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const res = await fetch(`${this.#base}/range/${prefix}`, {
        headers: { 'add-padding': 'true', 'user-agent': 'transcribe-api password check', accept: 'text/plain' },
        redirect: 'error',
        signal: combined,
      });
      if (res.status !== 200) {
        await res.body?.cancel();
        return this.#failed('http_status', { status: res.status });
      }
      const text = await readCapped(res, MAX_ANSWER_BYTES);
      if (text === null) return this.#failed('malformed', { why: `answer over ${MAX_ANSWER_BYTES} bytes` });
      return findSuffix(text, suffix) ?? this.#failed('malformed', { why: 'no SUFFIX:COUNT lines' });
    } catch (err) {
      // The caller went away: not the API's failure, and nobody is left to answer (499, not logged).
      if (signal?.aborted) {
        throw new EngineError('ABORTED', 'The client went away during the password check.', { cause: signal.reason });
      }
      const reason = timeout.aborted ? 'timeout' : 'unreachable';
      return this.#failed(reason, { error: (err as Error).message });
    }
  }

  #failed(reason: BreachCheckFailure, details: Record<string, unknown>): null {
    this.#o.warn('password breach check unavailable: the new password is judged by the local policy alone', {
      reason,
      url: this.#base,
      ...details,
    });
    this.#o.onUnavailable?.(reason);
    return null;
  }
}

/**
 * The count of `suffix` in a range answer (compared without regard to case: the protocol
 * sends upper case, a mirror may not), 0 when absent or padding, undefined when the answer
 * holds no line of the protocol's shape at all.
 */
export function findSuffix(answer: string, suffix: string): number | undefined {
  const wanted = suffix.toUpperCase();
  let lines = 0;
  for (const line of answer.split('\n')) {
    const m = /^([0-9A-Fa-f]{35}):(\d+)\s*$/.exec(line);
    if (!m) continue;
    lines++;
    if (m[1]!.toUpperCase() === wanted) return Number(m[2]);
  }
  return lines > 0 ? 0 : undefined;
}

/** The body as text, or null past `max` bytes (the rest is not read). */
async function readCapped(res: Response, max: number): Promise<string | null> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream: the rest is never read.
    if (size > max) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
