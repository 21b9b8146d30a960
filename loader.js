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
import { configureRuntime, loadRuntime } from './web/runtime/runtime.js';

if (typeof document !== 'undefined') {
  if (!document.modelContext) installShim();
  recordRegistrations(document.modelContext); // for the page doctor (web/webmcp/doctor.js)
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
