// The watch page's edit mode (a module of its own beside watch.js): for members, cut a video by its
// transcript. Select words (click, shift-click, shift+arrows), Delete strikes them through, undo and
// redo. "Shorten pauses" and "Remove fillers" propose cuts as strikes of their own, kept or undone
// together. The player previews the edit by skipping struck ranges as it plays; nothing renders
// until "Save as new video", which shows the render's progress and then opens the new video.
// It reads only the transcript watch.js draws (`.w` spans with data-start/data-end), so the two
// stay independent.

import { $, api, pollWithBackoff } from './common.js';

const videoId = location.pathname.split('/').pop();
const player = $('player');
const FILLERS = new Set(['um', 'umm', 'uh', 'uhh', 'erm', 'er', 'hmm', 'hm', 'mm', 'ah', 'eh']);
const PAUSE_OVER = 0.8;
const PAUSE_TO = 0.3;
/** Seconds: a skip lands just past the cut, and cuts closer than this are one. */
const EPS = 0.01;

const ed = {
  on: false,
  words: [],
  anchor: -1,
  /** Selected word indexes [from, to]. */
  sel: null,
  /** Struck word indexes, and pause cuts by the index of the word they follow. */
  struck: new Set(),
  pauses: new Map(),
  /** Proposals not yet kept: {kind, words: Set, pauses: Map}. */
  proposal: null,
  undo: [],
  redo: [],
  shiftKey: false,
  frame: 0,
};

