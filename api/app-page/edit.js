// The watch page's edit mode (a module of its own beside watch.js): for members, cut a video by its
// transcript. Select words as in a document (select.js: drag, Shift+click, Shift+arrows, on touch a
// second tap extends, or the handles), Delete or Strike strikes them through; one Undo and Redo.
// "Shorten pauses" and "Remove fillers" show the server's suggestions (GET
// /api/videos/{id}/edit-suggestions) as a proposal to keep or discard. What is struck is a draft kept
// on the server per video (/api/videos/{id}/edit-draft), saved a moment after each change, so a
// reload or another device finds it, and a tab coming back to the front takes a newer one; leaving
// before it is saved asks first. The toolbar always says where the draft stands, the cuts (a
// pending proposal counted) and the new duration, with a list of the cuts, each removable. The player previews the edit by skipping struck ranges as it plays; nothing renders
// until "Save as new video", which shows the render's progress and then opens the new video.
// It reads only the transcript watch.js draws (`.w` spans with data-start/end, data-seg/word).

import { $, api, clockTenths, icon, pollWithBackoff } from './common.js';
import { wordSelection } from './select.js';

const videoId = location.pathname.split('/').pop();
/** watch.js may swap the <video> for an <audio>: looked up when needed. */
const player = () => $('player');
const PAUSE_OVER = 0.8;
const PAUSE_TO = 0.3;
/** Seconds: a skip lands just past the cut, and cuts closer than this are one. */
const EPS = 0.01;
/** A change is saved this long after the last one (ms): typing Delete five times is one save. */
const SAVE_DELAY = 700;
/**
 * Saves are at least this far apart (ms): at most 20 a minute, a sixth of an account's request
 * budget (RATE_LIMIT_MAX, 120 a minute), however fast the edits come.
 */
const SAVE_EVERY = 3000;

const ed = {
  on: false,
  words: [],
  /** `segment:word` → index into words. */
  byRef: new Map(),
  /** Struck word indexes; kept pause cuts by their start (ms). */
  struck: new Set(),
  pauses: new Map(),
  /** A proposal not yet kept: {kind, words: Set, pauses: Map, note}. */
  proposal: null,
  undo: [],
  redo: [],
  /** Set by the arrow keys: the focus they move drags the selection with it. */
  keyNav: false,
  shiftKey: false,
  frame: 0,
  suggestions: null,
  sel: null,
  /** The draft on the server: its JSON as last saved, the video rendered from it, the save in flight. */
  draft: { saved: null, rendered: null, updatedAt: null, state: 'none', timer: 0, inflight: null, lastAt: 0 },
};

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const secs = (t) => `${t.toFixed(1)} s`;
const ICONS = {
  undo: 'M5 3 2 6l3 3M2 6h8a4 4 0 0 1 0 8H7',
  redo: 'm11 3 3 3-3 3m3-3H6a4 4 0 0 0 0 8h3',
  pause: 'M5 3v10M11 3v10',
};

