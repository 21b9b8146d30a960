// Where Python comes from: the runtime's configuration (configureRuntime(), window.pysiteAgent),
// the base URL of the bundle, and the benchmarks' performance marks. The bottom of web/runtime/:
// it imports nothing, and every other runtime file may import it.

let base = new URL('../../', import.meta.url).href; // the folder of loader.js
const runtimeOptions = {};

/** Marks for the benchmarks: performance.getEntriesByName('site-agent:ready'). */
export const mark = (name) => {
  try {
    performance.mark(`site-agent:${name}`);
  } catch {}
};

/** The visitor asked the browser to save data (Save-Data): no prefetch, no idle preload. */
export const saveData = () => !!globalThis.navigator?.connection?.saveData;

/**
 * Where Python comes from (call before the first panel opens; `window.pysiteAgent` is read
 * too, and loses to this). Options: `indexURL` (Pyodide's folder; default `pyodide/` next to
 * loader.js), `lockFileURL`, `packages`, `pyodide` (a running Pyodide, a promise of one or a
 * function returning either: PyScript pages), `bootURL` (default `web/runtime/boot.js`),
 * `snapshot` (false: never keep a memory snapshot in the visitor's IndexedDB;
 * docs/bundle.md), `runtime` ('worker': the agent's Python runs in a module Web Worker, the
 * default; 'main': in the page, the default when `pyodide` is given; an element's `runtime`
 * attribute wins).
 */
export function configureRuntime(options = {}) {
  Object.assign(runtimeOptions, options);
}

/** The bundle's folder is the one of `url` (loader.js's own URL). */
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
    bootURL: new URL(o.bootURL ?? 'web/runtime/boot.js', base).href,
    // A page's own running Pyodide lives on the main thread, so the agent does too.
    runtime: o.runtime ?? (o.pyodide ? 'main' : 'worker'),
  };
}

// ---- Trusted Types (a page with `require-trusted-types-for 'script'` in its CSP)

/**
 * The Trusted Types policy the runtime's script URLs go through: the Python worker
 * (web/runtime/worker.js) and the snapshot worker. A page whose CSP lists policy names
 * (`trusted-types ...`) adds this one (docs/element.md, "On real sites").
 */
export const TRUSTED_TYPES_POLICY = 'site-agent';
let policy; // undefined: not made yet; null: none (no Trusted Types, or the page refused the name)

/**
 * `url` (a string) for a script sink such as `new Worker()`: a TrustedScriptURL made by the
 * `site-agent` policy where the browser has Trusted Types, else the string itself. The policy
 * makes one only for a URL inside the bundle's folder (loader.js's); any other URL is a
 * TypeError. Where the page's CSP does not allow the policy's name, the string is returned and
 * the sink refuses it as it would have without this function.
 */
export function scriptURL(url) {
  const types = globalThis.trustedTypes;
  if (!types?.createPolicy) return url;
  if (policy === undefined) {
    try {
      policy = types.createPolicy(TRUSTED_TYPES_POLICY, {
        createScriptURL: (value) => {
          if (!String(value).startsWith(base)) throw new TypeError(`${value} is not a file of pysite-agent's bundle (${base}).`);
          return value;
        },
      });
    } catch {
      policy = null; // not allowed by the page's trusted-types list
    }
  }
  return policy ? policy.createScriptURL(url) : url;
}
