// The /app page (a module): upload (tus-js-client, retried and resumed from the server's offset after a
// dropped connection), list, play with the caption track, download captions, delete; the projects,
// and a new one. Loaded as a
// file (the page's CSP allows no inline script); every text goes in through textContent.
// Below 640 px the list's rows are cards (app.css): the same table, so one DOM for both widths.

import {
  $,
  ApiFailure,
  api,
  localUrl,
  percent,
  playerFor,
  session,
  shouldRetryUpload,
  showAccount,
  signInHref,
  tusEndpoint,
  uploadFailure,
} from './common.js';

// `uploaded`: the video whose "Captions are on their way" line is showing, until its captions settle.
const state = { cursor: null, uploaded: null, poll: null };

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
  const player = playerFor('player', video.mediaType?.startsWith('audio/') ?? false);
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

/** The captions cell: ready, processing with the job's percentage, or none (and why, in words). */
function captionText(video) {
  if (video.captionStatus === 'processing') return `processing${percent(video.captionProgress)}`;
  // The stored reason is `CODE: message`: people get the message.
  if (video.captionStatus === 'none' && video.captionError)
    return `none (${video.captionError.replace(/^[A-Z_]+: /, '')})`;
  return video.captionStatus;
}

function row(video) {
  const tr = document.createElement('tr');
  tr.dataset.videoId = video.id;
  const title = document.createElement('td');
  title.append(link(video.title, `/app/videos/${video.id}`));
  tr.append(title);
  const cells = [
    ['State', video.state],
    ['Captions', captionText(video)],
    ['Duration', formatDuration(video.durationSec)],
  ];
  for (const [label, text] of cells) {
    const td = document.createElement('td');
    // The card layout's label for this cell (app.css), as the table's column head says it.
    td.dataset.label = label;
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
  const empty = tbody.childElementCount === 0;
  $('videos').hidden = empty;
  $('empty').hidden = !empty;
  settleUploadLine(videos);
  // Poll while captions are being made, so the row turns ready (its percentage moving) without a reload.
  clearTimeout(state.poll);
  if (videos.some((v) => v.captionStatus === 'processing'))
    state.poll = setTimeout(() => refresh().catch(() => {}), 3000);
}

/** "Captions are on their way" lasts while they are: then it says how it ended. */
function settleUploadLine(videos) {
  const v = videos.find((x) => x.id === state.uploaded?.videoId);
  if (!v || v.captionStatus === 'processing') return;
  setStatus(
    v.captionStatus === 'ready'
      ? `Uploaded “${state.uploaded.title}”. Captions ready.`
      : `Uploaded “${state.uploaded.title}”. Captions could not be made.`,
    v.captionStatus !== 'ready',
  );
  state.uploaded = null;
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
      // Whole code points: half of an emoji is not text, and the API refuses it.
      body: JSON.stringify({ title: title || [...file.name].slice(0, 300).join('') }),
    }));
  localStorage.setItem(resumeKey(file), JSON.stringify(init));
  const progress = $('upload-progress');
  progress.value = 0;
  progress.hidden = false;
  try {
    try {
      await sendBytes(file, init, progress);
    } catch (e) {
      // A saved upload that the server no longer knows (aborted, swept) is forgotten; the next try starts afresh.
      if (saved) localStorage.removeItem(resumeKey(file));
      throw e;
    }
    setStatus('Checking the file…');
    await call('/api/videos/multipart/complete', { method: 'POST', body: JSON.stringify({ videoId: init.videoId }) });
  } finally {
    // Done or failed, the bar starts from nothing next time.
    progress.value = 0;
    progress.hidden = true;
  }
  localStorage.removeItem(resumeKey(file));
  state.uploaded = { videoId: init.videoId, title: init.title };
  setStatus(`Uploaded “${init.title}”. Captions are on their way.`);
}

/** The workspace's projects, newest first, and "New project", which opens the new one's page. */
async function refreshProjects() {
  const { projects } = await call('/api/projects?limit=20');
  $('projects').replaceChildren(
    ...projects.map((p) => {
      const li = document.createElement('li');
      li.append(link(p.title, `/app/projects/${p.id}`), ` · ${p.clips.length} clip${p.clips.length === 1 ? '' : 's'}`);
      return li;
    }),
  );
}

async function newProject() {
  const n = $('projects').childElementCount + 1;
  const made = await call('/api/projects', { method: 'POST', body: JSON.stringify({ title: `Project ${n}` }) });
  location.assign(`/app/projects/${made.id}`);
}

async function main() {
  const user = await session();
  if (!user) {
    location.href = signInHref('/app');
    return;
  }
  showAccount(user);
  $('upload-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = $('file').files[0];
    if (!file) return;
    try {
      await upload(file, $('title').value.trim());
      $('upload-form').reset();
      await refresh();
    } catch (e) {
      setStatus(`Upload failed. ${uploadFailure(e)}`, true);
    }
  });
  $('more').addEventListener('click', () => refresh(true).catch((e) => setStatus(e.message, true)));
  $('new-project').addEventListener('click', () => newProject().catch((e) => setStatus(e.message, true)));
  await Promise.all([refresh(), refreshProjects()]);
  document.body.dataset.ready = 'true';
}

main().catch((e) => setStatus(e.message, true));