function toolbar() {
  const bar = document.createElement('div');
  bar.id = 'edit-bar';
  bar.className = 'edit-bar';
  bar.setAttribute('role', 'toolbar');
  bar.setAttribute('aria-label', 'Edit');
  bar.innerHTML = `
    <button type="button" id="edit-toggle" aria-pressed="false">Edit</button>
    <span id="edit-tools" hidden>
      <button type="button" id="edit-strike" aria-keyshortcuts="Delete">Strike</button>
      <button type="button" id="edit-undo" aria-label="Undo" aria-keyshortcuts="Control+Z"><span
        class="wide">Undo</span></button>
      <button type="button" id="edit-redo" aria-label="Redo" aria-keyshortcuts="Control+Shift+Z"><span
        class="wide">Redo</span></button>
      <button type="button" id="edit-pauses"><span class="wide">Shorten pauses</span><span class="narrow">Pauses</span></button>
      <button type="button" id="edit-fillers"><span class="wide">Remove fillers</span><span class="narrow">Fillers</span></button>
      <button type="button" id="edit-save" class="primary">Save<span class="wide"> as new video</span></button>
      <progress id="edit-progress" max="1" value="0" hidden></progress>
    </span>
    <span id="edit-state" class="edit-state" aria-live="polite"><span id="edit-draft"></span>
      <span id="edit-summary"></span></span>`;
  bar.querySelector('#edit-undo').prepend(icon(ICONS.undo));
  bar.querySelector('#edit-redo').prepend(icon(ICONS.redo));
  const proposal = document.createElement('div');
  proposal.id = 'edit-proposal';
  proposal.className = 'edit-proposal';
  proposal.hidden = true;
  proposal.innerHTML = `<span id="edit-proposal-text" role="status"></span>
    <button type="button" id="edit-keep">Keep</button>
    <button type="button" id="edit-discard">Discard</button>
    <button type="button" id="edit-close">Close</button>`;
  const cuts = document.createElement('details');
  cuts.id = 'edit-cuts-box';
  cuts.className = 'edit-cuts';
  cuts.hidden = true;
  cuts.innerHTML = '<summary id="edit-cuts-title">Cuts</summary><ol id="edit-cuts"></ol>';
  // Above the search, so that from the search Tab still goes straight into the words.
  const search = $('search-form').closest('search') ?? $('transcript');
  search.before(bar, proposal);
  $('transcript').after(cuts);
  // The keys of the edit mode, beside the transcript's own (hidden on touch screens, as theirs are).
  const keys = document.createElement('p');
  keys.id = 'edit-keys';
  keys.className = 'keys';
  keys.hidden = true;
  keys.innerHTML =
    'Editing: drag or <kbd>Shift</kbd>+<kbd>←</kbd>/<kbd>→</kbd> select · <kbd>Delete</kbd> strike · ' +
    '<kbd>Ctrl</kbd>+<kbd>Z</kbd> undo · <kbd>Esc</kbd> clear';
  ($('transcript-keys') ?? cuts).after(keys);
}

function collectWords() {
  ed.byRef.clear();
  ed.words = [...$('transcript').querySelectorAll('.w')].map((el, i) => {
    el.dataset.i = String(i);
    const ref = { segment: Number(el.dataset.seg), word: Number(el.dataset.word) };
    ed.byRef.set(`${ref.segment}:${ref.word}`, i);
    return { el, start: Number(el.dataset.start), end: Number(el.dataset.end), ref };
  });
}

function duration() {
  const d = player().duration;
  if (Number.isFinite(d) && d > 0) return d;
  return ed.words.at(-1)?.end ?? 0;
}

/** Struck words as time ranges, joined where they touch. */
function wordRanges(set) {
  const out = [];
  let i = 0;
  while (i < ed.words.length) {
    if (!set.has(i)) {
      i++;
      continue;
    }
    let j = i;
    while (set.has(j + 1)) j++;
    out.push({ start: ed.words[i].start, end: ed.words[j].end });
    i = j + 1;
  }
  return out;
}

function merge(cuts) {
  cuts.sort((a, b) => a.start - b.start);
  const out = [];
  for (const c of cuts) {
    const last = out.at(-1);
    if (last && c.start <= last.end + EPS) last.end = Math.max(last.end, c.end);
    else out.push({ start: c.start, end: c.end });
  }
  const d = Number.isFinite(player().duration) ? player().duration : Number.POSITIVE_INFINITY;
  return out.map((c) => ({ start: Math.max(0, c.start), end: Math.min(d, c.end) })).filter((c) => c.end > c.start);
}

/**
 * The ranges the edit removes, in order, joined where they touch. Saving sends only what was kept
 * (`withProposal` false): a proposal neither kept nor discarded is not part of the edit. The preview
 * plays it as if kept, so it can be heard before choosing.
 */
export function removedRanges(withProposal = false) {
  const p = withProposal ? ed.proposal : null;
  const struck = new Set([...ed.struck, ...(p?.words ?? [])]);
  return merge([...wordRanges(struck), ...ed.pauses.values(), ...(p?.pauses.values() ?? [])]);
}

