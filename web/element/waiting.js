// A slow model, as the visitor sees it: after the model was asked, a line in the conversation
// says the assistant is thinking (2.5 s), then that it is taking longer (15 s); at the time
// limit (the element's time-limit attribute in seconds, or options.timeLimitMs; default 90 s,
// 300 s for the site's own model, which reads its first prompt slowly on a CPU) the run is
// ended. Any sign from the model (text, a tool call, an answer, an error, how much of its
// prompt it has read) starts the wait afresh or ends it; a card or a form waiting for the
// visitor is not the model's time.
import { h } from './dom.js';

export const DEFAULT_TIME_LIMIT_MS = 90_000;
// The in-page model's first step on a slow, busy CPU: loading (up to 21 s measured) and
// reading 300+ prompt tokens at 3 to 11 tokens/s before the first progress report.
export const LOCAL_TIME_LIMIT_MS = 300_000;

/** The time limit in ms for `host` (see the opening comment); `model`: the thinking event's. */
export function timeLimit(host, model = '') {
  const fromOption = host.options.timeLimitMs;
  const attr = host.getAttribute('time-limit');
  const raw = fromOption ?? (attr !== null ? Number(attr) * 1000 : NaN);
  if (Number.isFinite(raw) && raw > 0) return raw;
  return String(model).includes('local model') ? LOCAL_TIME_LIMIT_MS : DEFAULT_TIME_LIMIT_MS;
}

export class Waiting {
  limit = null; // the latest wait's limit in ms
  #timers = [];
  #line = null;

  /** `log`: the log element; `t`: the strings; `scroll()`: keeps it in view; `onLimit()`. */
  constructor({ log, t, scroll, onLimit }) {
    Object.assign(this, { log, t, scroll, onLimit });
  }

  /** The model was asked: start waiting for it, for at most `limit` ms (the limit is kept in
   * `limit`). `note`: a text to show at once (how far the model got), kept until a sign. */
  start(limit, note = null) {
    if (note === null) this.stop();
    else for (const timer of this.#timers) clearTimeout(timer);
    this.limit = limit;
    const say = (key, text = this.t(key)) => {
      if (!this.#line) {
        this.#line = h('p', { class: 'note waiting', text });
        this.log.append(this.#line);
        this.scroll();
      } else this.#line.textContent = text;
    };
    if (note !== null) say(null, note);
    this.#timers = [
      ...(note === null ? [setTimeout(() => say('waiting'), Math.min(2500, limit / 2))] : []),
      setTimeout(() => say('waitingLong'), Math.min(15_000, limit * 0.75)),
      setTimeout(() => this.onLimit(), limit),
    ];
  }

  /** The model gave a sign, or the run ended: the line goes, the timers stop. */
  stop() {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers = [];
    this.#line?.remove();
    this.#line = null;
  }
}
