// The /app page (a module): upload (tus-js-client, retried and resumed from the server's offset after a
// dropped connection), list, play with the caption track, download captions, delete. Loaded as a
// file (the page's CSP allows no inline script); every text goes in through textContent.

import { $, ApiFailure, api, localUrl, session, shouldRetryUpload, signInHref, tusEndpoint } from './common.js';

const state = { cursor: null };

// A session that ends while the page is open sends the person to sign in, and back here after.
async function call(path, options) {
  try {
    return await api(path, options);
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 401) location.href = signInHref('/app');
    throw e;
  }
}

function setStatus(text, isError = false) {
  const el = $('upload-status');
  el.textContent = text;
  el.classList.toggle('error', isError);
}

function formatDuration(sec) {
  if (sec == null) return '';
  const s = Math.round(sec);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function button(label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

function link(label, href) {
  const a = document.createElement('a');
  a.href = href;
  a.textContent = label;
  return a;
}

async function play(video) {
  const player = $('player');
  player.replaceChildren();
  player.removeAttribute('src');
  $('player-title').textContent = video.title;
  $('player-section').hidden = false;
  const status = await call(`/api/videos/${video.id}/captions`);
  if (status.captionUrl) {
    const track = document.createElement('track');
    track.kind = 'captions';
    track.label = 'Captions';
    track.srclang = 'en';
    track.src = localUrl(status.captionUrl);
    track.default = true;
    player.append(track);
  }
  player.src = localUrl(video.mediaUrl);
  player.dataset.videoId = video.id;
}

function row(video) {
  const tr = document.createElement('tr');
  tr.dataset.videoId = video.id;
  const title = document.createElement('td');
  title.append(link(video.title, `/app/videos/${video.id}`));
  tr.append(title);
  const cells = [
    video.state,
    video.captionStatus + (video.captionError ? ` (${video.captionError})` : ''),
    formatDuration(video.durationSec),
  ];
  for (const text of cells) {
    const td = document.createElement('td');
    td.textContent = text;
    tr.append(td);
  }
  const actions = document.createElement('td');
  actions.className = 'actions';
  if (video.state === 'ready')
    actions.append(button('Play', () => play(video).catch((e) => setStatus(e.message, true))));
  if (video.captionStatus === 'ready') {
    actions.append(link('VTT', `/api/videos/${video.id}/captions?format=vtt`));
    actions.append(link('SRT', `/api/videos/${video.id}/captions?format=srt`));
  }
  actions.append(
    button('Delete', async () => {
      if (!confirm(`Delete “${video.title}”?`)) return;
      try {
        await call(`/api/videos/${video.id}`, { method: 'DELETE' });
        if ($('player').dataset.videoId === video.id) $('player-section').hidden = true;
        await refresh();
      } catch (e) {
        setStatus(e.message, true);
      }
    }),
  );
  tr.append(actions);
  return tr;
}

async function refresh(append = false) {
  const qs = append && state.cursor ? `?cursor=${encodeURIComponent(state.cursor)}` : '';
  const { videos, nextCursor } = await call(`/api/videos${qs}`);
  const tbody = $('videos').querySelector('tbody');
  if (!append) tbody.replaceChildren();
  for (const v of videos) tbody.append(row(v));
  state.cursor = nextCursor;
  $('more').hidden = !nextCursor;
  // Poll while captions are being made, so the row turns ready without a reload.
  if (videos.some((v) => v.captionStatus === 'processing')) setTimeout(() => refresh().catch(() => {}), 3000);
}

// An unfinished upload survives a reload: the same file picks up its video, token and offset.
const resumeKey = (file) => `upload:${file.name}:${file.size}:${file.lastModified}`;

function savedUpload(file) {
  try {
    const saved = JSON.parse(localStorage.getItem(resumeKey(file)) || 'null');
    return saved && Date.parse(saved.tus.expiresAt) > Date.now() + 60_000 ? saved : null;
  } catch {
    return null;
  }
}

function sendBytes(file, init, progress) {
  return new Promise((resolve, reject) => {
    const up = new tus.Upload(file, {
      endpoint: tusEndpoint(init.tus.endpoint),
      headers: init.tus.headers,
      chunkSize: 5 * 1024 * 1024,
      // After a dropped connection the client asks the server for its offset (HEAD) and goes on from there.
      retryDelays: [0, 1000, 3000, 5000, 10000],
      onShouldRetry: shouldRetryUpload,
      metadata: { filename: file.name, filetype: file.type },
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onProgress: (sent, total) => {
        progress.value = Math.floor((sent / total) * 100);
      },
      onError: reject,
      onSuccess: resolve,
    });
    up.findPreviousUploads()
      .then((previous) => {
        const mine = previous.find((p) => p.uploadUrl?.endsWith(`/${init.hostedVideoId}`));
        if (mine) up.resumeFromPreviousUpload(mine);
        up.start();
      })
      .catch(reject);
  });
}

async function upload(file, title) {
  const saved = savedUpload(file);
  const init =
    saved ??
    (await call('/api/videos/multipart/init', {
      method: 'POST',
      body: JSON.stringify({ title: title || file.name.slice(0, 300) }),
    }));
  localStorage.setItem(resumeKey(file), JSON.stringify(init));
  const progress = $('upload-progress');
  progress.hidden = false;
  try {
    await sendBytes(file, init, progress);
  } catch (e) {
    // A saved upload that the server no longer knows (aborted, swept) is forgotten; the next try starts afresh.
    if (saved) localStorage.removeItem(resumeKey(file));
    throw e;
  }
  setStatus('Processing…');
  await call('/api/videos/multipart/complete', { method: 'POST', body: JSON.stringify({ videoId: init.videoId }) });
  localStorage.removeItem(resumeKey(file));
  progress.hidden = true;
  setStatus(`Uploaded “${init.title}”. Captions are on their way.`);
}

async function main() {
  const user = await session();
  if (!user) {
    location.href = signInHref('/app');
    return;
  }
  $('who').textContent = user.email || user.name || '';
  $('upload-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = $('file').files[0];
    if (!file) return;
    try {
      await upload(file, $('title').value.trim());
      $('upload-form').reset();
      await refresh();
    } catch (e) {
      setStatus(`Upload failed: ${e.message}`, true);
    }
  });
  $('more').addEventListener('click', () => refresh(true).catch((e) => setStatus(e.message, true)));
  await refresh();
  document.body.dataset.ready = 'true';
}

main().catch((e) => setStatus(e.message, true));
