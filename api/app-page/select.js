// Selecting words as text is selected in a document, shared by the watch page's edit mode and the
// project page's clip picker. Over a box of `.w` spans numbered by `data-i`:
// - mouse or pen: press on a word and drag across others; Shift+click extends from the anchor;
// - touch: tap a word, then tap another to extend to it (a tap inside the selection starts anew,
//   a tap on the one selected word clears it); dragging still scrolls;
// - the keyboard is the caller's (it moves the focus): `select(i, extend)`.
// The browser's own text selection never shows: the box has user-select: none while selecting
// (the callers' CSS), a press does not start one, and any that appears is cleared.

export function wordSelection(box, { isOn = () => true, onChange = () => {} } = {}) {
  const st = { anchor: -1, sel: null, drag: null, pointer: 'mouse' };
  const indexOf = (el) => Number(el?.dataset.i ?? -1);
  const count = () => box.querySelectorAll('.w').length;

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
  }

  function clear() {
    st.sel = null;
    st.anchor = -1;
    clearNative();
    onChange(null);
  }

  box.addEventListener('pointerdown', (e) => {
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
    const el = document.elementFromPoint(e.clientX, e.clientY)?.closest?.('.w');
    if (el && box.contains(el) && indexOf(el) >= 0) select(indexOf(el), true);
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
    get range() {
      return st.sel;
    },
    get touch() {
      return st.pointer === 'touch';
    },
  };
}
