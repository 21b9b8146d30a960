// Where Python comes from: the runtime's configuration, loaded with the element. The code
// that starts Python (web/runtime-host.js) and the connection to it (web/channel.js) are
// imported only when an element first needs Python, so they cost nothing before the first
// interaction.

let base = new URL('../', import.meta.url).href; // the folder of loader.js
const runtimeOptions = {};

/** Marks for the benchmarks: performance.getEntriesByName('site-agent:ready'). */
export const mark = (name) => {
  try {
    performance.mark(`site-agent:${name}`);
  } catch {}
};

/**
 * Where Python comes from (call before the first panel opens; `window.pysiteAgent` is read
 * too, and loses to this). Options: `indexURL` (Pyodide's folder; default `pyodide/` next to
 * loader.js), `lockFileURL`, `packages`, `pyodide` (a running Pyodide, a promise of one or a
 * function returning either: PyScript pages), `bootURL` (default `web/boot.js`), `snapshot`
 * (false: never keep a memory snapshot in the visitor's Cache Storage; docs/bundle.md),
 * `runtime` ('worker': the agent's Python runs in a module Web Worker, the default; 'main': in
 * the page, the default when `pyodide` is given; an element's `runtime` attribute wins).
 */
export function configureRuntime(options = {}) {
  Object.assign(runtimeOptions, options);
}

export function setBaseURL(url) {
  base = new URL('./', url).href;
}

/**
 * The merged settings: Pyodide's folder and lock, packages, a given Pyodide, boot.js, and
 * where the agent's Python runs (`runtime`: 'worker' by default, 'main' with a given Pyodide).
 */
export function runtimeSettings() {
  const o = { ...(globalThis.pysiteAgent || {}), ...runtimeOptions };
  const dir = (url) => {
    const href = new URL(url, base).href;
    return href.endsWith('/') ? href : `${href}/`;
  };
  const out = { indexURL: dir(o.indexURL ?? 'pyodide/') };
  if (o.lockFileURL) out.lockFileURL = new URL(o.lockFileURL, base).href;
  if (o.packages) out.packages = o.packages;
  if (o.snapshot === false) out.snapshot = false;
  return {
    base,
    settings: out,
    pyodide: o.pyodide,
    bootURL: new URL(o.bootURL ?? 'web/boot.js', base).href,
    // A page's own running Pyodide lives on the main thread, so the agent does too.
    runtime: o.runtime ?? (o.pyodide ? 'main' : 'worker'),
  };
}

/**
 * Starts Python once per page (later calls share it) and resolves to the Pyodide instance
 * with pysite_agent installed. `onProgress(p)` gets boot.js's progress reports. A failed
 * start can be retried by calling again. (web/runtime-host.js)
 */
export function loadRuntime(options) {
  return import('./runtime-host.js').then((host) => host.loadRuntime(options));
}

/**
 * Starts Python and connects one element to a fresh Python controller (web/runtime-host.js).
 * Resolves to the connection `{call(name, ...args), close()}` (web/channel.js).
 */
export function connectAgent(bridge, options = {}) {
  const mode = options.runtime ?? runtimeSettings().runtime;
  if (mode !== 'worker' && mode !== 'main') {
    return Promise.reject(new TypeError(`runtime must be "worker" or "main", not ${JSON.stringify(mode)}.`));
  }
  return import('./runtime-host.js').then((host) => host.connectAgent(bridge, options));
}

// ---- prefetch: warm the HTTP cache when the visitor shows intent (never on idle)

/** The visitor asked the browser to save data (Save-Data): no prefetch, no idle preload. */
export const saveData = () => !!globalThis.navigator?.connection?.saveData;

let prefetched = null;

/** Fetch the runtime's files into the HTTP cache once per page (boot.js's prefetchPython). */
export function prefetchRuntime() {
  const { settings, pyodide, bootURL } = runtimeSettings();
  if (!prefetched && !pyodide && !saveData()) {
    mark('prefetch');
    prefetched = Promise.all([import('./runtime-host.js'), import(bootURL)])
      .then(([, boot]) => boot.prefetchPython?.(settings)).catch(() => {});
  }
  return prefetched;
}

/**
 * Calls prefetchRuntime() once the pointer comes within 96 px of `target` or `target` gets
 * keyboard focus. Returns a function that stops watching.
 */
export function prefetchOnIntent(target) {
  if (saveData() || typeof document === 'undefined') return () => {};
  const watch = new AbortController();
  const go = () => {
    watch.abort();
    prefetchRuntime();
  };
  document.addEventListener('pointermove', (e) => {
    const r = target.getBoundingClientRect();
    const dx = Math.max(r.left - e.clientX, 0, e.clientX - r.right);
    const dy = Math.max(r.top - e.clientY, 0, e.clientY - r.bottom);
    if (r.width && dx * dx + dy * dy <= 96 * 96) go();
  }, { passive: true, signal: watch.signal });
  target.addEventListener('focus', go, { signal: watch.signal });
  return () => watch.abort();
}
