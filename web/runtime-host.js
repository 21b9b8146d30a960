// The runtime host of <site-agent>: where Python starts. loadRuntime() starts Pyodide once
// per page (boot.js does the work), watches the page's Content-Security-Policy while it
// starts, and fans boot.js's progress out to every element waiting; connectAgent() gives an
// element its connection to a Python controller (web/channel.js). No UI lives here; the
// configuration is web/runtime.js's.
import { mark, runtimeSettings } from './runtime.js';

let runtime = null;
const progressListeners = new Set();

/**
 * Pyodide compiles WebAssembly, which a Content-Security-Policy allows with 'wasm-unsafe-eval'
 * in script-src. A policy that blocks it can leave the start hanging instead of failing;
 * this turns a violation by our own files (under `folders`) into an error.
 */
export function watchCSP(folders) {
  const controller = new AbortController();
  let stop = () => {};
  const ours = (file) => !!file && folders.some((folder) => file.startsWith(folder));
  const blocked = new Promise((_, reject) => {
    if (typeof document === 'undefined') return;
    const onViolation = (event) => {
      const wasm = event.blockedURI === 'wasm-eval';
      if (!(wasm && (!event.sourceFile || ours(event.sourceFile)))
        && !(event.blockedURI === 'eval' && ours(event.sourceFile))) return;
      const keyword = event.blockedURI === 'eval' ? "'unsafe-eval'" : "'wasm-unsafe-eval'";
      const error = new Error(`The page's Content-Security-Policy blocks ${keyword}, which Python (Pyodide) needs in script-src.`);
      controller.abort(error);
      reject(error);
    };
    document.addEventListener('securitypolicyviolation', onViolation);
    stop = () => document.removeEventListener('securitypolicyviolation', onViolation);
  });
  blocked.catch(() => {});
  return { blocked, signal: controller.signal, stop: () => stop() };
}

/**
 * Starts Python once per page (later calls share it) and resolves to the Pyodide instance
 * with pysite_agent installed. `onProgress(p)` gets boot.js's progress reports. A failed
 * start can be retried by calling again.
 */
export function loadRuntime({ onProgress } = {}) {
  if (onProgress) progressListeners.add(onProgress);
  if (!runtime) {
    const { base, settings, pyodide, bootURL } = runtimeSettings();
    const csp = watchCSP([base, settings.indexURL]);
    runtime = Promise.race([(async () => {
      mark('boot-start');
      let given = typeof pyodide === 'function' ? pyodide() : pyodide;
      given = await given;
      const { bootPython } = await import(bootURL);
      const py = await bootPython({
        ...settings,
        signal: csp.signal,
        pyodide: given ?? undefined,
        onProgress: (p) => {
          if (p?.phase && (p.loaded === 0 || p.loaded === p.total)) {
            mark(`${p.phase}:${p.loaded === p.total ? 'end' : 'start'}`);
          }
          for (const fn of progressListeners) {
            try {
              fn(p);
            } catch {}
          }
        },
      });
      mark('boot-end');
      return py;
    })(), csp.blocked]);
    runtime.then(csp.stop, csp.stop);
    runtime.catch(() => {
      runtime = null;
    });
  }
  const done = () => onProgress && progressListeners.delete(onProgress);
  runtime.then(done, done);
  return runtime;
}
// `proxy.method(...)` would leave the bound-method PyProxy alive until garbage collection:
// take it, call it, destroy it.
export function callPy(proxy, name, ...args) {
  const method = proxy[name];
  try {
    return method(...args);
  } finally {
    method.destroy();
  }
}

/**
 * A controller in the page's own Pyodide `py`, created with the element's `bridge`: the
 * connection `{call(name, ...args), close()}`. Python's close() releases the agent; destroy()
 * is the PyProxy's own (frees the proxy).
 */
export function inPageAgent(py, bridge) {
  const mod = py.pyimport('pysite_agent.browser.element');
  let controller;
  try {
    controller = callPy(mod, 'create_controller', bridge);
  } finally {
    mod.destroy();
  }
  return {
    call: (name, ...args) => callPy(controller, name, ...args),
    close() {
      const owned = controller;
      controller = null;
      if (!owned) return;
      try {
        callPy(owned, 'close');
      } finally {
        owned.destroy();
      }
    },
  };
}

/**
 * Starts Python and connects one element to a fresh Python controller. `bridge` is the
 * element's side ({emit, started, confirm}, see pysite_agent/browser/element.py);
 * `onProgress` gets boot.js's reports, then `{phase: 'agent'}`; `runtime` is 'worker' (a
 * module Web Worker, web/worker-host.js) or 'main' (this page's own Pyodide, loadRuntime()).
 * Resolves to the connection `{call(name, ...args), close()}`: the same calls either way.
 */
export async function connectAgent(bridge, { onProgress, runtime } = {}) {
  let mode = runtime || runtimeSettings().runtime;
  if (mode !== 'worker' && mode !== 'main') {
    console.warn(`<site-agent>: runtime="${mode}" is neither "worker" nor "main"; using "worker".`);
    mode = 'worker';
  }
  if (mode === 'worker') {
    const host = await import('./worker-host.js');
    return host.connectWorkerAgent(bridge, { onProgress, watchCSP });
  }
  const py = await loadRuntime({ onProgress });
  onProgress?.({ phase: 'agent' });
  return inPageAgent(py, bridge);
}
