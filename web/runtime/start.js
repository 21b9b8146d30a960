// What the two page-side starts of Python share (web/runtime/main-thread.js, the page's own
// Pyodide; web/runtime/worker-host.js, the module worker): the Content-Security-Policy watch
// and the fan-out of boot.js's progress to every element waiting for the start.
import { mark } from './settings.js';

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
 * One start's progress, told to every element waiting for it: `report(p)` marks each phase's
 * start and end (site-agent:runtime:start, ...) and calls the listeners; `listen(onProgress,
 * until)` adds one until the promise `until` settles, and first tells it the latest report (a
 * start that began on the visitor's intent, before the click, shows where it is at once).
 * A worker's timing marks (`{phase: 'mark', name, at, detail?}`, boot.js's `onMark`, `at` in
 * ms since the epoch) become the page's marks `site-agent:NAME` at that moment; they are not
 * progress and reach no listener.
 */
export function progressFanOut() {
  const listeners = new Set();
  let latest = null;
  return {
    report(p) {
      if (p?.phase === 'mark') {
        placeMark(p);
        return;
      }
      if (p?.phase && (p.loaded === 0 || p.loaded === p.total)) {
        mark(`${p.phase}:${p.loaded === p.total ? 'end' : 'start'}`);
      }
      latest = p;
      for (const fn of listeners) {
        try {
          fn(p);
        } catch {}
      }
    },
    listen(onProgress, until) {
      if (!onProgress) return;
      listeners.add(onProgress);
      const done = () => listeners.delete(onProgress);
      until.then(done, done);
      if (latest) {
        try {
          onProgress(latest);
        } catch {}
      }
    },
  };
}

function placeMark({ name, at, detail }) {
  try {
    const startTime = Number(at) - performance.timeOrigin;
    if (typeof name !== 'string' || !(startTime >= 0)) return;
    performance.mark(`site-agent:${name}`, detail === undefined ? { startTime } : { startTime, detail });
  } catch {}
}
