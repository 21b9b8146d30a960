// The panel's contents: the conversation as the visitor sees it. The visitor's and the
// assistant's messages, the text the model is still writing, one line per tool call (updated
// in place as the call goes on) and notes. Every change of the log goes through this class;
// model and tool text is always set with textContent, never as HTML (the assistant's http(s)
// links become <a> elements built from text nodes: links.js). Invisible and text-direction
// characters show as ⟦U+…⟧ codes (reveal.js), marked on the message; a visit keeps the text.
import { h } from './dom.js';
import { appendWithLinks } from './links.js';
import { reveal } from './reveal.js';

export class Transcript {
  #entries = []; // [kind, node, text?]: what a visit keeps (web/element/visit.js)
  #draft = null; // the message the model is writing (text-delta events)
  #draftText = ''; // its text as written (the draft shows it revealed)
  #tools = new Map(); // call id -> its line
  #titles = new Map(); // call id -> the tool's title (or name), for the progress lines
  #scrollPending = false;
  #open = new Set(); // call ids whose call has not ended yet
  /** True while a card waits: it is read from its top, so no jump to the newest line. */
  hold = false;

  /** `log`: the log element; `body`: what scrolls; `t(key, values)`: the element's strings. */
  constructor({ log, body, t }) {
    Object.assign(this, { log, body, t });
  }

  /** Nothing is shown yet. */
  get empty() {
    return this.#entries.length === 0;
  }

  /**
   * What a visit stores: [[kind, text], ...]. `without`: a call id whose line is left out
   * (a card left open when the page goes away: the next page writes how it ended).
   */
  data(without = null) {
    const skip = without === null ? null : this.#tools.get(without);
    return this.#entries.filter(([, node]) => node !== skip)
      .map(([kind, node, text]) => [kind, text ?? node.textContent]);
  }

  /** Empties the log. */
  clear() {
    this.#entries = [];
    this.log.replaceChildren();
    this.#draft = null;
    this.#tools.clear();
    this.#titles.clear();
    this.#open.clear();
  }

  /** A message of the visitor ('user') or the assistant; returns its node. */
  message(kind, text) {
    return this.#append(this.#messageNode(kind, text));
  }

  /** A note ('note', 'error', or a kind a visit restores); returns its node. */
  note(text, kind = 'note') {
    const node = this.#append(h('p', { class: kind, text: reveal(text) }));
    this.#entries.push([kind, node]);
    return node;
  }

  /**
   * Takes a line off the screen and out of what a visit keeps (a queued message that was not
   * sent, or was sent: the run's own user line replaces it, so it is kept once).
   */
  remove(node) {
    if (!node) return;
    node.remove();
    this.#entries = this.#entries.filter(([, shown]) => shown !== node);
  }

  /** Restores a stored entry. */
  restore(kind, text) {
    return kind === 'user' || kind === 'assistant' ? this.message(kind, text) : this.note(text, kind);
  }

  // The text the model is writing shows at once in a draft that assistive technology does not
  // see; settle() swaps in the finished message, which the log's aria-live announces once:
  // the answer, the text of a step that went on with a tool call, or the text so far marked
  // incomplete (an error, Stop).

  /** More of the text the model is writing. */
  delta(text) {
    if (!this.#draft) {
      this.#draft = this.#append(h('p', { class: 'msg assistant streaming', 'aria-hidden': 'true' }, document.createTextNode('')));
      this.#draftText = '';
    }
    this.#draftText += text;
    this.#draft.firstChild.appendData(reveal(text));
    this.scrollSoon();
  }

  /** Ends the draft: `how` is 'answer' (with its `text`), 'step' or 'incomplete'. */
  settle(how, text) {
    const draft = this.#draft;
    this.#draft = null;
    if (!draft) return how === 'answer' && this.message('assistant', text);
    const node = this.#messageNode('assistant', how === 'answer' ? text : this.#draftText, how === 'answer' ? '' : ` ${how}`);
    if (how === 'incomplete') node.append(h('span', { class: 'mark', text: ` ${this.t('incomplete')}` }));
    draft.replaceWith(node);
  }

  /** The tool's title when the page gave one (as on the card), else its name. */
  toolName(call) {
    return this.#titles.get(call.id) ?? call.name;
  }

  /** Remembers the title of call `id` (a call that began on the previous page brings it). */
  title(id, title, replace = true) {
    if (replace || !this.#titles.has(id)) this.#titles.set(id, title);
  }

  /** Call `id` began (open) or ended (its result came, or it was denied). */
  callOpen(id, open) {
    if (open) this.#open.add(id);
    else this.#open.delete(id);
  }

  /** The run ended: calls that never ended (Stop, a form never sent) say so. */
  endOpenCalls() {
    for (const id of this.#open) {
      const line = this.#tools.get(id);
      if (line) {
        line.textContent = this.t('toolStopped', { tool: this.#titles.get(id) ?? id });
        line.className = 'note';
      }
    }
    this.#open.clear();
  }

  /** The line of tool call `call`: written once, then updated in place. */
  toolLine(call, text, kind = 'note') {
    const line = this.#tools.get(call.id);
    if (line) {
      line.textContent = reveal(text);
      line.className = kind;
    } else {
      this.#tools.set(call.id, this.note(text, kind));
    }
  }

  #messageNode(kind, text, extra = '') {
    const who = kind === 'user' ? this.t('you') : this.t('assistant');
    const node = h('p', { class: `msg ${kind}${extra}` }, h('span', { class: 'sr', text: `${who} ` }));
    const shown = reveal(text);
    if (kind === 'assistant') appendWithLinks(node, shown);
    else node.append(document.createTextNode(shown));
    if (shown !== text) node.append(h('span', { class: 'mark', text: ` ${this.t('hiddenShown')}` }));
    this.#entries.push([kind, node, text]);
    return node;
  }

  #append(node) {
    this.log.append(node);
    this.scrollSoon();
    return node;
  }

  /** Keeps the newest line in view; once per frame, so a burst of events lays out once. */
  scrollSoon() {
    if (this.#scrollPending) return;
    this.#scrollPending = true;
    requestAnimationFrame(() => {
      this.#scrollPending = false;
      if (!this.hold) this.body.scrollTop = this.body.scrollHeight;
    });
  }
}
