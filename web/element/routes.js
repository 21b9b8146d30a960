// A single-page app's route changes: same-document navigations with history.pushState and
// history.replaceState (wrapped once per page, at first use) and back/forward between such
// entries (popstate). Each listener is called after the change, with nothing: it reads
// `location` itself. Python decides whether the page changed (origin and path only: a query or
// fragment alone, or a replaceState to the same address, is no page change; docs/element.md).
const listeners = new Set();
let wrapped = false;

const notify = () => {
  for (const listener of listeners) {
    try {
      listener();
    } catch {}
  }
};

function wrap() {
  wrapped = true;
  for (const name of ['pushState', 'replaceState']) {
    const original = history[name];
    if (typeof original !== 'function') continue;
    // A named method, called on whatever `this` the app uses (the page's own history).
    history[name] = {
      [name](...args) {
        const result = original.apply(this, args);
        notify();
        return result;
      },
    }[name];
  }
  addEventListener('popstate', notify);
}

/** Calls `listener()` after each route change; returns a function that stops it. */
export function onRouteChange(listener) {
  if (!wrapped && typeof history !== 'undefined') wrap();
  listeners.add(listener);
  return () => listeners.delete(listener);
}