/** A draft in one spelling (key order included), so that two equal drafts compare equal as JSON. */
const canon = (d) => ({
  words: d.words.map((r) => ({ segment: r.segment, word: r.word })),
  pauses: d.pauses.map((p) => ({
    start: p.start,
    end: p.end,
    ...(p.from !== undefined ? { from: p.from } : {}),
    ...(p.to !== undefined ? { to: p.to } : {}),
  })),
});

/** The draft as the server keeps it: words by transcript position, pauses in time order. */
function draftBody() {
  const words = [...ed.struck]
    .sort((a, b) => a - b)
    .map((i) => ed.words[i].ref)
    .filter((r) => Number.isInteger(r.segment) && Number.isInteger(r.word));
  const pauses = [...ed.pauses.values()].sort((a, b) => a.start - b.start);
  return canon({ words, pauses });
}

const isEmpty = (body) => body.words.length === 0 && body.pauses.length === 0;

/** Unsaved: the draft differs from the server's (an empty one where the server has none is not a change). */
function dirty() {
  const body = draftBody();
  if (ed.draft.saved === null) return !isEmpty(body);
  return JSON.stringify(body) !== ed.draft.saved;
}

function scheduleSave() {
  clearTimeout(ed.draft.timer);
  const wait = Math.max(SAVE_DELAY, ed.draft.lastAt + SAVE_EVERY - Date.now());
  ed.draft.timer = setTimeout(() => saveDraft().catch(() => {}), wait);
  paintState();
}

/** PUTs the draft as it stands (one save at a time; a change during a save saves again after it). */
async function saveDraft(renderedVideoId = null) {
  clearTimeout(ed.draft.timer);
  if (ed.draft.inflight) await ed.draft.inflight.catch(() => {});
  if (!dirty() && renderedVideoId === null) {
    paintState();
    return;
  }
  const body = draftBody();
  const json = JSON.stringify(body);
  ed.draft.state = 'saving';
  ed.draft.lastAt = Date.now();
  paintState();
  ed.draft.inflight = api(`/api/videos/${videoId}/edit-draft`, {
    method: 'PUT',
    body: JSON.stringify({ ...body, renderedVideoId }),
  });
  try {
    const saved = await ed.draft.inflight;
    ed.draft.saved = json;
    ed.draft.rendered = saved.renderedVideoId;
    ed.draft.updatedAt = saved.updatedAt;
    ed.draft.state = 'saved';
  } catch (err) {
    ed.draft.state = 'error';
    // Tried again in a while, and at the next change.
    ed.draft.timer = setTimeout(() => saveDraft().catch(() => {}), 5000);
    throw err;
  } finally {
    ed.draft.inflight = null;
    paintState();
  }
  // Changed while it was saving: saved again, in turn.
  if (dirty()) scheduleSave();
}

/** The server's draft in place of the page's (at load, and when another device saved one since). */
function takeDraft(got) {
  ed.struck = new Set();
  ed.pauses = new Map();
  for (const r of got.draft?.words ?? []) {
    const i = ed.byRef.get(`${r.segment}:${r.word}`);
    if (i !== undefined) ed.struck.add(i);
  }
  for (const p of got.draft?.pauses ?? []) ed.pauses.set(Math.round(p.start * 1000), p);
  // As the page would send it: words it no longer has (the transcript replaced) count as a change.
  ed.draft.saved = got.draft ? JSON.stringify(canon(got.draft)) : null;
  ed.draft.rendered = got.renderedVideoId;
  ed.draft.updatedAt = got.updatedAt;
  ed.draft.state = got.draft ? 'saved' : 'none';
  return got.draft !== null && !isEmpty(got.draft);
}

async function loadDraft() {
  return takeDraft(await api(`/api/videos/${videoId}/edit-draft`));
}

/**
 * Back to this tab with nothing unsaved: a draft saved since on another device replaces this one
 * (an Undo brings this one back), so an old tab never writes over newer work.
 */
