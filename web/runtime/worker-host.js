// Worker mode, the page's side (main thread): starts the module worker that runs Python
// (web/runtime/worker.js), and answers its requests over the worker channel (web/runtime/channel.js) with
// what only the page has: document.modelContext and the tools a site passes, LanguageModel
// (exposed on windows only), the element's confirmation card and the site's JS options.
// docs/runtime.md describes the messages.
//
// Safety across the hop: tools cross as descriptions plus a handle that stays here; at
// executeTool the page's tools are listed again and the handle must still name a tool with
// the same name and content, else the call is refused (StaleToolsError, "stale-tools").
// Stop aborts the signals of everything running here for the element at once, and until the
// worker confirms the abort no tool or model call starts. A tool result that cannot be cloned
// becomes an error result the model can read.
import { Endpoint, abortError } from './channel.js';
import { pageToolTypes, plain, promptHandlers, usage } from './prompt-api.js';
import { mark, runtimeSettings, scriptURL, TRUSTED_TYPES_POLICY } from './settings.js';
import { progressFanOut, watchCSP } from './start.js';

let shared = null; // {worker, endpoint, ready, agents}
const progress = progressFanOut();
let nextAgent = 1;

/** A tool as plain data (one member at a time: a Chrome 160 Tool cannot be cloned). */
function describe(tool) {
  const out = {};
  for (const key of ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations']) {
    let value;
    try {
      value = plain(tool[key]);
    } catch {
      value = key.endsWith('Schema') ? '(not JSON)' : null; // the worker's reader says why
    }
    if (value !== null && value !== undefined) out[key] = value;
  }
  return out;
}

function registrationOf(target, name) {
  try {
    const number = target.siteAgentRegistrationOf?.(name);
    return Number.isSafeInteger(number) ? number : null;
  } catch {
    return null;
  }
}

function staleError(name) {
  return new DOMException(
    `The page's tool ${JSON.stringify(name)} changed after this call was decided, so it was not run.`,
    'StaleToolsError',
  );
}

function cloneable(value) {
  try {
    structuredClone(value);
    return null;
  } catch (error) {
    return error;
  }
}

class AgentHost {
  handles = new Map(); // handle -> {key, raw, name, fingerprint}
  listings = new Map(); // source key -> [handles of recent listings]
  sources = new Map(); // source key -> {target, onChange}
  slots = new Map(); // slot -> a JS value the site passed (model, confirm, tools)
  sessions = new Map(); // LanguageModel sessions by id
  running = new Set(); // AbortControllers of calls running here for the worker
  halted = 0; // > 0 while a Stop crosses to the worker
  nextId = 1;
  closed = false;

  constructor(id, bridge, endpoint) {
    this.id = id;
    this.bridge = bridge;
    this.endpoint = endpoint;
  }

  request(name, ...args) {
    return this.endpoint.request('agent.call', { agent: this.id, name, args });
  }

  requestWithProgress(name, onProgress, ...args) {
    return this.endpoint.request('agent.call', { agent: this.id, name, args }, undefined, onProgress);
  }

  /** Runs `fn(signal)` unless a Stop is crossing; Stop aborts `signal`. */
  async guard(signal, fn) {
    if (this.halted || this.closed) throw abortError('stopped');
    const controller = new AbortController();
    const relay = () => controller.abort(abortError(signal.reason));
    if (signal.aborted) relay();
    else signal.addEventListener('abort', relay, { once: true });
    this.running.add(controller);
    try {
      return await fn(controller.signal);
    } finally {
      this.running.delete(controller);
      signal.removeEventListener('abort', relay);
    }
  }

  /** Stop (abort) or reset: abort here at once, then in Python; nothing starts meanwhile. */
  stop(name, args) {
    this.halted += 1;
    for (const controller of this.running) controller.abort(abortError('stopped by the visitor'));
    const done = this.endpoint.request('agent.call', { agent: this.id, name, args });
    done.then(() => {}, () => {}).finally(() => {
      this.halted -= 1;
    });
    return undefined;
  }

  newSlot(value) {
    const slot = this.nextId++;
    this.slots.set(slot, value);
    return slot;
  }

