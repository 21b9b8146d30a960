// The agent's Python on the page's main thread (runtime="main", or a page's own Pyodide):
// loadRuntime() starts Pyodide once per page (boot.js does the work) while the page's
// Content-Security-Policy is watched, and connectMain() gives an element its controller.
// No UI lives here; the configuration is web/runtime/settings.js's.
import { mark, runtimeSettings } from './settings.js';
import { openController } from './controller.js';
import { progressFanOut, watchCSP } from './start.js';

let runtime = null;
const progress = progressFanOut();

/**
 * Starts Python once per page (later calls share it) and resolves to the Pyodide instance
 * with pysite_agent installed. `onProgress(p)` gets boot.js's progress reports. A failed
 * start can be retried by calling again.
 */
export function loadRuntime({ onProgress } = {}) {
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
        onProgress: (p) => progress.report(p),
      });
      mark('boot-end');
      return py;
    })(), csp.blocked]);
    runtime.then(csp.stop, csp.stop);
    runtime.catch(() => {
      runtime = null;
    });
  }
  progress.listen(onProgress, runtime);
  return runtime;
}

/**
 * Starts Python in the page and connects one element to a fresh Python controller:
 * `{call(name, ...args), close()}` (web/runtime/controller.js). `onProgress` gets boot.js's
 * reports, then `{phase: 'agent'}`.
 */
export async function connectMain(bridge, { onProgress } = {}) {
  const py = await loadRuntime({ onProgress });
  onProgress?.({ phase: 'agent' });
  return openController(py, bridge);
}