async function refreshDraft() {
  if (dirty() || ed.draft.inflight) return;
  const got = await api(`/api/videos/${videoId}/edit-draft`);
  if (got.updatedAt === ed.draft.updatedAt || dirty() || ed.draft.inflight) return;
  ed.undo.push(snapshot());
  ed.redo.length = 0;
  ed.proposal = null;
  takeDraft(got);
  if (ed.struck.size + ed.pauses.size > 0 && !ed.on) setMode(true);
  else paint();
}

/** The toolbar's line: where the draft stands, the cuts (a pending proposal counted) and the new length. */
function paintState() {
  const draft = $('edit-draft');
  const ranges = removedRanges(true);
  const kept = removedRanges(false);
  const proposed = ed.proposal ? merge([...wordRanges(ed.proposal.words), ...ed.proposal.pauses.values()]) : [];
  draft.replaceChildren();
  const changed = dirty();
  let state = 'saved';
  if (changed && ed.draft.state === 'error') state = 'error';
  else if (changed || ed.draft.state === 'saving') state = 'saving';
  else if (ed.draft.saved === null) state = 'none';
  document.body.dataset.draft = state;
  if (state === 'error') draft.textContent = 'Draft not saved (retrying)';
  else if (state === 'saving') draft.textContent = 'Saving draft…';
  else if (kept.length === 0) draft.textContent = ed.on ? 'No cuts yet' : '';
  else if (ed.draft.rendered) {
    const a = document.createElement('a');
    a.href = `/app/videos/${ed.draft.rendered}`;
    a.textContent = 'the new video';
    draft.append('Draft saved and rendered: ', a);
  } else draft.textContent = 'Draft saved, not rendered';
  const cut = ranges.reduce((s, r) => s + r.end - r.start, 0);
  const withProposal = proposed.length > 0 ? ` (${proposed.length} proposed)` : '';
  $('edit-summary').textContent =
    ranges.length === 0
      ? ''
      : `${plural(ranges.length, 'cut')}${withProposal} · ${clockTenths(duration())} → ${clockTenths(duration() - cut)}`;
  $('edit-bar').dataset.cuts = String(ranges.length);
}

function paintCuts() {
  const ranges = removedRanges(true);
  const kept = removedRanges(false);
  const list = $('edit-cuts');
  list.replaceChildren();
  $('edit-cuts-box').hidden = ranges.length === 0;
  $('edit-cuts-title').textContent =
    `${plural(ranges.length, 'cut')}, ${secs(ranges.reduce((s, r) => s + r.end - r.start, 0))}`;
  for (const r of ranges) {
    const li = document.createElement('li');
    const isProposed = !kept.some((k) => k.start < r.end && k.end > r.start);
    const text = ed.words
      .filter((w) => (w.start + w.end) / 2 >= r.start && (w.start + w.end) / 2 <= r.end)
      .map((w) => w.el.textContent)
      .join(' ');
    const time = document.createElement('button');
    time.type = 'button';
    time.className = 'link';
    time.textContent = `${clockTenths(r.start)}–${clockTenths(r.end)}`;
    time.addEventListener('click', () => {
      player().currentTime = Math.max(0, r.start - 1);
    });
    const what = document.createElement('span');
    what.textContent = ` ${secs(r.end - r.start)} · ${text ? `“${[...text].length > 60 ? `${[...text].slice(0, 57).join('')}…` : text}”` : 'pause'}${isProposed ? ' (proposed)' : ''} `;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', `Remove the cut ${clockTenths(r.start)} to ${clockTenths(r.end)}`);
    remove.addEventListener('click', () => removeCut(r));
    li.append(time, what, remove);
    list.append(li);
  }
}

