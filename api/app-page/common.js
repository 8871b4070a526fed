// What every page shares: the JSON API with CSRF, and URLs on the origin the page came from.

export const $ = (id) => document.getElementById(id);

const state = { csrf: null };

export class ApiFailure extends Error {
  constructor(status, code, message) {
    super(code ? `${code}: ${message}` : message);
    this.status = status;
    this.code = code;
  }
}

export async function csrf() {
  if (!state.csrf) state.csrf = (await api('/api/auth/csrf')).csrfToken;
  return state.csrf;
}

export async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.method && options.method !== 'GET') headers['x-csrf-token'] = await csrf();
  const res = await fetch(path, { ...options, headers, credentials: 'same-origin' });
  const body = res.headers.get('content-type')?.includes('json') ? await res.json() : null;
  if (!res.ok) throw new ApiFailure(res.status, body?.code, body?.message ?? `HTTP ${res.status}`);
  return body;
}

export async function session() {
  return (await api('/api/auth/session')).user ?? null;
}

export const signInHref = (next = location.pathname + location.search) =>
  `/api/auth/signin?next=${encodeURIComponent(next)}`;

// The service spells its URLs with PUBLIC_URL, which may name this host differently (localhost
// for 127.0.0.1): on our own origin the path is what counts, so cookies and the CSP's 'self' hold.
const mediaOrigin = document.querySelector('meta[name="media-origin"]')?.content ?? 'self';

export function localUrl(raw) {
  if (!raw) return raw;
  const url = new URL(raw, location.href);
  if (mediaOrigin !== 'self' && url.origin === mediaOrigin) return url.href;
  return url.pathname + url.search;
}

/** A path on the media origin. */
export const mediaUrl = (path) => (mediaOrigin === 'self' ? path : `${mediaOrigin}${path}`);

/** The TUS endpoint on this page's origin (the connect-src of the CSP is 'self'). */
export const tusEndpoint = (raw) => new URL(new URL(raw, location.href).pathname, location.origin).href;

/**
 * tus's retry rule without its `navigator.onLine` check: the upload goes to the page's own
 * server, which a browser that believes itself offline (a machine with no route out, a LAN)
 * still reaches. Retried: no answer at all, 409 and 423 (the offset moved or is locked), 5xx.
 */
export function shouldRetryUpload(err) {
  const status = err.originalResponse ? err.originalResponse.getStatus() : 0;
  return status === 0 || status === 409 || status === 423 || status >= 500;
}

export function clock(sec) {
  const s = Math.max(0, Math.floor(sec));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** Calls `check` until it answers true, waiting longer each time (1 s doubling to 15 s). */
export async function pollWithBackoff(check, signal) {
  let delay = 1000;
  while (!signal?.aborted) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

// A guest's recordings wait here (this tab only, never in a URL) until their guest signs up or in.
const GUEST_KEY = 'guest-recordings';
// A tab's worth: past it the oldest is dropped (it stays at its link, as any guest recording).
const MAX_PENDING = 20;

function pendingRecordings() {
  try {
    const list = JSON.parse(sessionStorage.getItem(GUEST_KEY) ?? '[]');
    return Array.isArray(list) ? list.filter((p) => p?.videoId && p.guestToken) : [];
  } catch {
    return [];
  }
}

function keepPending(list) {
  if (list.length === 0) sessionStorage.removeItem(GUEST_KEY);
  else sessionStorage.setItem(GUEST_KEY, JSON.stringify(list.slice(-MAX_PENDING)));
}

export function rememberGuestRecording(videoId, guestToken) {
  keepPending([...pendingRecordings(), { videoId, guestToken }]);
}

/**
 * Signed in now: the recordings made as a guest in this tab move into the user's videos. Answers
 * the videos claimed, and the first failure, if any, as `error` (those recordings stay pending,
 * unless they are gone or claimed: a 404 will not change by asking again).
 */
export async function claimGuestRecordings() {
  const claimed = [];
  const left = [];
  let error = null;
  for (const p of pendingRecordings()) {
    try {
      claimed.push(
        await api(`/api/videos/${encodeURIComponent(p.videoId)}/claim`, {
          method: 'POST',
          body: JSON.stringify({ guestToken: p.guestToken }),
        }),
      );
    } catch (err) {
      if (err.status !== 404) left.push(p);
      error ??= err;
    }
  }
  keepPending(left);
  return { claimed, error };
}
