// The confirmation card: one request from Python at a time, one promise per request. open()
// shows the card and resolves to true only when the visitor presses Allow; Deny, Escape, a
// newer request, finish(false) and an aborted signal resolve it to false. The card's text is
// set with textContent, never as HTML. The card is seen whole before it can be allowed
// (fit.js); a site's summary of the call (options.summary) stands above its arguments; and a
// visitor typing in a field of the page keeps the focus (the card announces itself, waits).
import { h } from './dom.js';
import { CardView } from './fit.js';
import { reveal, showsHidden } from './reveal.js';

const TYPED = ['button', 'submit', 'reset', 'checkbox', 'radio', 'range', 'color', 'file', 'image'];

/** The page's text field (outside the element `host`) that has the focus, if any. */
function typingIn(host) {
  const active = document.activeElement;
  if (!active || active === host || active === document.body) return null;
  const field = active.isContentEditable || active.localName === 'textarea' || active.localName === 'select'
    || (active.localName === 'input' && !TYPED.includes(active.type));
  return field ? active : null;
}

export class Card {
  #pending = null; // {node, finish}

  /**
   * `slot`: where the card goes; `body`: the panel's scrolling area; `host`: the element (its
   * options); `t(key, values)`: the element's strings; `say(text)`: the status line;
   * `focusBack()`: where focus goes when the card had it; `root`: the shadow root;
   * `scroll()`: keeps the newest line in view; `hold(on)`: stops and restarts that.
   */
  constructor({ slot, body, host, t, say, focusBack, root, scroll, hold }) {
    Object.assign(this, { slot, body, host, t, say, focusBack, root, scroll, hold });
  }

  /** A card is waiting for the visitor. */
  get pending() {
    return this.#pending !== null;
  }

  /** The id of the call the waiting card asks about (null: no card). */
  get pendingCall() {
    return this.#pending?.call ?? null;
  }

  /** Ends the waiting card, if any, with `allowed` (false: a denial). */
  finish(allowed = false) {
    this.#pending?.finish(allowed);
  }

  /**
   * Shows `request` ({call, tool, lines, reason}, pysite_agent/browser/element.py) and resolves
   * to the visitor's decision; an aborted `signal` resolves it to false.
   */
  open(request, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      this.finish(false);
      const t = this.t;
      const typing = typingIn(this.host);
      const { tool, lines, reason } = request;
      const name = reveal(tool.title || tool.name);
      const hidden = showsHidden(name) || lines.some((l) => showsHidden(l.label) || showsHidden(l.value));
      const titleId = `card-${request.call.id}`.replace(/[^\w-]/g, '_');
      const list = h('dl');
      for (const line of lines) list.append(h('dt', { text: line.label }), h('dd', { text: line.value }));
      const allow = h('button', { type: 'button', class: 'primary allow', text: t('allow') });
      const deny = h('button', { type: 'button', class: 'deny', text: t('deny') });
      const summary = h('p', { class: 'summary', hidden: true });
      const node = h('div', {
        class: 'box card', part: 'card', role: 'group', tabindex: '-1', 'aria-labelledby': titleId,
        'data-tool': tool.name, 'data-reason': reason,
      },
      h('h3', { id: titleId, text: t('confirmHeading', { tool: name }) }),
      summary,
      tool.description ? h('p', { class: 'description', text: reveal(tool.description) }) : null,
      lines.length ? list : h('p', { class: 'note', text: t('noDetails') }),
      hidden ? h('p', { class: 'note hidden-chars', text: t('hiddenShown') }) : null,
      h('p', { class: 'why', text: t(`reason.${reason}`) }),
      h('div', { class: 'actions' }, deny, allow));
      this.#summarize(request, summary);
      let settled = false;
      let view = null;
      const onAbort = () => finish(false);
      const finish = (allowed) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        view?.dispose();
        this.hold(false);
        const active = this.root.activeElement;
        const hadFocus = active && node.contains(active);
        node.remove();
        if (this.#pending?.node === node) this.#pending = null;
        this.say(t(allowed ? 'allowed' : 'denied'));
        if (hadFocus) this.focusBack();
        resolve(allowed === true);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // Allow only once the whole card has been on screen; Deny always.
      allow.addEventListener('click', () => (view.pressable ? finish(true) : view.explain()));
      deny.addEventListener('click', () => finish(false));
      this.#pending = { node, finish, call: request.call.id };
      this.hold(true);
      this.slot.append(node);
      view = new CardView({
        card: node, scroller: this.body, allow, texts: { blocked: t('allowBlocked'), moreAbove: t('moreAbove') },
      });
      view.showTop();
      requestAnimationFrame(() => !settled && view.showTop()); // once laid out
      if (typing) {
        this.say(t('confirmWaiting', { tool: name }));
      } else {
        this.say(t('confirmAnnounce', { tool: name }));
        node.focus({ preventScroll: true });
      }
    });
  }

  // The site's summary of what a call will do (options.summary(request) -> text), shown as
  // text above the arguments, which still appear in full. A summary that throws or is not
  // text is left out (and said on the console).
  #summarize(request, node) {
    const fn = this.host.options.summary;
    if (typeof fn !== 'function') return;
    const show = (value) => {
      if (value === undefined || value === null || value === '') return;
      if (typeof value !== 'string') return console.warn('<site-agent>: options.summary must return text; ignored');
      node.textContent = value;
      node.hidden = false;
    };
    const failed = (error) => console.warn('<site-agent>: options.summary failed:', error);
    try {
      const value = fn({ tool: request.tool, call: request.call, lines: request.lines, reason: request.reason });
      if (value && typeof value.then === 'function') value.then(show, failed);
      else show(value);
    } catch (error) {
      failed(error);
    }
  }
}
