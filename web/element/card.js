// The confirmation card: one request from Python at a time, one promise per request. open()
// shows the card and resolves to true only when the visitor presses Allow; Deny, Escape, a
// newer request, finish(false) and an aborted signal resolve it to false. The card's text is
// set with textContent, never as HTML.
import { h } from './dom.js';

export class Card {
  #pending = null; // {node, finish}

  /**
   * `slot`: where the card goes; `t(key, values)`: the element's strings; `say(text)`: the
   * status line; `focusBack()`: where focus goes when the card had it; `root`: the shadow
   * root; `scroll()`: keeps the newest line in view.
   */
  constructor({ slot, t, say, focusBack, root, scroll }) {
    Object.assign(this, { slot, t, say, focusBack, root, scroll });
  }

  /** A card is waiting for the visitor. */
  get pending() {
    return this.#pending !== null;
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
      const { tool, lines, reason } = request;
      const name = tool.title || tool.name;
      const titleId = `card-${request.call.id}`.replace(/[^\w-]/g, '_');
      const list = h('dl');
      for (const line of lines) list.append(h('dt', { text: line.label }), h('dd', { text: line.value }));
      const allow = h('button', { type: 'button', class: 'primary allow', text: t('allow') });
      const deny = h('button', { type: 'button', class: 'deny', text: t('deny') });
      const node = h('div', {
        class: 'box card', part: 'card', role: 'group', tabindex: '-1', 'aria-labelledby': titleId,
        'data-tool': tool.name, 'data-reason': reason,
      },
      h('h3', { id: titleId, text: t('confirmHeading', { tool: name }) }),
      tool.description ? h('p', { class: 'description', text: tool.description }) : null,
      lines.length ? list : h('p', { class: 'note', text: t('noDetails') }),
      h('p', { class: 'why', text: t(`reason.${reason}`) }),
      h('div', { class: 'actions' }, deny, allow));
      let settled = false;
      const onAbort = () => finish(false);
      const finish = (allowed) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        const active = this.root.activeElement;
        const hadFocus = active && node.contains(active);
        node.remove();
        if (this.#pending?.node === node) this.#pending = null;
        this.say(t(allowed ? 'allowed' : 'denied'));
        if (hadFocus) this.focusBack();
        resolve(allowed === true);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      allow.addEventListener('click', () => finish(true));
      deny.addEventListener('click', () => finish(false));
      this.#pending = { node, finish };
      this.slot.append(node);
      this.scroll();
      this.say(t('confirmAnnounce', { tool: name }));
      node.focus();
    });
  }
}
