// The project page (/app/projects/{id}, a module): a project's clips in order, with their total
// length; add a clip from one of your videos, its in and out points set from the player's position
// or by selecting its words (select.js: the clip spans them); reorder by dragging a clip's handle or
// with the arrow keys on it; remove; export, with the render's progress, and open the result.
// Over the projects API: GET /api/projects/{id}, POST …/clips, PUT …/clips (the new order), POST
// …/export, and GET /api/videos/{id}/render for the progress.

import {
  $,
  ApiFailure,
  api,
  clockTenths,
  icon,
  localUrl,
  pollWithBackoff,
  session,
  showAccount,
  signInHref,
} from './common.js';
import { wordSelection } from './select.js';

const projectId = location.pathname.split('/').pop();
const GRIP = 'M6 3v0M10 3v0M6 8v0M10 8v0M6 13v0M10 13v0';
const st = { project: null, videos: [], source: null, words: [], in: null, out: null, sel: null, token: 0 };

function show(text) {
  $('message').textContent = text;
  $('message').hidden = !text;
}

async function call(path, options) {
  try {
    return await api(path, options);
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 401) location.href = signInHref();
    throw e;
  }
}

const range = (c) => {
  const start = c.start ?? 0;
  return { start, end: c.end ?? start + c.durationSec };
};

/** A clip as PUT …/clips takes it back. */
const clipBody = (c) => ({
  sourceUrl: c.sourceUrl,
  title: c.title,
  ...(c.start !== undefined ? { start: c.start } : {}),
  ...(c.end !== undefined ? { end: c.end } : {}),
});

