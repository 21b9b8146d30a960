// The confirmation card is seen whole before it can be allowed. It is scrolled into view from
// its top (its heading first), and Allow stays unpressable (aria-disabled, a hint beside it)
// until the card's top has been on screen and Allow itself is fully on screen: a visitor who
// reaches Allow has had every line above it in view. Deny is always pressable. While the
// card's top is above the visible area, a "more above" button at the top of the scrolling
// area takes the visitor there. "On screen" means inside both the panel's scrolling area and
// the viewport (a zoomed page can push either out).

const visibleBox = (scroller) => {
  const r = scroller.getBoundingClientRect();
  return { top: Math.max(r.top, 0), bottom: Math.min(r.bottom, innerHeight) };
};

const inside = (rect, box, slack = 1) => rect.top >= box.top - slack && rect.bottom <= box.bottom + slack;

export class CardView {
  #card;
  #scroller;
  #allow;
  #hint;
  #more;
  #texts;
  #topSeen = false;
  #frame = 0;
  #observer = null;
  #root = null;
  #onScroll = () => this.#soon();

  /**
   * card: the card element (its first child is the heading); scroller: the scrolling area it
   * sits in; allow: its Allow button; texts: {blocked, moreAbove} (visible strings).
   * The hint and the "more above" button are added to the card and the scroller.
   */
  constructor({ card, scroller, allow, texts }) {
    this.#card = card;
    this.#scroller = scroller;
    this.#allow = allow;
    this.#texts = texts;
    this.#hint = document.createElement('p');
    this.#hint.className = 'blocked-hint';
    this.#hint.hidden = true;
    this.#hint.setAttribute('aria-live', 'polite');
    allow.parentElement.before(this.#hint);
    this.#more = document.createElement('button');
    this.#more.type = 'button';
    this.#more.className = 'more-above';
    this.#more.textContent = texts.moreAbove;
    this.#more.hidden = true;
    this.#more.addEventListener('click', () => this.showTop());
    scroller.prepend(this.#more);
    // Scroll events do not bubble: caught on the way down, whichever box scrolls.
    this.#root = scroller.getRootNode();
    this.#root.addEventListener('scroll', this.#onScroll, { passive: true, capture: true });
    addEventListener('resize', this.#onScroll);
    if (globalThis.ResizeObserver) {
      this.#observer = new ResizeObserver(this.#onScroll);
      this.#observer.observe(card);
      this.#observer.observe(scroller);
    }
    this.#set(false);
  }

  /** Scrolls the card's top (its heading) to the top of what is seen. */
  showTop() {
    const box = visibleBox(this.#scroller);
    const top = this.#card.getBoundingClientRect().top;
    this.#scroller.scrollTop += top - box.top - 8;
    // Where the whole panel scrolls (a very short viewport), the panel moves instead.
    const heading = (this.#card.firstElementChild ?? this.#card).getBoundingClientRect();
    if (!inside(heading, visibleBox(this.#scroller))) this.#card.scrollIntoView({ block: 'start' });
    this.check();
  }

  /** True when Allow may be pressed now (see the file's opening comment). */
  get pressable() {
    this.check();
    return this.#allow.getAttribute('aria-disabled') !== 'true';
  }

  /** Allow was pressed while unpressable: say why, and show what was not seen. */
  explain() {
    this.#hint.textContent = this.#texts.blocked;
    this.#hint.hidden = false;
    if (!this.#topSeen) this.showTop();
    else this.#allow.scrollIntoView({ block: 'nearest' });
  }

  /** Measures again (after scrolling, a resize, a change of the card's content). */
  check() {
    const box = visibleBox(this.#scroller);
    const heading = this.#card.firstElementChild ?? this.#card;
    if (inside(heading.getBoundingClientRect(), box)) this.#topSeen = true;
    const allowSeen = inside(this.#allow.getBoundingClientRect(), box);
    this.#set(this.#topSeen && allowSeen);
    this.#more.hidden = this.#card.getBoundingClientRect().top >= box.top - 1;
  }

  #set(pressable) {
    if (pressable) {
      this.#allow.removeAttribute('aria-disabled');
      this.#hint.hidden = true;
    } else {
      this.#allow.setAttribute('aria-disabled', 'true');
    }
  }

  #soon() {
    if (this.#frame) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = 0;
      if (this.#card.isConnected) this.check();
    });
  }

  /** Stops measuring and removes the "more above" button (the card was answered). */
  dispose() {
    cancelAnimationFrame(this.#frame);
    this.#root.removeEventListener('scroll', this.#onScroll, { capture: true });
    removeEventListener('resize', this.#onScroll);
    this.#observer?.disconnect();
    this.#more.remove();
  }
}
