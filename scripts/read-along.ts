/**
 * The read-along with real words on a first look (README, "Read along"). A random-weight model
 * makes meaningless captions, so this stores real ones the way an owner would, through the API
 * of the service that is running: it signs up a fresh account, uploads MEDIA
 * (`POST /api/videos/multipart/init`, TUS, `…/complete`), stores CAPTIONS as the owner
 * (`POST /api/videos/{id}/captions` with `{format: "vtt", content}`), makes the video public
 * (`PATCH /api/videos/{id}`) and prints the watch page's address and the account's sign-in.
 *   usage: npm run read-along -- MEDIA CAPTIONS.vtt [--url http://127.0.0.1:3000]
 */

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';

export interface ReadAlong {
  watchUrl: string;
  videoId: string;
  email: string;
  password: string;
}

/** fetch with a cookie jar and the CSRF header, as the pages send it. */
function apiClient(base: string) {
  const cookies = new Map<string, string>();
  let csrf: string | undefined;
  const call = async (path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    if (csrf && init.method && init.method !== 'GET') headers.set('x-csrf-token', csrf);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const res = await fetch(new URL(path, base), { ...init, headers, body: body ?? null, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim());
    }
    return res;
  };
  const json = async <T>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> => {
    const res = await call(path, init);
    const text = await res.text();
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  };
  return {
    call,
    json,
    async start() {
      csrf = (await json<{ csrfToken: string }>('/api/auth/csrf')).csrfToken;
    },
  };
}

/** TUS 1.0.0 by hand: create, then PATCH the bytes in 8 MiB pieces. */
async function tusSend(
  api: ReturnType<typeof apiClient>,
  endpoint: string,
  headers: Record<string, string>,
  bytes: Buffer,
) {
  // The API spells the endpoint with PUBLIC_URL; the path on the address we were given is the same one.
  const create = await api.call(new URL(endpoint).pathname, {
    method: 'POST',
    headers: { ...headers, 'tus-resumable': '1.0.0', 'upload-length': String(bytes.length) },
  });
  const location = create.headers.get('location');
  if (create.status !== 201 || !location) throw new Error(`TUS create: ${create.status} ${await create.text()}`);
  const piece = 8 * 1024 * 1024;
  for (let offset = 0; offset < bytes.length; offset += piece) {
    const res = await api.call(new URL(location, endpoint).pathname, {
      method: 'PATCH',
      headers: {
        ...headers,
        'tus-resumable': '1.0.0',
        'upload-offset': String(offset),
        'content-type': 'application/offset+octet-stream',
      },
      body: bytes.subarray(offset, offset + piece),
    });
    if (res.status !== 204) throw new Error(`TUS PATCH at ${offset}: ${res.status} ${await res.text()}`);
  }
}

export async function storeReadAlong(o: { base: string; mediaPath: string; captionsPath: string }): Promise<ReadAlong> {
  const api = apiClient(o.base);
  await api.start();
  const email = `reader-${randomBytes(4).toString('hex')}@example.com`;
  const password = randomBytes(18).toString('base64url');
  await api.json('/api/auth/signup', { method: 'POST', json: { email, password } });
  const init = await api.json<{ videoId: string; tus: { endpoint: string; headers: Record<string, string> } }>(
    '/api/videos/multipart/init',
    { method: 'POST', json: { title: basename(o.mediaPath) } },
  );
  await tusSend(api, init.tus.endpoint, init.tus.headers, await readFile(o.mediaPath));
  await api.json('/api/videos/multipart/complete', { method: 'POST', json: { videoId: init.videoId } });
  // Stored by the owner, these win over the model's (a generation still running is stopped).
  const content = await readFile(o.captionsPath, 'utf8');
  await api.json(`/api/videos/${init.videoId}/captions`, { method: 'POST', json: { format: 'vtt', content } });
  await api.json(`/api/videos/${init.videoId}`, { method: 'PATCH', json: { visibility: 'public' } });
  return { watchUrl: new URL(`/app/videos/${init.videoId}`, o.base).href, videoId: init.videoId, email, password };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--url');
  const base = at >= 0 ? args.splice(at, 2)[1] : 'http://127.0.0.1:3000';
  const [mediaPath, captionsPath] = args;
  if (!base || !mediaPath || !captionsPath) {
    console.error('usage: npm run read-along -- MEDIA CAPTIONS.vtt [--url http://127.0.0.1:3000]');
    process.exit(2);
  }
  try {
    const r = await storeReadAlong({ base, mediaPath, captionsPath });
    console.log(`Read along at ${r.watchUrl}`);
    console.log(`(its owner, to sign in at ${new URL('/app', base).href}: ${r.email} / ${r.password})`);
  } catch (err) {
    console.error(`read-along: ${err instanceof Error ? err.message : String(err)}`);
    console.error(`Is the service running at ${base}? Start it with: MODEL=synthetic-tiny npm start`);
    process.exit(1);
  }
}
