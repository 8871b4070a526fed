// What every page shares: the JSON API with CSRF, and URLs on the origin the page came from.

export const $ = (id) => document.getElementById(id);

const state = { csrf: null };

/** A refused call: `message` is the service's sentence for people; `code` is for the script, never shown. */
export class ApiFailure extends Error {
  constructor(status, code, message) {
    super(message);
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

/**
 * The header's account corner, the same on every page: signed in, the account's email and
 * "Sign out" (the session revoked on the server, then the sign-in page, which comes back here);
 * a guest gets "Sign in".
 */
export function showAccount(user) {
  const box = $('account');
  if (!box) return;
  if (!user) {
    const a = document.createElement('a');
    a.id = 'signin';
    a.href = signInHref();
    a.textContent = 'Sign in';
    box.replaceChildren(a);
    return;
  }
  const who = document.createElement('span');
  who.id = 'who';
  who.textContent = user.email || user.name || 'Signed in';
  const out = document.createElement('button');
  out.type = 'button';
  out.id = 'signout';
  out.textContent = 'Sign out';
  // The address is hidden on a phone's one-line header: the button still says whose session it ends.
  out.title = `Signed in as ${who.textContent}`;
  out.addEventListener('click', async () => {
    out.disabled = true;
    try {
      await api('/api/auth/signout', { method: 'POST', body: '{}' });
      location.assign(signInHref());
    } catch {
      out.disabled = false;
      who.textContent = 'Sign-out failed; try again.';
    }
  });
  box.replaceChildren(who, ' ', out);
}

/** " 42%" of a caption job's progress, or '' when it is not known. */
export const percent = (p) => (typeof p === 'number' ? ` ${Math.floor(p)}%` : '');

/**
 * A failed upload as a sentence for people: the service's own message when it sent one,
 * else what tus-js-client's status means, never its raw text (methods, URLs, request ids).
 */
export function uploadFailure(err) {
  if (err instanceof ApiFailure) return err.message;
  const status = err?.originalResponse ? err.originalResponse.getStatus() : 0;
  if (status === 413) return 'The file is larger than this account may upload.';
  if (status === 507) return 'The server is out of space for uploads right now; try again later.';
  if (status === 403 || status === 404 || status === 410) return 'This upload expired; please start it again.';
  if (status === 429) return 'Too many uploads at once; wait a minute and try again.';
  if (status >= 500) return 'The server could not store the file; try again in a moment.';
  return 'The connection was lost before the upload finished; check the network and try again.';
}

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

/** 0:04.0, 12:07.5: seconds to the tenth, as an edit's times are shown. */
export function clockTenths(sec) {
  const tenths = Math.round(Math.max(0, sec) * 10);
  const m = Math.floor(tenths / 600);
  const s = (tenths % 600) / 10;
  return `${m}:${s.toFixed(1).padStart(4, '0')}`;
}

/** A small stroked SVG icon of path `d` on a 16×16 grid: text glyphs (⏸, ↶) are missing from some system fonts. */
export function icon(d) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('aria-hidden', 'true');
  svg.classList.add('icon');
  const path = document.createElementNS('http://www.w3.org/2000/svg', 'path');
  path.setAttribute('d', d);
  svg.append(path);
  return svg;
}

/** Calls `check` until it answers true, waiting longer each time (1 s doubling to `maxMs`, 15 s by default). */
export async function pollWithBackoff(check, signal, maxMs = 15000) {
  let delay = 1000;
  while (!signal?.aborted) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, maxMs);
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

/**
 * The player for this media, swapped in place under the same id: `<audio>` for sound only (a
 * recording with no picture is not a black box), `<video>` otherwise. Its track moves with it.
 */
export function playerFor(id, audioOnly) {
  const old = $(id);
  const tag = audioOnly ? 'audio' : 'video';
  if (old.localName === tag) return old;
  const el = document.createElement(tag);
  for (const a of old.attributes) if (a.name !== 'width' && a.name !== 'playsinline') el.setAttribute(a.name, a.value);
  el.append(...old.childNodes);
  old.replaceWith(el);
  return el;
}
