// The watch page (a module): the video with its caption track, and beside it the transcript as
// words that follow the media. Works for members and, through the viewing gates, for anyone with
// the link: a share password is asked for here and exchanged for the unlock cookie.
// Word times come from the caption cues (each cue is cut at word boundaries by the engine); inside
// a cue, a word's share of the cue's time is its share of the cue's characters.

import { $, api, localUrl, mediaUrl, pollWithBackoff, session, signInHref } from './common.js';

const videoId = location.pathname.split('/').pop();
const player = $('player');
const words = [];
let current = null;
const search = { hits: [], at: -1 };

function show(text) {
  const m = $('message');
  m.textContent = text;
  m.hidden = !text;
}

function captionState(text, state) {
  $('caption-state').textContent = text;
  $('caption-state').dataset.state = state;
}

/** Splits cues into timed words and renders them, one paragraph per cue. */
function renderTranscript(cues) {
  const box = $('transcript');
  box.replaceChildren();
  words.length = 0;
  for (const cue of cues) {
    const tokens = cue.text
      .replace(/<[^>]*>/g, '')
      .split(/\s+/)
      .filter(Boolean);
    const total = tokens.reduce((n, t) => n + t.length + 1, 0);
    const span = cue.endTime - cue.startTime;
    const p = document.createElement('p');
    let at = cue.startTime;
    for (const [i, token] of tokens.entries()) {
      const end = i === tokens.length - 1 ? cue.endTime : at + (span * (token.length + 1)) / total;
      const w = document.createElement('span');
      w.className = 'w';
      w.textContent = token;
      w.dataset.start = at.toFixed(3);
      w.dataset.end = end.toFixed(3);
      p.append(w, ' ');
      words.push({ el: w, start: at, end, key: normalize(token) });
      at = end;
    }
    box.append(p);
  }
  if (words.length === 0) box.textContent = 'No words in these captions.';
}

const normalize = (s) => s.toLocaleLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/** The word being spoken at `t`: the last word starting at or before t, if t is before its end. */
function wordAt(t) {
  let lo = 0;
  let hi = words.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (words[mid].start <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && t < words[found].end ? words[found] : null;
}

function follow() {
  const w = wordAt(player.currentTime);
  if (w === current) return;
  current?.el.removeAttribute('aria-current');
  current = w;
  if (w) {
    w.el.setAttribute('aria-current', 'true');
    if (!player.paused) w.el.scrollIntoView({ block: 'nearest' });
  }
}

function seek(t) {
  player.currentTime = Math.max(0, t);
  follow();
}

function runSearch() {
  for (const h of search.hits) h.el.classList.remove('hit', 'hit-now');
  const q = normalize($('search').value);
  search.hits = q ? words.filter((w) => w.key.includes(q)) : [];
  search.at = -1;
  for (const h of search.hits) h.el.classList.add('hit');
  $('hits').textContent = q ? `${search.hits.length} found` : '';
  if (search.hits.length > 0) jump(1);
}

function jump(step) {
  if (search.hits.length === 0) return;
  search.hits[search.at]?.el.classList.remove('hit-now');
  search.at = (search.at + step + search.hits.length) % search.hits.length;
  const hit = search.hits[search.at];
  hit.el.classList.add('hit-now');
  hit.el.scrollIntoView({ block: 'nearest' });
  $('hits').textContent = `${search.at + 1} of ${search.hits.length}`;
  seek(hit.start);
}

function wireControls() {
  player.addEventListener('timeupdate', follow);
  player.addEventListener('seeked', follow);
  $('transcript').addEventListener('click', (e) => {
    const w = e.target.closest('.w');
    if (w) seek(Number(w.dataset.start));
  });
  $('search').addEventListener('input', runSearch);
  $('search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    jump(1);
  });
  $('search').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      jump(e.shiftKey ? -1 : 1);
    }
  });
  $('next-hit').addEventListener('click', () => jump(1));
  $('prev-hit').addEventListener('click', () => jump(-1));
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    // Typing, buttons, links and the player's own controls keep their keys.
    if (e.target.closest('input, textarea, select, button, a, video')) return;
    if (e.key === '/') {
      e.preventDefault();
      $('search').focus();
    } else if (e.key === ' ') {
      e.preventDefault();
      if (player.paused) player.play().catch(() => {});
      else player.pause();
    } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      e.preventDefault();
      seek(player.currentTime + (e.key === 'ArrowLeft' ? -5 : 5));
    }
  });
}

function addTrack(captionUrl) {
  const track = player.querySelector('track');
  track.default = true;
  track.addEventListener('load', () => {
    renderTranscript(Array.from(track.track.cues ?? []));
    captionState('Captions ready', 'ready');
    document.body.dataset.transcript = 'ready';
    follow();
  });
  track.addEventListener('error', () => captionState('The captions could not be loaded.', 'error'));
  track.src = localUrl(captionUrl);
  track.track.mode = 'showing';
}

async function awaitCaptions() {
  await pollWithBackoff(async () => {
    const s = await api(`/api/videos/${videoId}/captions`);
    if (s.status === 'ready') {
      addTrack(s.captionUrl);
      return true;
    }
    if (s.status === 'processing') {
      captionState('Captions are being made; this page updates by itself.', 'processing');
      $('transcript').textContent = 'The transcript appears here when the captions are ready.';
      return false;
    }
    captionState(`No captions for this video${s.error ? ` (${s.error})` : ''}.`, 'none');
    $('transcript').textContent = 'No transcript.';
    return true;
  });
}

async function open(user) {
  const { access, title, member } = await api(`/app/videos/${videoId}/access`);
  if (access === 'password') {
    $('unlock').hidden = false;
    $('share-password').focus();
    return;
  }
  if (access !== 'open') {
    const why = {
      private: 'This video is private.',
      expired: 'This share link has expired.',
      missing: 'There is no video at this address.',
    };
    show(why[access]);
    if (access === 'private' && !user) $('signin').hidden = false;
    return;
  }
  $('unlock').hidden = true;
  show('');
  $('title').textContent = title;
  document.title = title;
  if (member) {
    $('download').href = `/api/videos/${videoId}/download`;
    $('download').hidden = false;
  } else if (!user) {
    $('download-signup').href = signInHref();
    $('download-guest').hidden = false;
  }
  player.src = mediaUrl(`/media/videos/${videoId}/media`);
  $('watch').hidden = false;
  document.body.dataset.ready = 'true';
  await awaitCaptions();
}

async function main() {
  wireControls();
  const user = await session().catch(() => null);
  if (user) $('library').hidden = false;
  else {
    $('signin').href = signInHref();
    $('signin').hidden = false;
  }
  $('unlock').addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await api(`/api/videos/${videoId}/unlock`, {
        method: 'POST',
        body: JSON.stringify({ password: $('share-password').value }),
      });
      $('share-password').value = '';
      await open(user);
    } catch (err) {
      show(err.code === 'SHARE_PASSWORD_WRONG' ? 'Wrong password; try again.' : err.message);
      $('share-password').value = '';
      $('share-password').focus();
    }
  });
  await open(user);
}

main().catch((e) => show(e.message));
