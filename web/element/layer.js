// The panel above a page's modal dialog. A page's `<dialog>` opened with showModal() sits in
// the browser's top layer and makes everything else inert, the element's panel included: a
// confirmation card there could be neither seen nor pressed. While the panel is open and the
// page shows a modal dialog, the panel moves into a modal <dialog> of its own, shown after the
// page's, so it is the topmost modal (the page's dialog is inert until the panel closes).
// Escape or closing the panel puts it back where it was (docs/element.md, "On real sites").
import { h } from './dom.js';

/** True when the page (not this element) shows a modal dialog. */
export function pageModalOpen(own) {
  try {
    return [...document.querySelectorAll('dialog[open]')].some((d) => d !== own && d.matches(':modal'));
  } catch {
    return false; // no :modal support: nothing to lift above
  }
}

export class TopLayer {
  #root;
  #panel;
  #home; // where the panel lives when not lifted
  #observer = null;

  /** `root`: the shadow root; `panel`: the panel's box (its own keydown handles Escape). */
  constructor(root, panel) {
    this.#root = root;
    this.#panel = panel;
    this.#home = panel.parentNode ?? root;
    this.dialog = h('dialog', { class: 'layer', part: 'layer' });
    // Escape: the panel decides (a pending card is denied first, then the panel closes).
    this.dialog.addEventListener('cancel', (e) => e.preventDefault());
    root.append(this.dialog);
  }

  get lifted() {
    return this.dialog.open;
  }

  /**
   * The panel opened (`open` true) or closed: lifted above a page's modal dialog now or when
   * one opens later, put back on close.
   */
  watch(open) {
    if (!open) {
      this.#observer?.disconnect();
      this.#observer = null;
      this.lower();
      return;
    }
    this.lift();
    if (this.#observer || typeof MutationObserver === 'undefined') return;
    this.#observer = new MutationObserver(() => {
      if (!this.lifted) this.lift();
      else if (!pageModalOpen(this.dialog)) this.lower(); // the page's dialog closed
    });
    this.#observer.observe(document.documentElement, { subtree: true, attributes: true, attributeFilter: ['open'] });
  }

  /** Into the top layer when the page shows a modal dialog (the focus stays where it was). */
  lift() {
    if (this.lifted || !this.#root.host.isConnected || !pageModalOpen(this.dialog)) return;
    const active = this.#root.activeElement;
    this.#home = this.#panel.parentNode ?? this.#root;
    this.dialog.append(this.#panel);
    try {
      this.dialog.showModal();
    } catch {
      this.#home.append(this.#panel); // not allowed here (a disconnected host): as before
      return;
    }
    active?.focus?.({ preventScroll: true });
  }

  lower() {
    if (!this.lifted && this.#panel.parentNode !== this.dialog) return;
    const active = this.#root.activeElement;
    this.dialog.close();
    this.#home.append(this.#panel);
    active?.focus?.({ preventScroll: true });
  }

  dispose() {
    this.watch(false);
  }
}
