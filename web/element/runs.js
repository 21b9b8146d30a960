// Run bookkeeping of one element: which run is shown, which runs are stale, and the message
// sent while Python was still starting. Python tags every event of a run with the id the
// element gave it (pysite_agent/browser/element.py), so:
//   - ids count up per element; `current` is the run whose events are shown (null after a
//     reset);
//   - reset() makes every run asked for until then stale, even one not started in Python yet:
//     if Python starts it anyway, it ends in the background, and nothing of it reaches the page;
//   - stop() and reset() raise the generation: an ask() that still waits for Python to start
//     is not sent;
//   - `queued` is the message the visitor sent before Python was ready ({line, text, note}).
// agent.run() handles (their events as an async iterator) are kept here too.

export class Runs {
  #seq = 0; // the id of the latest run this element asked Python for
  #staleUpTo = 0; // runs with an id up to this were asked for before the last reset()
  #handles = new Set(); // agent.run() handles waiting for events
  current = null; // the run whose events are shown (null after reset())
  running = false; // a run is going on (from its start to its done event)
  generation = 0; // raised by stop() and reset()
  queued = null; // {line, text, note}: a message sent while Python was starting

  /** A fresh id for the run about to be asked for. */
  next() {
    return ++this.#seq;
  }

  /** Python started run `run` (undefined: a run of the previous page). False when stale. */
  start(run) {
    if (run != null && run <= this.#staleUpTo) return false;
    this.current = run ?? null;
    this.running = true;
    return true;
  }

  /** An event of run `run` is shown (undefined: an event of no run): not one that was reset. */
  shows(run) {
    return run === undefined || run === this.current;
  }

  /** A save of run `run` is kept (null or undefined: of no run): not one that was reset. */
  keeps(run) {
    return run == null || run === this.current;
  }

  /** A message waiting for Python to start, or an ask() waiting, is not sent. */
  stop() {
    this.generation += 1;
  }

  /** From now on, events of every run asked for until now are stale. */
  reset() {
    this.current = null;
    this.#staleUpTo = this.#seq;
    this.generation += 1;
    this.queued = null;
    this.running = false;
  }

  /** Takes the queued message back; returns it (or null). */
  unqueue() {
    const queued = this.queued;
    this.queued = null;
    return queued;
  }

  /** Gives `event` of run `run` to the agent.run() handles that wait for it. */
  push(event, run) {
    for (const handle of this.#handles) if (run === undefined || handle.id === run) handle.push(event);
  }

  /**
   * An agent.run() handle: `{done, abort, [Symbol.asyncIterator]}`. `start(handle)` (an async
   * function) asks for the run, sets `handle.id` and resolves to its result; `abort()` is the element's stop().
   */
  handle(start, abort) {
    const queue = [];
    let wake = null;
    let finished = false;
    const handle = {
      id: null,
      push: (event) => {
        queue.push(event);
        wake?.();
      },
    };
    this.#handles.add(handle);
    const done = start(handle).finally(() => {
      finished = true;
      this.#handles.delete(handle);
      wake?.();
    });
    done.catch(() => {});
    return {
      done,
      abort,
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (queue.length) yield queue.shift();
          else if (finished) return;
          else await new Promise((resolve) => (wake = resolve));
        }
      },
    };
  }
}
