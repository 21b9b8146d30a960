// The runtime's front door, loaded with the element: where the agent's Python runs is decided
// here, once, and the code that starts it (web/runtime/main-thread.js or
// web/runtime/worker-host.js) is imported only when an element first needs Python, so it
// costs nothing before the first interaction. The configuration is web/runtime/settings.js's.
import { mark, runtimeSettings, saveData } from './settings.js';

export { configureRuntime, mark, runtimeSettings, saveData, setBaseURL } from './settings.js';

/**
 * Starts Python once per page (later calls share it) and resolves to the Pyodide instance
 * with pysite_agent installed. `onProgress(p)` gets boot.js's progress reports. A failed
 * start can be retried by calling again. (web/runtime/main-thread.js)
 */
export function loadRuntime(options) {
  return import('./main-thread.js').then((host) => host.loadRuntime(options));
}

/**
 * Starts Python and connects one element to a fresh Python controller. `bridge` is the
 * element's side ({emit, started, confirm, save}, see pysite_agent/browser/element.py);
 * `onProgress` gets boot.js's reports, then `{phase: 'agent'}`; `runtime` is 'worker' (a
 * module Web Worker, web/runtime/worker-host.js) or 'main' (this page's own Pyodide,
 * web/runtime/main-thread.js), else the configured one. Resolves to the connection
 * `{call(name, ...args), close()}`: the same calls either way. Rejects with a TypeError for
 * any other `runtime`.
 */
export function connectAgent(bridge, options = {}) {
  const mode = options.runtime ?? runtimeSettings().runtime;
  if (mode === 'worker') {
    return import('./worker-host.js').then((host) => host.connectWorker(bridge, options));
  }
  if (mode === 'main') return import('./main-thread.js').then((host) => host.connectMain(bridge, options));
  return Promise.reject(new TypeError(`runtime must be "worker" or "main", not ${JSON.stringify(mode)}.`));
}

// ---- intent: the visitor reaches for the launcher (the element watches for it; never on
// idle, never with Save-Data)

let prefetched = null;

/** Fetch the runtime's files into the HTTP cache once per page (boot.js's prefetchPython). */
export function prefetchRuntime() {
  const { settings, pyodide, bootURL, runtime } = runtimeSettings();
  if (!prefetched && !pyodide && !saveData()) {
    mark('prefetch');
    const host = runtime === 'main' ? import('./main-thread.js') : import('./worker-host.js');
    prefetched = Promise.all([host, import(bootURL)])
      .then(([, boot]) => boot.prefetchPython?.(settings)).catch(() => {});
  }
  return prefetched;
}

/**
 * The visitor shows intent (the pointer near the launcher, focus on it): in worker mode, start
 * the worker's Python now, so that a click that follows finds it started or ready
 * (web/runtime/worker-host.js); in the page's own runtime (`runtime` 'main', or a page's
 * Pyodide) only prefetch, since a start there would hold the page's thread. Nothing with
 * Save-Data. `runtime` is the element's attribute, if any. Never rejects; resolves when the
 * start (or prefetch) is over.
 * @param {{runtime?: string}} [options]
 * @returns {Promise<unknown>}
 */
export function startOnIntent({ runtime } = {}) {
  const settings = runtimeSettings();
  if (saveData()) return Promise.resolve(null);
  if ((runtime ?? settings.runtime) !== 'worker' || settings.pyodide) return prefetchRuntime();
  mark('intent-start');
  return import('./worker-host.js').then((host) => host.startWorkerEarly()).catch(() => null);
}
