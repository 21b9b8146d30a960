// The panel as a modal dialog while it covers the page: on small or zoomed viewports
// (FULL_SCREEN, the same query as the full-screen layout in styles.js) the open panel says
// aria-modal="true", and the rest of the page becomes inert (no Tab stop, no click, nothing a
// screen reader's swipe reaches) along with the launcher behind the panel. Closing the panel,
// a viewport that grows back, or removing the element gives all of it back. Elements the site
// had made inert itself stay as they were.

/** Small or zoomed viewports, where the panel covers the page (keep in step with styles.js). */
export const FULL_SCREEN = '(max-width: 600px), (max-height: 500px)';

export class Modal {
  #host;
  #panel;
  #launcher;
  #query;
  #open = false;
  #made = []; // elements this made inert
  #onChange = () => this.#update();
  // Tab and Shift+Tab go round the panel's own controls (the page behind it is inert, and the
  // browser's own toolbar is no place to land while the panel covers everything).
  #onKey = (event) => {
    if (event.key !== 'Tab' || !this.active) return;
    const root = this.#panel.getRootNode();
    const items = [...this.#panel.querySelectorAll('button, textarea, input, select, a[href], [tabindex]:not([tabindex="-1"])')]
      .filter((el) => !el.disabled && el.getClientRects().length > 0);
    if (!items.length) return;
    const first = items[0];
    const last = items[items.length - 1];
    const active = root.activeElement;
    if (event.shiftKey && (active === first || !this.#panel.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !this.#panel.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  };

  constructor(host, panel, launcher) {
    this.#host = host;
    this.#panel = panel;
    this.#launcher = launcher;
    this.#query = globalThis.matchMedia?.(FULL_SCREEN) ?? null;
    this.#query?.addEventListener?.('change', this.#onChange);
    panel.addEventListener('keydown', this.#onKey);
  }

  /** True while the panel is open and covers the page. */
  get active() {
    return this.#panel.getAttribute('aria-modal') === 'true';
  }

  /** The panel opened (true) or closed (false). */
  set open(value) {
    this.#open = !!value;
    this.#update();
  }

  #update() {
    const covering = this.#open && !!this.#query?.matches && this.#host.isConnected;
    if (covering && !this.active) this.#take();
    else if (!covering && this.active) this.#giveBack();
  }

  #take() {
    this.#panel.setAttribute('aria-modal', 'true');
    this.#launcher.inert = true;
    this.#made = [];
    // Every sibling of the element and of each of its ancestors, up to <body>.
    for (let node = this.#host; node && node !== document.body && node.parentElement; node = node.parentElement) {
      for (const sibling of node.parentElement.children) {
        if (sibling === node || sibling.inert || sibling.localName === 'script' || sibling.localName === 'style') continue;
        sibling.inert = true;
        this.#made.push(sibling);
      }
    }
  }

  #giveBack() {
    this.#panel.removeAttribute('aria-modal');
    this.#launcher.inert = false;
    for (const element of this.#made) element.inert = false;
    this.#made = [];
  }

  /** Gives everything back and stops listening (the element was removed). */
  dispose() {
    this.#open = false;
    if (this.active) this.#giveBack();
    this.#query?.removeEventListener?.('change', this.#onChange);
    this.#panel.removeEventListener('keydown', this.#onKey);
  }
}
