// Selecting words as text is selected in a document, shared by the watch page's edit mode and the
// project page's clip picker. Over a box of `.w` spans numbered by `data-i`:
// - mouse or pen: press on a word and drag across others; Shift+click extends from the anchor;
// - touch: tap a word, then tap another to extend to it (a tap inside the selection starts anew,
//   a tap on the one selected word clears it), or drag the handles at the selection's ends;
//   dragging elsewhere still scrolls;
// - the keyboard is the caller's (it moves the focus): `select(i, extend)`.
// The browser's own text selection never shows: the box has user-select: none while selecting
// (the callers' CSS), a press does not start one, and any that appears is cleared.

export function wordSelection(box, { isOn = () => true, onChange = () => {} } = {}) {
  const st = { anchor: -1, sel: null, drag: null, pointer: 'mouse', handle: null };
  const indexOf = (el) => Number(el?.dataset.i ?? -1);
  const count = () => box.querySelectorAll('.w').length;
  const wordEl = (i) => box.querySelector(`.w[data-i="${i}"]`);
  const wordAt = (x, y) => {
    const el = document.elementFromPoint(x, y)?.closest?.('.w');
    return el && box.contains(el) ? indexOf(el) : -1;
  };

  // The touch handles: one at each end of the selection, inside the box so that they scroll with it.
  box.classList.add('has-handles');
  const handles = ['start', 'end'].map((end) => {
    const h = document.createElement('span');
    h.className = `sel-handle sel-handle-${end}`;
    h.dataset.end = end;
    h.setAttribute('aria-hidden', 'true');
    h.hidden = true;
    box.append(h);
    return h;
  });

  function placeHandles() {
    const show = isOn() && st.sel !== null && st.pointer === 'touch';
    for (const h of handles) {
      // The box's words may have been drawn anew, the handles with them.
      if (!h.isConnected) box.append(h);
      h.hidden = !show;
      if (!show) continue;
      const el = wordEl(h.dataset.end === 'start' ? st.sel[0] : st.sel[1]);
      if (!el) continue;
      h.style.left = `${el.offsetLeft + (h.dataset.end === 'start' ? 0 : el.offsetWidth)}px`;
      h.style.top = `${el.offsetTop + el.offsetHeight}px`;
    }
  }
  for (const h of handles) {
    h.addEventListener('pointerdown', (e) => {
      if (st.sel === null) return;
      e.preventDefault();
      e.stopPropagation();
      // The other end holds still while this one follows the finger.
      st.anchor = h.dataset.end === 'start' ? st.sel[1] : st.sel[0];
      st.handle = e.pointerId;
      h.setPointerCapture?.(e.pointerId);
    });
    h.addEventListener('pointermove', (e) => {
      if (st.handle !== e.pointerId) return;
      // Just above the finger: the word it points at, not the handle under it.
      const i = wordAt(e.clientX, e.clientY - 16);
      if (i >= 0) select(i, true);
    });
    const drop = (e) => {
      if (st.handle !== e.pointerId) return;
      st.handle = null;
      clearNative();
    };
    h.addEventListener('pointerup', drop);
    h.addEventListener('pointercancel', drop);
    h.addEventListener('click', (e) => e.stopPropagation());
  }

  function clearNative() {
    const s = globalThis.getSelection?.();
    if (s && s.rangeCount > 0) s.removeAllRanges();
  }

  function select(i, extend) {
    if (i < 0 || i >= count()) return;
    if (!extend || st.anchor < 0) st.anchor = i;
    st.sel = [Math.min(st.anchor, i), Math.max(st.anchor, i)];
    clearNative();
    onChange(st.sel);
    placeHandles();
  }

  function clear() {
    st.sel = null;
    st.anchor = -1;
    clearNative();
    onChange(null);
    placeHandles();
  }

  box.addEventListener('pointerdown', (e) => {
    if (e.target.closest?.('.sel-handle')) return;
    st.pointer = e.pointerType;
    const el = e.target.closest?.('.w');
    if (!isOn() || !el || e.pointerType === 'touch' || e.button !== 0) return;
    // No native selection from this press; the focus moves as a click's would.
    e.preventDefault();
    el.focus({ preventScroll: true });
    select(indexOf(el), e.shiftKey);
    st.drag = e.pointerId;
    box.setPointerCapture?.(e.pointerId);
  });
  box.addEventListener('pointermove', (e) => {
    if (st.drag !== e.pointerId) return;
    const i = wordAt(e.clientX, e.clientY);
    if (i >= 0) select(i, true);
  });
  const end = (e) => {
    if (st.drag !== e.pointerId) return;
    st.drag = null;
    box.releasePointerCapture?.(e.pointerId);
    clearNative();
  };
  box.addEventListener('pointerup', end);
  box.addEventListener('pointercancel', end);
  // Taps: the second extends the first.
  box.addEventListener('click', (e) => {
    const el = e.target.closest?.('.w');
    if (!isOn() || !el || st.pointer !== 'touch') return;
    const i = indexOf(el);
    const s = st.sel;
    if (s && (i < s[0] || i > s[1])) select(i, true);
    else if (s && s[0] === s[1] && s[0] === i) clear();
    else select(i, false);
  });
  // Whatever else starts a native selection in the box (a double click, a long press) is undone.
  document.addEventListener('selectionchange', () => {
    if (!isOn()) return;
    const s = globalThis.getSelection?.();
    if (s && !s.isCollapsed && s.anchorNode && box.contains(s.anchorNode)) clearNative();
  });

  return {
    select,
    clear,
    clearNative,
    /** After the words moved (a chip added, the box resized): the handles follow. */
    placeHandles,
    get range() {
      return st.sel;
    },
    get touch() {
      return st.pointer === 'touch';
    },
  };
}
