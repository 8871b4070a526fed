// The watch page (a module): the video with its caption track, and beside it the transcript as
// words that follow the media. Works for members and, through the viewing gates, for anyone with
// the link: a share password is asked for here and exchanged for the unlock cookie.
// Word times are the engine's own, from the video's transcript. Captions an owner sent have no
// words: there a word's share of its cue's time is its share of the cue's characters.
// The transcript is one tab stop (a roving tabindex): arrow keys move between words, Enter seeks.
// Times are whole milliseconds and a word is the half-open [start, end): where one word ends the
// next begins, and a seek to a word's start lands in that word, never in the one before it (the
// media's clock may read a hair under what it was set to, so it is rounded to the millisecond).

import {
  $,
  api,
  claimGuestRecordings,
  localUrl,
  mediaUrl,
  percent,
  playerFor,
  pollWithBackoff,
  session,
  showAccount,
  signInHref,
} from './common.js';

const videoId = location.pathname.split('/').pop();
/** `<video>`, or `<audio>` for a recording with no picture (chosen once the gates let us see it). */
let player = $('player');
/** In reading order, for search and the arrow keys. */
const words = [];
/** By start time, for finding the word being spoken. */
let timeline = [];
let current = null;
let tabStop = null;
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

/** Seconds to whole milliseconds: every time the page compares is one of these. */
const ms = (sec) => Math.round(sec * 1000);
const seconds = (t) => (t / 1000).toFixed(3);

/** `ref`: the word's place in the transcript (segment, word), which the edit draft names it by. */
function addWord(p, text, startSec, endSec, space, ref) {
  const start = ms(startSec);
  const end = Math.max(start, ms(endSec));
  const w = document.createElement('span');
  w.className = 'w';
  w.textContent = text;
  w.tabIndex = -1;
  w.dataset.start = seconds(start);
  w.dataset.end = seconds(end);
  w.dataset.seg = String(ref.segment);
  w.dataset.word = String(ref.word);
  if (space && p.childNodes.length > 0) p.append(' ');
  p.append(w);
  words.push({ el: w, start, end, key: normalize(text) });
}

/** A segment's words as the engine timed them; the segment text says which are glued ("Americans" + ","). */
function timedWords(p, seg, segment) {
  let cursor = 0;
  for (const [word, w] of seg.words.entries()) {
    const at = seg.text.indexOf(w.text, cursor);
    const glued = at >= 0 && at === cursor;
    if (at >= 0 && seg.text.slice(cursor, at).trim() === '') cursor = at + w.text.length;
    addWord(p, w.text, w.start, w.end, !glued, { segment, word });
  }
}

/** No word times: each word gets its share of the segment's time by characters. */
function splitWords(p, seg, segment) {
  const tokens = seg.text.split(/\s+/).filter(Boolean);
  const total = tokens.reduce((n, t) => n + t.length + 1, 0);
  const span = seg.end - seg.start;
  let at = seg.start;
  for (const [i, token] of tokens.entries()) {
    const end = i === tokens.length - 1 ? seg.end : at + (span * (token.length + 1)) / total;
    addWord(p, token, at, end, true, { segment, word: i });
    at = end;
  }
}

/** Renders the transcript's segments as paragraphs of timed words. */
function renderTranscript(segments) {
  const box = $('transcript');
  box.replaceChildren();
  words.length = 0;
  current = null;
  for (const [i, seg] of segments.entries()) {
    const p = document.createElement('p');
    if (seg.words.length > 0) timedWords(p, seg, i);
    else splitWords(p, seg, i);
    if (p.childNodes.length > 0) box.append(p);
  }
  // By start, and among equal starts by end: an empty word never hides the one that starts with it.
  timeline = words.slice().sort((a, b) => a.start - b.start || a.end - b.end);
  tabStop = null;
  if (words.length > 0) moveTabStop(words[0]);
  else box.textContent = 'No words in these captions.';
  document.body.dataset.wordTimes = segments.some((s) => s.words.length > 0) ? 'engine' : 'cues';
}

/** The one word in the tab order. */
function moveTabStop(w) {
  if (tabStop) {
    tabStop.el.tabIndex = -1;
    tabStop.el.removeAttribute('aria-describedby');
  }
  tabStop = w;
  w.el.tabIndex = 0;
  // Only the word in the tab order tells a screen reader how to move on from it.
  w.el.setAttribute('aria-describedby', 'transcript-keys');
}

const normalize = (s) => s.toLocaleLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