function paint() {
  const proposed = ed.proposal?.words ?? new Set();
  const sel = ed.sel?.range ?? null;
  for (const [i, w] of ed.words.entries()) {
    w.el.classList.toggle('struck', ed.struck.has(i));
    w.el.classList.toggle('proposed', proposed.has(i));
    const selected = ed.on && sel !== null && i >= sel[0] && i <= sel[1];
    w.el.classList.toggle('sel', selected);
    // The space to the next selected word is selected too, as a document's selection looks.
    w.el.classList.toggle('sel-join', selected && i < sel[1] && w.el.nextElementSibling === ed.words[i + 1]?.el);
    if (ed.on) w.el.setAttribute('aria-selected', String(selected));
    else w.el.removeAttribute('aria-selected');
  }
  for (const gap of $('transcript').querySelectorAll('.gap')) gap.remove();
  for (const [map, cls] of [
    [ed.pauses, 'gap struck'],
    [ed.proposal?.pauses ?? new Map(), 'gap proposed'],
  ]) {
    for (const r of map.values()) {
      const gap = document.createElement('span');
      gap.className = cls;
      gap.append(icon(ICONS.pause));
      const label =
        r.from !== undefined && r.to !== undefined ? `${secs(r.from)} → ${secs(r.to)}` : `−${secs(r.end - r.start)}`;
      gap.append(` ${label}`);
      gap.setAttribute('aria-label', `pause ${label}`);
      const i = wordBefore(r.start);
      if (i >= 0) ed.words[i].el.after(gap);
      else $('transcript').querySelector('p')?.prepend(gap);
    }
  }
  $('edit-undo').disabled = ed.undo.length === 0;
  $('edit-redo').disabled = ed.redo.length === 0;
  $('edit-strike').disabled = sel === null;
  paintProposal();
  paintState();
  paintCuts();
  // Chips added or gone move the words: the touch handles follow them.
  ed.sel?.placeHandles();
}

