// The panel's message input: Enter sends (Shift+Enter is a new line), never while an input
// method (IME) composes, and the box grows with its text.
//
// Composing, as browsers report it (docs/element.md, "On real sites"):
//   - Chromium and Firefox: the Enter that ends a composition has isComposing true.
//   - Safari (WebKit): compositionend comes first, then keydown Enter with isComposing false
//     and keyCode 229. So a keydown with keyCode 229, or one in the same
//     turn as a compositionend (before the next task), counts as composing and sends nothing.

/** True while `event` (a keydown) belongs to an IME composition (see above). */
export function composing(event, endedAt) {
  return event.isComposing || event.keyCode === 229 || (endedAt !== null && event.timeStamp - endedAt < 50);
}

/**
 * Wires `input` (a textarea) so that Enter calls `submit()` unless composing; returns nothing.
 * The textarea grows with its text up to a few lines (CSS field-sizing where supported).
 */
export function wireInput(input, submit) {
  let endedAt = null; // timeStamp of the latest compositionend, until the next task
  input.addEventListener('compositionend', (e) => {
    endedAt = e.timeStamp;
    setTimeout(() => (endedAt = null), 0);
  });
  input.addEventListener('input', () => grow(input));
  input.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.shiftKey || composing(e, endedAt)) return;
    e.preventDefault();
    submit();
  });
}

/** Fits the textarea's height to its text (nothing where CSS field-sizing does it). */
export function grow(input) {
  if (globalThis.CSS?.supports?.('field-sizing', 'content')) return;
  input.style.height = 'auto';
  input.style.height = `${input.scrollHeight + 2}px`;
}
