// pysite-agent: the one file a site includes.
//
//   <script type="module" src="/site-agent/loader.js"></script>
//   <site-agent label="Ask this site"></site-agent>
//
// On import it installs a page-local WebMCP shim when the page has no
// document.modelContext (so the page can register tools at once), and defines
// <site-agent>. Python (Pyodide) starts only when the panel opens, ask() is
// called, or on idle with the `preload` attribute. By default Pyodide and the
// wheels are loaded from `pyodide/` next to this file; see configureRuntime().
import {
  installShim,
  createModelContext,
  hasNativeModelContext,
  isShim,
  recordRegistrations,
} from './web/webmcp/shim.js';
import { defineSiteAgent, DEFAULT_STRINGS } from './web/element/element.js';
import { configureRuntime } from './web/runtime/settings.js';

/**
 * Starts Python in the page once (later calls share it) and resolves to the Pyodide instance
 * with pysite_agent installed (web/runtime/main-thread.js; docs/runtime.md).
 */
const loadRuntime = (options) => import('./web/runtime/runtime.js').then((m) => m.loadRuntime(options));

if (typeof document !== 'undefined') {
  // When loader.js ran, for the page doctor's loader-order finding (web/webmcp/doctor.js).
  globalThis[Symbol.for('pysite-agent.loader')] ??= { url: import.meta.url, readyState: document.readyState };
  // The page's own document.modelContext, or the shim when it has none; its registrations
  // are recorded for the page doctor (web/webmcp/doctor.js).
  recordRegistrations(installShim());
}
defineSiteAgent(import.meta.url);

export {
  installShim,
  createModelContext,
  hasNativeModelContext,
  isShim,
  configureRuntime,
  loadRuntime,
  DEFAULT_STRINGS,
};