/** The last word that starts before `t`: the one a pause at `t` follows. */
function wordBefore(t) {
  let lo = 0;
  let hi = ed.words.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ed.words[mid].start < t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function paintProposal() {
  const p = ed.proposal;
  $('edit-proposal').hidden = p === null;
  if (!p) return;
  const n = p.words.size + p.pauses.size;
  let text = p.note;
  if (!text && p.kind === 'pauses') {
    text =
      n === 0
        ? `No pauses over ${secs(PAUSE_OVER)}.`
        : `${plural(n, 'pause')} over ${secs(PAUSE_OVER)} to shorten to ${secs(PAUSE_TO)}.`;
  } else if (!text) text = n === 0 ? 'No filler words found.' : `${plural(n, 'filler word')} to remove.`;
  $('edit-proposal-text').textContent = text;
  // Nothing proposed: nothing to keep or discard, only to close.
  $('edit-keep').hidden = n === 0;
  $('edit-discard').hidden = n === 0;
  $('edit-close').hidden = n > 0 || p.loading === true;
}

const snapshot = () => ({ struck: new Set(ed.struck), pauses: new Map(ed.pauses) });

/** Every change goes through here, so undo and redo restore it whole, and the draft is saved. */
function apply(change) {
  const before = snapshot();
  change();
  ed.undo.push(before);
  ed.redo.length = 0;
  paint();
  scheduleSave();
}

function restore(from, to) {
  const snap = from.pop();
  if (!snap) return;
  to.push(snapshot());
  ed.struck = snap.struck;
  ed.pauses = snap.pauses;
  ed.proposal = null;
  paint();
  scheduleSave();
}

function strikeSelection() {
  const sel = ed.sel.range;
  if (sel === null) return;
  const [a, b] = sel;
  const all = Array.from({ length: b - a + 1 }, (_, k) => a + k);
  // Striking words already struck brings them back.
  const restoreThem = all.every((i) => ed.struck.has(i));
  apply(() => {
    for (const i of all) {
      if (restoreThem) ed.struck.delete(i);
      else ed.struck.add(i);
    }
  });
  ed.sel.clear();
}

/** The cut list's Remove: its words come back, its pauses go, kept or proposed. */
function removeCut(r) {
  const inside = (w) => (w.start + w.end) / 2 >= r.start - EPS && (w.start + w.end) / 2 <= r.end + EPS;
  const overlaps = (p) => p.start < r.end + EPS && p.end > r.start - EPS;
  if (ed.proposal) {
    for (const i of [...ed.proposal.words]) if (inside(ed.words[i])) ed.proposal.words.delete(i);
    for (const [k, p] of [...ed.proposal.pauses]) if (overlaps(p)) ed.proposal.pauses.delete(k);
    if (ed.proposal.words.size + ed.proposal.pauses.size === 0) ed.proposal = null;
  }
  apply(() => {
    for (const i of [...ed.struck]) if (inside(ed.words[i])) ed.struck.delete(i);
    for (const [k, p] of [...ed.pauses]) if (overlaps(p)) ed.pauses.delete(k);
  });
}

function suggestions() {
  ed.suggestions ??= api(`/api/videos/${videoId}/edit-suggestions?pauseOver=${PAUSE_OVER}&pauseTo=${PAUSE_TO}`).catch(
    (err) => {
      ed.suggestions = null;
      throw err;
    },
  );
  return ed.suggestions;
}

async function propose(kind) {
  const words = new Set();
  const pauses = new Map();
  let note = '';
  // The first ask analyses the audio (about a second a minute): say so meanwhile.
  ed.proposal = { kind, words, pauses, note: kind === 'pauses' ? 'Finding pauses…' : 'Finding filler words…' };
  ed.proposal.loading = true;
  const pending = ed.proposal;
  paint();
  try {
    const s = await suggestions();
    if (kind === 'fillers') {
      if (!s.fillers.supported) note = s.fillers.reason || 'Filler words cannot be found in this transcript.';
      for (const c of s.fillers.supported ? s.fillers.cuts : []) {
        for (const r of c.words) {
          const i = ed.byRef.get(`${r.segment}:${r.word}`);
          if (i !== undefined && !ed.struck.has(i)) words.add(i);
        }
      }
    } else {
      for (const p of s.pauses) {
        const key = Math.round(p.start * 1000);
        if (!ed.pauses.has(key)) pauses.set(key, { start: p.start, end: p.end, from: p.from, to: p.to });
      }
    }
  } catch (err) {
    note = `Suggestions are not available: ${err.message}`;
  }
  // Closed or asked for again meanwhile: that wins.
  if (ed.proposal !== pending) return;
  ed.proposal = { kind, words, pauses, note };
  paint();
}

function keepProposal() {
  const p = ed.proposal;
  if (!p) return;
  ed.proposal = null;
  apply(() => {
    for (const i of p.words) ed.struck.add(i);
    for (const [k, r] of p.pauses) ed.pauses.set(k, r);
  });
}

/** While playing in edit mode, a struck range is skipped: the preview, with no render. */
function previewLoop() {
  ed.frame = 0;
  const v = player();
  if (!ed.on || v.paused) return;
  const t = v.currentTime;
  for (const r of removedRanges(true)) {
    if (t >= r.start - EPS && t < r.end) {
      v.currentTime = r.end + EPS;
      break;
    }
  }
  ed.frame = requestAnimationFrame(previewLoop);
}

async function save() {
  const remove = removedRanges();
  if (remove.length === 0) {
    $('edit-summary').textContent = ed.proposal ? 'Keep the proposal to cut it.' : 'Strike something first.';
    return;
  }
  $('edit-save').disabled = true;
  const bar = $('edit-progress');
  bar.hidden = false;
  bar.value = 0;
  $('edit-summary').textContent = 'Rendering…';
  try {
    const made = await api(`/api/videos/${videoId}/trim`, { method: 'POST', body: JSON.stringify({ remove }) });
    document.body.dataset.editVideo = made.id;
    await pollWithBackoff(async () => {
      const r = await api(`/api/videos/${made.id}/render`);
      if (r.progress !== null) bar.value = r.progress;
      if (r.state === 'ready') return true;
      if (r.state === 'failed') throw new Error(r.error ?? 'The render failed.');
      return false;
    });
    bar.value = 1;
    // The draft now says which video it made, here and on any other device.
    await saveDraft(made.id);
    location.assign(`/app/videos/${made.id}`);
  } catch (err) {
    $('edit-summary').textContent = `Not saved: ${err.message}`;
    $('edit-save').disabled = false;
    bar.hidden = true;
  }
}

function setMode(on) {
  ed.on = on;
  $('edit-toggle').setAttribute('aria-pressed', String(on));
  $('edit-toggle').innerHTML = on ? 'Done<span class="wide"> editing</span>' : 'Edit';
  $('edit-tools').hidden = !on;
  $('edit-keys').hidden = !on;
  $('transcript').classList.toggle('editing', on);
  $('transcript').setAttribute('aria-multiselectable', String(on));
  document.body.dataset.editMode = String(on);
  if (!on) {
    ed.sel.clear();
    ed.proposal = null;
  }
  paint();
  if (on && !player().paused && !ed.frame) previewLoop();
}

function wire() {
  ed.sel = wordSelection($('transcript'), { isOn: () => ed.on, onChange: () => paint() });
  $('edit-toggle').addEventListener('click', () => setMode(!ed.on));
  $('edit-strike').addEventListener('click', strikeSelection);
  $('edit-undo').addEventListener('click', () => restore(ed.undo, ed.redo));
  $('edit-redo').addEventListener('click', () => restore(ed.redo, ed.undo));
  $('edit-pauses').addEventListener('click', () => propose('pauses'));
  $('edit-fillers').addEventListener('click', () => propose('fillers'));
  $('edit-keep').addEventListener('click', keepProposal);
  for (const id of ['edit-discard', 'edit-close']) {
    $(id).addEventListener('click', () => {
      ed.proposal = null;
      paint();
    });
  }
  $('edit-save').addEventListener('click', save);
  $('transcript').addEventListener(
    'keydown',
    (e) => {
      if (!ed.on) return;
      ed.shiftKey = e.shiftKey;
      ed.keyNav = /^(Arrow|Home$|End$)/.test(e.key);
      if (e.key === 'Delete' || e.key === 'Backspace') {
        e.preventDefault();
        e.stopPropagation();
        strikeSelection();
      } else if (e.key === 'Escape') ed.sel.clear();
    },
    true,
  );
  // watch.js moves the focus with the arrows; the selection follows it (and grows with Shift).
  $('transcript').addEventListener('focusin', (e) => {
    const el = e.target.closest?.('.w');
    if (ed.on && el && ed.keyNav) ed.sel.select(Number(el.dataset.i), ed.shiftKey);
    ed.keyNav = false;
    ed.shiftKey = false;
  });
  document.addEventListener('keydown', (e) => {
    if (!ed.on || !(e.ctrlKey || e.metaKey) || e.target.closest('input, textarea')) return;
    const k = e.key.toLowerCase();
    if (k === 'z' || k === 'y') {
      e.preventDefault();
      if (k === 'y' || e.shiftKey) restore(ed.redo, ed.undo);
      else restore(ed.undo, ed.redo);
    }
  });
  player().addEventListener('play', () => {
    if (ed.on && !ed.frame) previewLoop();
  });
  player().addEventListener('loadedmetadata', paintState);
  // Leaving with a change the server does not have yet asks first; a hidden tab saves at once.
  addEventListener('beforeunload', (e) => {
    if (!dirty() && ed.draft.state !== 'saving') return;
    e.preventDefault();
    e.returnValue = '';
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden' && dirty()) saveDraft().catch(() => {});
    if (document.visibilityState === 'visible') refreshDraft().catch(() => {});
  });
}

async function main() {
  // The transcript's words are watch.js's: wait until it has drawn them.
  await new Promise((resolve) => {
    if (document.body.dataset.transcript === 'ready') return resolve();
    new MutationObserver((_, obs) => {
      if (document.body.dataset.transcript !== 'ready') return;
      obs.disconnect();
      resolve();
    }).observe(document.body, { attributes: true, attributeFilter: ['data-transcript'] });
  });
  const { member } = await api(`/app/videos/${videoId}/access`);
  if (!member || $('transcript').querySelector('.w') === null) return;
  toolbar();
  collectWords();
  wire();
  const hasDraft = await loadDraft().catch(() => false);
  // Back to where the work was: a draft with cuts opens the edit mode.
  setMode(hasDraft);
  document.body.dataset.editable = 'true';
}

main().catch(() => {});
