// Worker mode, the worker's side: a module Web Worker that starts Python with bootPython()
// (web/runtime/boot.js) and runs one Python controller (pysite_agent/browser/element.py) per element.
// What only the page has reaches Python through stand-ins with the same API surface, which
// ask the page over the worker channel (web/runtime/channel.js, docs/runtime.md):
//   - modelContext: getTools(), executeTool(tool, args, {signal}) and "toolchange" events;
//     a listed tool is a description with a `handle` that the page keeps;
//   - languageModel: the Prompt API's availability(options), create({monitor, signal, ...})
//     and a session's prompt(), promptStreaming(), measureContextUsage(), clone(), destroy(),
//     contextWindow/contextUsage and its contextoverflow event;
//   - the site's options.model / options.confirm / options.tools, and the element's card.
// Python sees JS objects here exactly as on the main thread, so the tool source and the model
// adapters do not know which runtime hosts them.
import { Endpoint, abortError } from './channel.js';
import { openController } from './controller.js';
import { sessions, workerLanguageModel, workerToolTypes } from './prompt-api.js';

let py = null;
const agents = new Map(); // agent id -> {controller, sources: Map<source key, EventTarget[]>}

const handlers = {};
const notes = {};
const endpoint = new Endpoint(self, handlers, notes);

function toolSource(agent, key, state) {
  const target = new EventTarget();
  target.getTools = () => endpoint.request('tools.list', { agent, source: key });
  target.executeTool = (tool, args, options) =>
    endpoint.request('tools.execute', { agent, handle: tool?.handle ?? null, args }, options?.signal);
  state.sources.set(key, [...(state.sources.get(key) ?? []), target]);
  return target;
}

/** The JS values Python's configure()/replay() take, as stand-ins for the page's. */
function jsValues(agent, state, descriptor) {
  const values = {};
  const model = descriptor?.model;
  if (model) {
    const slot = model.slot;
    const stand = {};
    if (model.name) stand.name = model.name;
    if (model.respond) {
      stand.respond = ({ signal, ...request }) =>
        endpoint.request('model.respond', { agent, slot, request }, signal);
    }
    if (model.availability) {
      stand.availability = () => endpoint.request('model.availability', { agent, slot });
    }
    if (model.prepare) {
      stand.prepare = ({ onProgress, signal } = {}) =>
        endpoint.request('model.prepare', { agent, slot }, signal, (v) => onProgress?.(v));
    }
    values.model = stand;
  }
  const confirm = descriptor?.confirm;
  if (confirm === 'recorded') values.confirm = 'recorded';
  else if (confirm) {
    values.confirm = confirm.callable
      ? (request, options) =>
        endpoint.request('confirm.call', { agent, slot: confirm.slot, request }, options?.signal)
      : 'not a function'; // Python says options.confirm must be a function
  }
  const tools = descriptor?.tools;
  if (tools) values.tools = tools.valid ? toolSource(agent, tools.slot, state) : {};
  if (descriptor?.preApproved != null) values.preApproved = descriptor.preApproved;
  return values;
}

// The page's visibility, for what follows `visibilitychange` on a document (Chrome's model
// adapter destroys its sessions when the page is hidden): the page sends page.visibility.
const pageDocument = new EventTarget();
let visibility = 'visible';
Object.defineProperty(pageDocument, 'visibilityState', { get: () => visibility });

function bridge(agent, state, types) {
  return {
    document: pageDocument,
    toolTypes: workerToolTypes(types),
    emit: (event, extra) => endpoint.notify('bridge.emit', { agent, event, extra }),
    started: (text, run) => endpoint.notify('bridge.started', { agent, text, run }),
    save: (state, run) => endpoint.notify('bridge.save', { agent, state, run: run ?? null }),
    confirm: (request, signal) => endpoint.request('bridge.confirm', { agent, request }, signal),
    // Where the page's globals would be read on the main thread:
    modelContext: toolSource(agent, 'page', state),
    languageModel: workerLanguageModel(endpoint, agent),
    // The site's own model runs beside Python: its engine host loads on first use only.
    localEngine: (options) => import('./local-model.js').then((m) => m.createLocalEngine(options)),
  };
}

const METHODS = [
  'configure', 'status', 'run', 'replay', 'evaluate', 'prepare', 'tools', 'abort', 'deny_pending',
  'reset', 'state', 'restore', 'forget_model', 'route',
];

Object.assign(handlers, {
  async boot({ settings, bootURL }, { signal, progress }) {
    if (py) return true;
    const { bootPython } = await import(bootURL);
    py = await bootPython({
      ...settings,
      signal,
      onProgress: progress,
      // The page marks it (site-agent:snapshot, site-agent:snapshot-saved) for benchmarks.
      onSnapshot: (info) => endpoint.notify('boot.snapshot', info),
      // Its timing marks ride on the progress reports; the page puts them on its timeline
      // (web/runtime/start.js).
      onMark: (m) => progress({ phase: 'mark', ...m }),
    });
    return true;
  },
  // Diagnostics (docs/runtime.md): live PyProxies, with Pyodide's allocation tracing.
  'debug.pyproxies': ({ trace }) => {
    const module = py?._module;
    if (!module?.enable_pyproxy_allocation_tracing) return null;
    if (trace === true) module.enable_pyproxy_allocation_tracing();
    const live = module.pyproxy_alloc_map?.size ?? null;
    if (trace === false) module.disable_pyproxy_allocation_tracing();
    return live;
  },
  'agent.open': ({ agent, lmTypes: types }) => {
    const state = { sources: new Map(), controller: null };
    state.controller = openController(py, bridge(agent, state, types));
    agents.set(agent, state);
    return true;
  },
  'agent.call': async ({ agent, name, args }, { progress }) => {
    const state = agents.get(agent);
    if (!state) throw abortError('the element was removed');
    if (!METHODS.includes(name)) throw new TypeError(`unknown controller method ${name}`);
    let call = args ?? [];
    if (name === 'configure') {
      for (const key of [...state.sources.keys()]) if (key !== 'page') state.sources.delete(key);
    }
    if (name === 'configure' || name === 'replay') call = [call[0], jsValues(agent, state, call[1])];
    else if (name === 'prepare') call = [(fraction) => progress(fraction)];
    return (await state.controller.call(name, ...call)) ?? null;
  },
});

Object.assign(notes, {
  'agent.close': ({ agent }) => {
    for (const key of [...sessions.keys()]) if (key.startsWith(`${agent}:`)) sessions.delete(key);
    const state = agents.get(agent);
    agents.delete(agent);
    if (!state) return;
    state.controller.close();
  },
  'lm.event': ({ agent, session, type }) => {
    sessions.get(`${agent}:${session}`)?.dispatchEvent(new Event(type));
  },
  'page.visibility': ({ state }) => {
    if (state === visibility) return;
    visibility = state;
    pageDocument.dispatchEvent(new Event('visibilitychange'));
  },
  'tools.change': ({ agent, source }) => {
    for (const target of agents.get(agent)?.sources.get(source) ?? []) {
      target.dispatchEvent(new Event('toolchange'));
    }
  },
});

// A Content-Security-Policy of this worker's own that blocks WebAssembly: say so.
self.addEventListener('securitypolicyviolation', (event) => {
  if (event.blockedURI === 'wasm-eval' || event.blockedURI === 'eval') {
    console.error(
      `<site-agent>: the worker's Content-Security-Policy blocks ${event.blockedURI === 'eval' ? "'unsafe-eval'" : "'wasm-unsafe-eval'"}, which Python (Pyodide) needs in script-src.`,
    );
  }
});