/** The word being spoken at `t` (ms): the last word starting at or before t, if t is before its end. */
function wordAt(t) {
  let lo = 0;
  let hi = timeline.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (timeline[mid].start <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && t < timeline[found].end ? timeline[found] : null;
}

function follow() {
  const w = wordAt(ms(player.currentTime));
  if (w === current) return;
  current?.el.removeAttribute('aria-current');
  current = w;
  if (w) {
    w.el.setAttribute('aria-current', 'true');
    // Tab comes back to where the media is, unless the reader is moving through the words themselves.
    if (!$('transcript').contains(document.activeElement)) moveTabStop(w);
    if (!player.paused) w.el.scrollIntoView({ block: 'nearest' });
  }
}

/** To `t` ms: the word that starts there is the one highlighted. */
function seek(t) {
  player.currentTime = Math.max(0, t) / 1000;
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

function wirePlayer() {
  player.addEventListener('timeupdate', follow);
  player.addEventListener('seeked', follow);
}

function wireControls() {
  $('transcript').addEventListener('click', (e) => {
    const el = e.target.closest('.w');
    if (!el) return;
    const w = words.find((x) => x.el === el);
    if (!w) return;
    moveTabStop(w);
    seek(w.start);
  });
  $('transcript').addEventListener('keydown', (e) => {
    const i = words.findIndex((x) => x.el === e.target);
    if (i < 0 || e.ctrlKey || e.metaKey || e.altKey) return;
    const to = {
      ArrowRight: i + 1,
      ArrowDown: i + 1,
      ArrowLeft: i - 1,
      ArrowUp: i - 1,
      Home: 0,
      End: words.length - 1,
    }[e.key];
    if (e.key === 'Enter') seek(words[i].start);
    else if (to === undefined) return;
    else if (words[to]) {
      moveTabStop(words[to]);
      words[to].el.focus();
    }
    // The page's arrow keys seek the media; inside the transcript they move between words.
    e.preventDefault();
    e.stopPropagation();
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
      seek(ms(player.currentTime) + (e.key === 'ArrowLeft' ? -5000 : 5000));
    }
  });
}

function addTrack(captionUrl) {
  const track = player.querySelector('track');
  track.default = true;
  track.addEventListener('load', async () => {
    let segments;
    let source = 'uploaded';
    try {
      ({ segments, source } = await api(`/api/videos/${videoId}/transcript`));
    } catch {
      // The track is here even if its transcript is not: its cues, without word times.
      segments = Array.from(track.track.cues ?? [], (c) => ({
        start: c.startTime,
        end: c.endTime,
        text: c.text.replace(/<[^>]*>/g, ''),
        words: [],
      }));
    }
    renderTranscript(segments);
    explainModel(source);
    captionState('Captions ready', 'ready');
    document.body.dataset.transcript = 'ready';
    follow();
  });
  track.addEventListener('error', () => captionState('The captions could not be loaded.', 'error'));
  track.src = localUrl(captionUrl);
  track.track.mode = 'showing';
}

/**
 * A first look runs a random-weight model, whose words are meaningless (often one made-up word):
 * the page says so, and how to get real words, rather than leave the read-along looking broken.
 */
function explainModel(source) {
  const model = document.querySelector('meta[name="model"]')?.content ?? '';
  const note = $('model-note');
  note.hidden = !(source === 'generated' && model.startsWith('synthetic-'));
  if (note.hidden) return;
  $('model-name').textContent = model;
}

async function awaitCaptions() {
  // Checked more often while captions are being made, so the percentage moves.
  await pollWithBackoff(
    async () => {
      const s = await api(`/api/videos/${videoId}/captions`);
      if (s.status === 'ready') {
        addTrack(s.captionUrl);
        return true;
      }
      if (s.status === 'processing') {
        captionState(`Captions are being made${percent(s.progress)}; this page updates by itself.`, 'processing');
        $('transcript').textContent = 'The transcript appears here when the captions are ready.';
        return false;
      }
      captionState(`No captions for this video${s.error ? ` (${s.error})` : ''}.`, 'none');
      $('transcript').textContent = 'No transcript.';
      return true;
    },
    undefined,
    4000,
  );
}

async function open(user) {
  const { access, title, member, mediaType } = await api(`/app/videos/${videoId}/access`);
  if (access === 'password') {
    $('unlock').hidden = false;
    $('share-password').focus();
    return;
  }
  if (access !== 'open') {
    const why = {
      private: user ? 'This video is private.' : 'This video is private. If it is yours, sign in to watch it.',
      expired: 'This share link has expired.',
      missing: 'There is no video at this address. Check the link, or find your recordings in your videos.',
    };
    // The message alone: no player, no transcript for a video that is not there to see.
    $('title').textContent = access === 'missing' ? 'Video not found' : 'Watch';
    show(why[access]);
    return;
  }
  $('unlock').hidden = true;
  show('');
  player = playerFor('player', mediaType?.startsWith('audio/') ?? false);
  document.body.dataset.player = player.localName;
  wirePlayer();
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
  // Signed up from this page after recording as a guest in this tab: the recordings become theirs.
  if (user) await claimGuestRecordings();
  showAccount(user);
  $('library').hidden = !user;
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