function renderClips(focusIndex = -1) {
  const list = $('clips');
  list.replaceChildren();
  const clips = st.project.clips;
  for (const [i, c] of clips.entries()) {
    const li = document.createElement('li');
    li.className = 'clip';
    li.dataset.index = String(i);
    const handle = document.createElement('button');
    handle.type = 'button';
    handle.className = 'handle';
    handle.setAttribute('aria-label', `Move clip ${i + 1}, “${c.title}”`);
    handle.setAttribute('aria-keyshortcuts', 'ArrowUp ArrowDown');
    handle.append(icon(GRIP));
    const title = document.createElement('span');
    title.className = 'clip-title';
    title.textContent = c.title;
    const r = range(c);
    const times = document.createElement('span');
    times.className = 'clip-times';
    times.textContent = `${clockTenths(r.start)}–${clockTenths(r.end)} · ${clockTenths(c.durationSec)}`;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove clip ${i + 1}, “${c.title}”`);
    remove.addEventListener('click', () => setClips(clips.filter((_, k) => k !== i)));
    handle.addEventListener('keydown', (e) => {
      const to = { ArrowUp: i - 1, ArrowDown: i + 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      if (to >= 0 && to < clips.length) moveClip(i, to);
    });
    handle.addEventListener('pointerdown', (e) => startDrag(e, li));
    li.append(handle, title, times, remove);
    list.append(li);
  }
  $('clips-empty').hidden = clips.length > 0;
  $('export').disabled = clips.length === 0;
  const total = clips.reduce((s, c) => s + c.durationSec, 0);
  $('total').textContent = clockTenths(total);
  document.body.dataset.clips = String(clips.length);
  if (focusIndex >= 0) list.children[focusIndex]?.querySelector('.handle').focus();
}

async function setClips(clips, focusIndex = -1) {
  document.body.dataset.saving = 'true';
  try {
    st.project = await call(`/api/projects/${projectId}/clips`, {
      method: 'PUT',
      body: JSON.stringify({ clips: clips.map(clipBody) }),
    });
  } finally {
    // Drawn from the server's answer: a refused order goes back to the saved one.
    renderClips(focusIndex);
    delete document.body.dataset.saving;
  }
}

function moveClip(from, to) {
  const clips = st.project.clips.slice();
  const [c] = clips.splice(from, 1);
  clips.splice(to, 0, c);
  setClips(clips, to)
    .then(() => {
      $('moved').textContent = `Moved to ${to + 1} of ${clips.length}.`;
    })
    .catch((e) => show(e.message));
}

/** Dragging a handle moves its clip among the others as the pointer passes them; dropped, the order is saved. */
function startDrag(e, li) {
  if (e.button !== 0) return;
  e.preventDefault();
  // Listened for on the document, not captured: moving the clip in the list would drop a capture.
  li.classList.add('dragging');
  const move = (ev) => {
    const over = document.elementFromPoint(ev.clientX, ev.clientY)?.closest('.clip');
    if (!over || over === li || over.parentElement !== li.parentElement) return;
    const box = over.getBoundingClientRect();
    over.parentElement.insertBefore(li, ev.clientY < box.top + box.height / 2 ? over : over.nextSibling);
  };
  const done = () => {
    document.removeEventListener('pointermove', move);
    document.removeEventListener('pointercancel', done);
    li.classList.remove('dragging');
    const order = [...$('clips').children].map((x) => Number(x.dataset.index));
    if (order.every((k, i) => k === i)) return;
    setClips(
      order.map((k) => st.project.clips[k]),
      order.indexOf(Number(li.dataset.index)),
    ).catch((err) => show(err.message));
  };
  document.addEventListener('pointermove', move);
  document.addEventListener('pointerup', done, { once: true });
  document.addEventListener('pointercancel', done, { once: true });
}

function paintRange() {
  const ok = st.in !== null && st.out !== null && st.out > st.in;
  $('range').textContent =
    st.in === null && st.out === null
      ? 'The whole video'
      : `In ${clockTenths(st.in ?? 0)} · Out ${st.out === null ? 'end' : clockTenths(st.out)}${
          ok ? ` · ${clockTenths(st.out - st.in)}` : ''
        }`;
  const wordsIn = (w) => st.in !== null && st.out !== null && w.start >= st.in - 1e-3 && w.end <= st.out + 1e-3;
  for (const [i, w] of st.words.entries()) {
    const next = st.words[i + 1];
    w.el.classList.toggle('sel', wordsIn(w));
    w.el.classList.toggle(
      'sel-join',
      wordsIn(w) && next !== undefined && wordsIn(next) && w.el.nextElementSibling === next.el,
    );
  }
}

async function chooseSource(id) {
  // A later choice wins over an earlier one still loading.
  const token = ++st.token;
  const v = st.videos.find((x) => x.id === id);
  st.source = v ?? null;
  st.in = null;
  st.out = null;
  st.words = [];
  $('source-words').replaceChildren();
  if (!v) return paintRange();
  const player = $('source-player');
  player.src = localUrl(v.mediaUrl);
  paintRange();
  if (v.captionStatus !== 'ready') {
    $('source-words').textContent = 'This video has no transcript yet: set the points from the player.';
    return;
  }
  const captions = await call(`/api/videos/${v.id}/captions`);
  if (token !== st.token) return;
  const track = player.querySelector('track');
  if (captions.captionUrl) {
    track.src = localUrl(captions.captionUrl);
    track.track.mode = 'showing';
  }
  const { segments } = await call(`/api/videos/${v.id}/transcript`);
  if (token !== st.token) return;
  const box = $('source-words');
  for (const seg of segments) {
    const p = document.createElement('p');
    for (const w of seg.words) {
      const el = document.createElement('span');
      el.className = 'w';
      el.textContent = w.text;
      el.dataset.i = String(st.words.length);
      if (p.childNodes.length > 0) p.append(' ');
      p.append(el);
      st.words.push({ el, start: w.start, end: w.end });
    }
    if (p.childNodes.length > 0) box.append(p);
  }
  if (st.words.length === 0) box.textContent = 'No word times in this transcript: set the points from the player.';
}

async function addClip() {
  const v = st.source;
  if (!v) return;
  const start = st.in ?? 0;
  const end = st.out ?? v.durationSec;
  if (!(end > start)) {
    $('range').textContent = 'Out must come after In.';
    return;
  }
  const body = { sourceUrl: v.mediaUrl, start, end, title: `${v.title} ${clockTenths(start)}` };
  st.project = await call(`/api/projects/${projectId}/clips`, { method: 'POST', body: JSON.stringify(body) });
  renderClips();
  st.sel.clear();
  st.in = null;
  st.out = null;
  paintRange();
}

function showExport(video) {
  const line = $('export-state');
  line.replaceChildren();
  document.body.dataset.export = video.state;
  if (video.state === 'ready') {
    const a = document.createElement('a');
    a.id = 'open-export';
    a.href = `/app/videos/${video.id}`;
    a.textContent = 'Open the result';
    line.append(`Exported ${clockTenths(video.durationSec ?? 0)}: `, a);
  } else if (video.state === 'failed') line.textContent = `The export failed: ${video.renderError ?? ''}`;
  else line.textContent = 'Exporting…';
}

async function follow(videoId) {
  const bar = $('export-progress');
  bar.hidden = false;
  bar.value = 0;
  showExport({ id: videoId, state: 'rendering' });
  await pollWithBackoff(async () => {
    const r = await call(`/api/videos/${videoId}/render`);
    if (r.progress !== null) bar.value = r.progress;
    $('export-state').textContent = `Exporting… ${Math.floor((r.progress ?? 0) * 100)}%`;
    if (r.state === 'rendering') return false;
    bar.hidden = true;
    showExport(
      r.state === 'ready' ? await call(`/api/videos/${videoId}`) : { id: videoId, ...r, renderError: r.error },
    );
    return true;
  });
}

async function exportProject() {
  $('export').disabled = true;
  try {
    const made = await call(`/api/projects/${projectId}/export`, { method: 'POST', body: '{}' });
    await follow(made.id);
  } catch (e) {
    $('export-state').textContent = `Not exported: ${e.message}`;
  } finally {
    $('export').disabled = st.project.clips.length === 0;
  }
}

async function main() {
  const user = await session();
  if (!user) {
    location.href = signInHref();
    return;
  }
  showAccount(user);
  try {
    st.project = await call(`/api/projects/${projectId}`);
  } catch (e) {
    $('title').textContent = 'Project not found';
    show(e.status === 404 ? 'There is no project at this address.' : e.message);
    return;
  }
  $('title').textContent = st.project.title;
  document.title = st.project.title;
  renderClips();
  const { videos } = await call('/api/videos?limit=100');
  st.videos = videos.filter((v) => v.state === 'ready' && v.mediaUrl);
  for (const v of st.videos) $('source').append(new Option(v.title, v.id));
  $('source').addEventListener('change', () => chooseSource($('source').value).catch((e) => show(e.message)));
  st.sel = wordSelection($('source-words'), {
    onChange: (sel) => {
      if (!sel) return;
      st.in = st.words[sel[0]].start;
      st.out = st.words[sel[1]].end;
      paintRange();
    },
  });
  $('set-in').addEventListener('click', () => {
    st.in = $('source-player').currentTime;
    paintRange();
  });
  $('set-out').addEventListener('click', () => {
    st.out = $('source-player').currentTime;
    paintRange();
  });
  $('add-clip').addEventListener('click', () => addClip().catch((e) => show(e.message)));
  $('export').addEventListener('click', exportProject);
  $('project').hidden = false;
  if (st.videos.length > 0) await chooseSource(st.videos[0].id);
  const latest = st.project.latestExport;
  if (latest?.state === 'rendering') follow(latest.id).catch((e) => show(e.message));
  else if (latest) showExport(latest);
  document.body.dataset.ready = 'true';
}

main().catch((e) => show(e.message));