  async configure(config, values = {}) {
    const keep = new Set();
    const descriptor = {};
    const model = values.model;
    if (model != null) {
      const slot = this.newSlot(model);
      keep.add(slot);
      descriptor.model = {
        slot,
        name: typeof model.name === 'string' ? model.name : null,
        respond: typeof model.respond === 'function',
        availability: typeof model.availability === 'function',
        prepare: typeof model.prepare === 'function',
      };
    }
    if (values.confirm != null) {
      const slot = this.newSlot(values.confirm);
      keep.add(slot);
      descriptor.confirm = { slot, callable: typeof values.confirm === 'function' };
    }
    if (values.tools != null) {
      const tools = values.tools;
      const slot = this.newSlot(tools);
      keep.add(slot);
      descriptor.tools = {
        slot,
        valid: typeof tools.getTools === 'function' && typeof tools.executeTool === 'function',
      };
    }
    const text = await this.request('configure', config, descriptor);
    // The old agent is gone in Python: forget what only it used.
    for (const slot of [...this.slots.keys()]) {
      if (!keep.has(slot) && !this.replaySlots.has(slot)) this.dropSlot(slot);
    }
    return text;
  }

  replaySlots = new Set();

  async replay(text, options = {}) {
    const descriptor = {};
    let slot = null;
    if (options.confirm === 'recorded') descriptor.confirm = 'recorded';
    else if (typeof options.confirm === 'function') {
      slot = this.newSlot(options.confirm);
      this.replaySlots.add(slot);
      descriptor.confirm = { slot, callable: true };
    }
    if (options.preApproved != null) descriptor.preApproved = plain(options.preApproved);
    try {
      return await this.request('replay', text, descriptor);
    } finally {
      if (slot !== null) {
        this.replaySlots.delete(slot);
        this.dropSlot(slot);
      }
    }
  }

  prepare(onProgress) {
    return this.requestWithProgress('prepare', (fraction) => {
      if (typeof onProgress === 'function') onProgress(fraction);
    });
  }

  dropSlot(slot) {
    this.slots.delete(slot);
    const source = this.sources.get(slot);
    if (source) {
      source.target.removeEventListener?.('toolchange', source.onChange);
      this.sources.delete(slot);
    }
  }

  slot(slot) {
    if (!this.slots.has(slot)) throw new TypeError('this setting was replaced');
    return this.slots.get(slot);
  }

  // ---- tools

  target(key) {
    if (key === 'page') {
      // The element hands the page's tools in (web/webmcp/shim.js looks them up).
      if (typeof this.bridge.pageTools !== 'function') {
        throw new DOMException('This page has no document.modelContext.', 'NotFoundError');
      }
      return this.bridge.pageTools();
    }
    return this.slot(key);
  }

  watch(key, target) {
    if (this.sources.has(key) || typeof target.addEventListener !== 'function') return;
    const onChange = () => this.endpoint.notify('tools.change', { agent: this.id, source: key });
    target.addEventListener('toolchange', onChange);
    this.sources.set(key, { target, onChange });
  }

  async list(key) {
    const target = this.target(key);
    this.watch(key, target);
    const raw = await target.getTools();
    const out = [];
    const handles = [];
    for (const tool of raw ?? []) {
      if (!tool) continue;
      const origin = tool.source ?? tool.window;
      if (origin != null && typeof window !== 'undefined' && origin !== window) continue;
      const described = describe(tool);
      if (typeof described.name !== 'string' || !described.name) continue;
      const handle = this.nextId++;
      const fingerprint = JSON.stringify(described);
      this.handles.set(handle, { key, raw: tool, name: described.name, fingerprint });
      handles.push(handle);
      // A <form toolname> without toolautosubmit ends when the visitor submits it: Python,
      // which has no document in the worker, waits for the visitor instead of the tool timeout.
      const waits = key === 'page' && formWaits(described.name);
      const entry = waits ? { ...described, handle, waitsForVisitor: true } : { ...described, handle };
      // The loader's number for this registration (web/webmcp/shim.js recordRegistrations).
      const registration = registrationOf(target, described.name);
      if (registration !== null) entry.registration = registration;
      out.push(entry);
    }
    // Keep the handles of the latest few listings of this source (a run lists, then checks).
    const recent = this.listings.get(key) ?? [];
    recent.push(handles);
    while (recent.length > 4) for (const old of recent.shift()) this.handles.delete(old);
    this.listings.set(key, recent);
    return out;
  }