const norm = (s) => s.toLocaleLowerCase().replace(/[^\p{L}\p{N}']/gu, '');

function toolbar() {
  const bar = document.createElement('div');
  bar.id = 'edit-bar';
  bar.className = 'edit-bar';
  bar.setAttribute('role', 'toolbar');
  bar.setAttribute('aria-label', 'Edit');
  bar.innerHTML = `
    <button type="button" id="edit-toggle" aria-pressed="false">Edit</button>
    <span id="edit-tools" hidden>
      <button type="button" id="edit-strike" title="Delete">Strike</button>
      <button type="button" id="edit-undo" title="Ctrl+Z">Undo</button>
      <button type="button" id="edit-redo" title="Ctrl+Shift+Z">Redo</button>
      <button type="button" id="edit-pauses">Shorten pauses</button>
      <button type="button" id="edit-fillers">Remove fillers</button>
      <span id="edit-proposal" hidden><span id="edit-proposal-text"></span>
        <button type="button" id="edit-keep">Keep</button>
        <button type="button" id="edit-drop">Undo</button></span>
      <button type="button" id="edit-save" class="primary">Save as new video</button>
      <span id="edit-summary" aria-live="polite"></span>
      <progress id="edit-progress" max="1" value="0" hidden></progress>
    </span>`;
  // Above the search, so that from the search Tab still goes straight into the words.
  const search = $('search-form').closest('search') ?? $('transcript');
  search.before(bar);
}

function collectWords() {
  ed.words = [...$('transcript').querySelectorAll('.w')].map((el, i) => {
    el.dataset.i = String(i);
    return { el, start: Number(el.dataset.start), end: Number(el.dataset.end), key: norm(el.textContent) };
  });
}

/**
 * The ranges the edit removes, in order, joined where they touch. Saving sends only what was kept
 * (`withProposal` false): a proposal neither kept nor undone is not part of the edit. The preview
 * plays it as if kept, so it can be heard before choosing.
 */
export function removedRanges(withProposal = false) {
  const cuts = [];
  const proposal = withProposal ? ed.proposal : null;
  const struck = new Set([...ed.struck, ...(proposal?.words ?? [])]);
  let i = 0;
  while (i < ed.words.length) {
    if (!struck.has(i)) {
      i++;
      continue;
    }
    let j = i;
    while (struck.has(j + 1)) j++;
    cuts.push({ start: ed.words[i].start, end: ed.words[j].end });
    i = j + 1;
  }
  for (const map of [ed.pauses, proposal?.pauses ?? new Map()]) for (const r of map.values()) cuts.push(r);
  cuts.sort((a, b) => a.start - b.start);
  const out = [];
  for (const c of cuts) {
    const last = out.at(-1);
    if (last && c.start <= last.end + EPS) last.end = Math.max(last.end, c.end);
    else out.push({ start: c.start, end: c.end });
  }
  const duration = Number.isFinite(player.duration) ? player.duration : Number.POSITIVE_INFINITY;
  return out
    .map((c) => ({ start: Math.max(0, c.start), end: Math.min(duration, c.end) }))
    .filter((c) => c.end > c.start);
}

function paint() {
  const proposed = ed.proposal?.words ?? new Set();
  for (const [i, w] of ed.words.entries()) {
    w.el.classList.toggle('struck', ed.struck.has(i));
    w.el.classList.toggle('proposed', proposed.has(i));
    const selected = ed.sel !== null && i >= ed.sel[0] && i <= ed.sel[1];
    w.el.classList.toggle('sel', selected);
    if (ed.on) w.el.setAttribute('aria-selected', String(selected));
    else w.el.removeAttribute('aria-selected');
  }
  for (const gap of $('transcript').querySelectorAll('.gap')) gap.remove();
  for (const [map, cls] of [
    [ed.pauses, 'gap struck'],
    [ed.proposal?.pauses ?? new Map(), 'gap proposed'],
  ]) {
    for (const [i, r] of map) {
      const gap = document.createElement('span');
      gap.className = cls;
      gap.textContent = `⏸ ${(r.end - r.start).toFixed(1)} s`;
      ed.words[i]?.el.after(gap);
    }
  }
  const cut = removedRanges().reduce((s, r) => s + r.end - r.start, 0);
  $('edit-summary').textContent = cut > 0 ? `${cut.toFixed(1)} s cut` : '';
  $('edit-undo').disabled = ed.undo.length === 0;
  $('edit-redo').disabled = ed.redo.length === 0;
  $('edit-proposal').hidden = ed.proposal === null;
  if (ed.proposal) {
    const n = ed.proposal.words.size + ed.proposal.pauses.size;
    $('edit-proposal-text').textContent = `${n} ${ed.proposal.kind} proposed`;
  }
}

/** Every change goes through here, so undo and redo restore it whole. */
function apply(change) {
  const before = { struck: new Set(ed.struck), pauses: new Map(ed.pauses) };
  change();
  ed.undo.push(before);
  ed.redo.length = 0;
  paint();
}

function restore(from, to) {
  const snap = from.pop();
  if (!snap) return;
  to.push({ struck: new Set(ed.struck), pauses: new Map(ed.pauses) });
  ed.struck = snap.struck;
  ed.pauses = snap.pauses;
  ed.proposal = null;
  paint();
}

function strikeSelection() {
  if (ed.sel === null) return;
  const [a, b] = ed.sel;
  const all = [...Array(b - a + 1).keys()].map((k) => a + k);
  // Striking words already struck brings them back.
  const restoreThem = all.every((i) => ed.struck.has(i));
  apply(() => {
    for (const i of all) {
      if (restoreThem) ed.struck.delete(i);
      else ed.struck.add(i);
    }
  });
}

function select(i, extend) {
  if (i < 0 || i >= ed.words.length) return;
  if (!extend || ed.anchor < 0) ed.anchor = i;
  ed.sel = [Math.min(ed.anchor, i), Math.max(ed.anchor, i)];
  paint();
}

function propose(kind) {
  const words = new Set();
  const pauses = new Map();
  if (kind === 'fillers') {
    for (const [i, w] of ed.words.entries()) if (FILLERS.has(w.key) && !ed.struck.has(i)) words.add(i);
  } else {
    for (let i = 0; i + 1 < ed.words.length; i++) {
      const gap = ed.words[i + 1].start - ed.words[i].end;
      if (gap > PAUSE_OVER && !ed.pauses.has(i)) {
        pauses.set(i, { start: ed.words[i].end + PAUSE_TO / 2, end: ed.words[i + 1].start - PAUSE_TO / 2 });
      }
    }
  }
  ed.proposal = { kind, words, pauses };
  paint();
}

function keepProposal() {
  const p = ed.proposal;
  if (!p) return;
  ed.proposal = null;
  apply(() => {
    for (const i of p.words) ed.struck.add(i);
    for (const [i, r] of p.pauses) ed.pauses.set(i, r);
  });
}

/** While playing in edit mode, a struck range is skipped: the preview, with no render. */
function previewLoop() {
  ed.frame = 0;
  if (!ed.on || player.paused) return;
  const t = player.currentTime;
  for (const r of removedRanges(true)) {
    if (t >= r.start - EPS && t < r.end) {
      player.currentTime = r.end + EPS;
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
  $('edit-toggle').textContent = on ? 'Done editing' : 'Edit';
  $('edit-tools').hidden = !on;
  $('transcript').classList.toggle('editing', on);
  $('transcript').setAttribute('aria-multiselectable', String(on));
  document.body.dataset.editMode = String(on);
  if (on && ed.words.length === 0) collectWords();
  paint();
  if (on && !player.paused && !ed.frame) previewLoop();
}

function wire() {
  $('edit-toggle').addEventListener('click', () => setMode(!ed.on));
  $('edit-strike').addEventListener('click', strikeSelection);
  $('edit-undo').addEventListener('click', () => restore(ed.undo, ed.redo));
  $('edit-redo').addEventListener('click', () => restore(ed.redo, ed.undo));
  $('edit-pauses').addEventListener('click', () => propose('pauses'));
  $('edit-fillers').addEventListener('click', () => propose('fillers'));
  $('edit-keep').addEventListener('click', keepProposal);
  $('edit-drop').addEventListener('click', () => {
    ed.proposal = null;
    paint();
  });
  $('edit-save').addEventListener('click', save);
  // Capture: seen before watch.js seeks to the word (which it still does: the playhead follows).
  $('transcript').addEventListener(
    'click',
    (e) => {
      const el = e.target.closest('.w');
      if (ed.on && el) select(Number(el.dataset.i), e.shiftKey);
    },
    true,
  );
  $('transcript').addEventListener(
    'keydown',
    (e) => {
      if (!ed.on) return;
      ed.shiftKey = e.shiftKey;
      if (e.key === 'Delete' || e.key === 'Backspace') {
        e.preventDefault();
        e.stopPropagation();
        strikeSelection();
      }
    },
    true,
  );
  // watch.js moves the focus with the arrows; the selection follows it (and grows with Shift).
  $('transcript').addEventListener('focusin', (e) => {
    const el = e.target.closest?.('.w');
    if (ed.on && el && ed.shiftKey) select(Number(el.dataset.i), true);
    else if (ed.on && el && ed.sel === null) select(Number(el.dataset.i), false);
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
  player.addEventListener('play', () => {
    if (ed.on && !ed.frame) previewLoop();
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
  wire();
  collectWords();
  document.body.dataset.editable = 'true';
}

main().catch(() => {});
