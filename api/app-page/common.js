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

// A guest's recording waits here (this tab only, never in a URL) until its guest signs up or in.
const GUEST_KEY = 'guest-recording';

export function rememberGuestRecording(videoId, guestToken) {
  sessionStorage.setItem(GUEST_KEY, JSON.stringify({ videoId, guestToken }));
}

/**
 * Signed in now: the recording made as a guest in this tab moves into the user's videos. Answers
 * the claimed video, or null when there was none to claim (or it was no longer claimable).
 */
export async function claimGuestRecording() {
  let pending;
  try {
    pending = JSON.parse(sessionStorage.getItem(GUEST_KEY) ?? 'null');
  } catch {
    pending = null;
  }
  if (!pending?.videoId || !pending.guestToken) return null;
  try {
    const video = await api(`/api/videos/${encodeURIComponent(pending.videoId)}/claim`, {
      method: 'POST',
      body: JSON.stringify({ guestToken: pending.guestToken }),
    });
    sessionStorage.removeItem(GUEST_KEY);
    return video;
  } catch (err) {
    // Gone or claimed elsewhere: nothing will change by asking again. Anything else may pass.
    if (err.status === 404) sessionStorage.removeItem(GUEST_KEY);
    throw err;
  }
}