  async execute({ handle, args }, signal) {
    const entry = this.handles.get(handle);
    if (!entry) throw staleError('?');
    const target = this.target(entry.key);
    // The same registration the visitor approved: listed now with the same name and content.
    const now = [...((await target.getTools()) ?? [])].find((t) => t?.name === entry.name);
    if (!now) throw staleError(entry.name);
    let fingerprint;
    try {
      fingerprint = JSON.stringify(describe(now));
    } catch {
      fingerprint = null;
    }
    if (fingerprint !== entry.fingerprint) throw staleError(entry.name);
    return this.guard(signal, async (inner) => {
      const result = await target.executeTool(now, args, { signal: inner });
      if (inner.aborted) throw abortError(inner.reason);
      const problem = cloneable(result);
      if (!problem) return result ?? null;
      return {
        content: [{
          type: 'text',
          text: `${entry.name} returned a value that cannot be sent to the agent (${problem.name}: ${problem.message}). The tool ran; its result is unknown.`,
        }],
        isError: true,
      };
    });
  }

  /** Keep a Prompt API session here; the worker gets its id, sizes and events. */
  keep(session) {
    const id = this.nextId++;
    this.sessions.set(id, session);
    session.addEventListener?.('contextoverflow', () => {
      this.endpoint.notify('lm.event', { agent: this.id, session: id, type: 'contextoverflow' });
    });
    return { session: id, usage: usage(session) };
  }

  session(id) {
    const session = this.sessions.get(id);
    if (!session) throw new DOMException('The session was destroyed.', 'InvalidStateError');
    return session;
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    for (const controller of this.running) controller.abort(abortError('removed'));
    for (const slot of [...this.slots.keys()]) this.dropSlot(slot);
    const page = this.sources.get('page');
    page?.target.removeEventListener?.('toolchange', page.onChange);
    this.sources.clear();
    for (const session of this.sessions.values()) {
      try {
        session.destroy?.();
      } catch {}
    }
    this.sessions.clear();
    this.handles.clear();
    shared?.agents.delete(this.id);
    this.endpoint.notify('agent.close', { agent: this.id });
  }
}

/** Whether the page has a `<form toolname=name>` that waits for the visitor's submit. */
function formWaits(name) {
  try {
    const form = globalThis.document?.querySelector(`form[toolname="${CSS.escape(name)}"]`);
    return !!form && !form.hasAttribute('toolautosubmit');
  } catch {
    return false;
  }
}

function handlers(agents) {
  const host = (params) => {
    const agent = agents.get(params?.agent);
    if (!agent) throw abortError('the element was removed');
    return agent;
  };
  return {
    'bridge.confirm': (p, { signal }) => {
      const a = host(p);
      return a.guard(signal, (inner) => a.bridge.confirm(p.request, inner));
    },
    'confirm.call': (p, { signal }) => {
      const a = host(p);
      return a.guard(signal, (inner) => a.slot(p.slot)(p.request, { signal: inner }));
    },
    'model.respond': (p, { signal }) => {
      const a = host(p);
      return a.guard(signal, (inner) => a.slot(p.slot).respond({ ...p.request, signal: inner }));
    },
    'model.availability': (p) => host(p).slot(p.slot).availability(),
    'model.prepare': (p, { signal, progress }) => {
      const a = host(p);
      return a.guard(signal, async (inner) => {
        await a.slot(p.slot).prepare({ signal: inner, onProgress: (fraction) => progress(fraction) });
      });
    },
    'tools.list': (p) => host(p).list(p.source),
    'tools.execute': (p, { signal }) => host(p).execute(p, signal),
    ...promptHandlers(host),
  };
}

function notes(agents) {
  return {
    'boot.snapshot': (info) => {
      const name = info?.saved === undefined ? 'site-agent:snapshot' : 'site-agent:snapshot-saved';
      try {
        performance.mark(name, { detail: info });
      } catch {}
    },
    'bridge.emit': (p) => agents.get(p.agent)?.bridge.emit(p.event, p.extra),
    'bridge.started': (p) => agents.get(p.agent)?.bridge.started(p.text, p.run),
    'bridge.save': (p) => agents.get(p.agent)?.bridge.save?.(p.state, p.run ?? undefined),
    'lm.destroy': (p) => {
      const a = agents.get(p.agent);
      const session = a?.sessions.get(p.session);
      a?.sessions.delete(p.session);
      try {
        session?.destroy?.();
      } catch {}
    },
  };
}

