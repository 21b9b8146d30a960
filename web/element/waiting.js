// A slow model, as the visitor sees it: after the model was asked, a line in the conversation
// says the assistant is thinking (2.5 s), then that it is taking longer (15 s); at the time
// limit (the element's time-limit attribute in seconds, or options.timeLimitMs; default 90 s)
// the run is ended. Any sign from the model (text, a tool call, an answer, an error) starts
// the wait afresh or ends it; a card or a form waiting for the visitor is not the model's time.
import { h } from './dom.js';

export const DEFAULT_TIME_LIMIT_MS = 90_000;

/** The time limit in ms for `host` (see the opening comment). */
export function timeLimit(host) {
  const fromOption = host.options.timeLimitMs;
  const attr = host.getAttribute('time-limit');
  const raw = fromOption ?? (attr !== null ? Number(attr) * 1000 : NaN);
  return Number.isFinite(raw) && raw > 0 ? raw : DEFAULT_TIME_LIMIT_MS;
}

export class Waiting {
  #timers = [];
  #line = null;

  /** `log`: the log element; `t`: the strings; `scroll()`: keeps it in view; `onLimit()`. */
  constructor({ log, t, scroll, onLimit }) {
    Object.assign(this, { log, t, scroll, onLimit });
  }

  /** The model was asked: start waiting for it, for at most `limit` ms. */
  start(limit) {
    this.stop();
    const say = (key) => {
      if (!this.#line) {
        this.#line = h('p', { class: 'note waiting', text: this.t(key) });
        this.log.append(this.#line);
        this.scroll();
      } else this.#line.textContent = this.t(key);
    };
    this.#timers = [
      setTimeout(() => say('waiting'), Math.min(2500, limit / 2)),
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