function startWorker() {
  const { base, settings, bootURL } = runtimeSettings();
  const agents = new Map();
  const workerURL = new URL('./worker.js', import.meta.url).href;
  const refused = `The page does not allow the Python worker (web/runtime/worker.js): its Content-Security-Policy must allow it in worker-src (or script-src), or set runtime="main".`;
  let worker;
  try {
    worker = new Worker(scriptURL(workerURL), { type: 'module', name: 'site-agent' });
  } catch (error) {
    if (/Trusted/.test(String(error?.message))) {
      throw new Error(`The page requires Trusted Types: its Content-Security-Policy must allow the policy "${TRUSTED_TYPES_POLICY}" in trusted-types (docs/element.md). ${error.message}`);
    }
    throw new Error(`${refused} ${error.message}`);
  }
  const endpoint = new Endpoint(worker, handlers(agents), notes(agents));
  if (typeof globalThis.pysiteAgentChannelTap === 'function') endpoint.tap = globalThis.pysiteAgentChannelTap;
  const csp = watchCSP([base, settings.indexURL]);
  let forbidden = false;
  const onViolation = (event) => {
    if (event.blockedURI === workerURL) forbidden = true;
  };
  globalThis.document?.addEventListener('securitypolicyviolation', onViolation);
  const failed = new Promise((_, reject) => {
    worker.addEventListener('error', (event) => {
      event.preventDefault?.();
      // The violation event may come after the worker's error: give it a task to arrive.
      setTimeout(() => reject(new Error(forbidden ? refused
        : `The Python worker did not start: ${event.message || 'its script could not be loaded'}.`)), 50);
    });
  });
  mark('boot-start');
  const ready = Promise.race([
    endpoint.request('boot', { settings, bootURL }, undefined, (p) => progress.report(p)),
    failed,
    csp.blocked,
  ]).then((value) => {
    mark('boot-end');
    return value;
  });
  const state = { worker, endpoint, ready, agents };
  const stopWatching = () => {
    csp.stop();
    globalThis.document?.removeEventListener('securitypolicyviolation', onViolation);
  };
  // The worker has no document: tell it the page's visibility now and on every change.
  const visibility = () => {
    const state = globalThis.document?.visibilityState === 'hidden' ? 'hidden' : 'visible';
    endpoint.notify('page.visibility', { state });
  };
  ready.then(() => {
    visibility();
    globalThis.document?.addEventListener('visibilitychange', visibility);
  }, () => {});
  ready.then(stopWatching, (error) => {
    stopWatching();
    worker.terminate();
    endpoint.failAll(error);
    if (shared === state) shared = null;
  });
  return state;
}

/**
 * Diagnostics (tests, debugging): how many PyProxies are alive in the worker's Python.
 * `trace: true` first turns on Pyodide's PyProxy allocation tracing (only proxies made after
 * that are counted), `false` turns it off after counting. Null when no worker runs yet or
 * this Pyodide has no tracing.
 * @param {{trace?: boolean}} [options]
 * @returns {Promise<number | null>}
 */
export async function workerPyProxies({ trace } = {}) {
  if (!shared) return null;
  await shared.ready;
  return shared.endpoint.request('debug.pyproxies', { trace: typeof trace === 'boolean' ? trace : null });
}

/**
 * Starts the page's Python worker now, without an element (the visitor's intent: see
 * web/runtime/runtime.js's startOnIntent); the next connectWorker uses it. Resolves when it is
 * ready, rejects when it failed (then the next connectWorker starts again).
 */
export function startWorkerEarly() {
  if (!shared) shared = startWorker();
  return shared.ready;
}

/**
 * The connection of one element to a controller in the worker: `{call(name, ...args),
 * close()}`, the same calls as in the page (web/runtime/main-thread.js). Starts the worker once per
 * page; `onProgress` gets boot.js's reports, then `{phase: 'agent'}`.
 */
export async function connectWorker(bridge, { onProgress } = {}) {
  if (!shared) shared = startWorker();
  const state = shared;
  progress.listen(onProgress, state.ready);
  await state.ready;
  onProgress?.({ phase: 'agent' });
  const id = nextAgent++;
  const host = new AgentHost(id, bridge, state.endpoint);
  state.agents.set(id, host);
  await state.endpoint.request('agent.open', { agent: id, lmTypes: pageToolTypes() });
  return {
    call(name, ...args) {
      if (host.closed) throw new Error('The element was removed.');
      if (name === 'abort' || name === 'reset') return host.stop(name, args);
      if (name === 'configure') return host.configure(...args);
      if (name === 'replay') return host.replay(...args);
      if (name === 'prepare') return host.prepare(args[0]);
      return host.request(name, ...args);
    },
    close: () => host.close(),
  };
}
