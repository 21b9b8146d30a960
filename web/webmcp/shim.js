// WebMCP's `document.modelContext` for browsers without it: the part of the
// shim every page loads, kept small (docs/webmcp-native.md describes the shim,
// each choice, and what loads when). The implementation, webmcp/core.js, loads
// the first time the page uses it; calls made before that are queued in order.
// Tools registered here are visible only to scripts of this tab (this origin,
// and frames the page exposes them to). No dependencies, no build step.

const BRAND = Symbol.for('pysite-agent.webmcp-shim');
const WINDOW = Symbol.for('pysite-agent.webmcp-window');
const FRAME_MARK = 'pysite-agent.webmcp';
const START_FORMS = Symbol.for('pysite-agent.webmcp-start-forms');
const HERE = import.meta.url;
let core;
const loadCore = () => (core ??= import(new URL('./core.js', HERE).href));

class ModelContextShim extends EventTarget {
  #impl = null;
  #window;
  #handlers = new Map(); // event type -> [handler, listener]

  constructor(win = null) {
    super();
    this.#window = win;
    if (!win) return;
    if (win.parent !== win) {
      // A frame tells its parent it listens (for tools exposed to its origin).
      win.parent.postMessage({ [FRAME_MARK]: 'hello' }, '*');
      this.#load();
    }
    win.addEventListener('message', (event) => {
      const data = event.data;
      if (data !== null && typeof data === 'object' && typeof data[FRAME_MARK] === 'string') {
        this.#load().then((impl) => impl.message(event));
      }
    });
  }

  #load() {
    this.#impl ??= loadCore().then((m) => m.attach(this, this.#window));
    return this.#impl;
  }

  get [BRAND]() {
    return true;
  }

  get [WINDOW]() {
    return this.#window;
  }

  get [Symbol.toStringTag]() {
    return 'ModelContext';
  }

  /** Registers a tool; resolves once `toolchange` was dispatched. Abort `options.signal` to unregister. */
  registerTool(tool, options = undefined) {
    const argc = arguments.length;
    return this.#load().then((impl) => impl.registerTool(tool, options, argc));
  }

  /** The registered tools, sorted by name, as fresh objects; `{fromOrigins}` filters. */
  getTools(options = undefined) {
    return this.#load().then((impl) => impl.getTools(options));
  }

  /** Runs a tool (webmcp/calls.js); an already aborted signal rejects at once. */
  executeTool(tool, input = undefined, options = undefined) {
    const argc = arguments.length;
    let signal;
    try {
      signal = options?.signal;
    } catch {
      signal = undefined; // the implementation reports the bad options
    }
    if (signal !== null && typeof signal === 'object' && signal.aborted === true) {
      return Promise.reject(signal.reason);
    }
    return this.#load().then((impl) => impl.executeTool(tool, input, options, argc));
  }

  /** Loads the form tools (webmcp/forms.js) for this document. */
  [START_FORMS]() {
    return this.#load().then(() => loadCore()).then((m) => m.startForms(this));
  }

  #getHandler(type) {
    return this.#handlers.get(type)?.[0] ?? null;
  }

  #setHandler(type, handler) {
    const old = this.#handlers.get(type);
    if (old) this.removeEventListener(type, old[1]);
    this.#handlers.delete(type);
    if (typeof handler !== 'function') return; // like native: anything else becomes null
    const listener = (event) => handler.call(this, event);
    this.#handlers.set(type, [handler, listener]);
    this.addEventListener(type, listener);
  }

  get ontoolchange() { return this.#getHandler('toolchange'); }
  set ontoolchange(fn) { this.#setHandler('toolchange', fn); }
  get ontoolactivated() { return this.#getHandler('toolactivated'); }
  set ontoolactivated(fn) { this.#setHandler('toolactivated', fn); }
  get ontoolcancel() { return this.#getHandler('toolcancel'); }
  set ontoolcancel(fn) { this.#setHandler('toolcancel', fn); }
}

/** A new shim with a registry of its own, not installed anywhere (tests, workers, Node). */
export function createModelContext() {
  return new ModelContextShim();
}

/** True for a model context made by this module (any copy of it). */
export function isShim(object) {
  return object !== null && typeof object === 'object' && object[BRAND] === true;
}

/**
 * The page's `document.modelContext` (native or this shim). Throws a `NotFoundError`
 * DOMException when the page has none. The one place the page's tools are looked up.
 */
export function pageModelContext() {
  const context = globalThis.document?.modelContext;
  if (!context) throw new DOMException('This page has no document.modelContext.', 'NotFoundError');
  return context;
}

/** True when the browser itself provides `document.modelContext`. */
export function hasNativeModelContext() {
  if (typeof Document === 'undefined' || typeof document === 'undefined') return false;
  const desc = Object.getOwnPropertyDescriptor(Document.prototype, 'modelContext');
  if (!desc || typeof desc.get !== 'function') return false;
  if (!/\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(desc.get))) return false;
  const mc = desc.get.call(document);
  return mc !== null && typeof mc === 'object' && !isShim(mc);
}

const REGISTRATIONS = Symbol.for('pysite-agent.webmcp-registrations');

/**
 * `tool` for the browser's own registerTool, its `execute` wrapped: a return value that JSON
 * cannot write (a cycle, a BigInt inside, a `toJSON` that throws) becomes unreadableResult()'s
 * text, as the shim's executeTool gives, instead of the rejection Chromium 156 makes of it
 * (indistinguishable from a tool that threw). Every other value is what the browser would
 * make of it: its JSON text, or the value itself. Anything that is not such a tool is as given.
 */
function readableTool(tool) {
  const execute = tool !== null && typeof tool === 'object' ? tool.execute : undefined;
  if (typeof execute !== 'function') return tool;
  const name = String(tool.name);
  const run = async (input, client) => {
    const value = await execute(input, client); // without a `this`, as the browser calls it
    if ((typeof value !== 'object' || value === null) && typeof value !== 'function') return value;
    try {
      return JSON.stringify(value) ?? value; // a function: as given ("undefined")
    } catch (error) {
      // The shim's own text (webmcp/calls.js, loaded only for such a value).
      const calls = await import(new URL('./calls.js', HERE).href);
      return calls.unreadableResult(name, calls.describeError(error));
    }
  };
  // Every other member is read from the tool itself (its getters and private fields work).
  return new Proxy(tool, { get: (target, key) => (key === 'execute' ? run : Reflect.get(target, key)) });
}

function copy(value) {
  try {
    return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  } catch {
    return '(not JSON)';
  }
}

/**
 * Records the raw arguments of every later `registerTool` call on `mc` (native or shim) for
 * the page doctor (web/webmcp/doctor.js), in `globalThis[REGISTRATIONS]`: entries
 * `{name, title, description, inputSchema, annotations, topLevel, ok?, error?}`.
 *
 * It also numbers the registrations, so that the agent can tell a tool that stayed from one
 * registered again with the same content (Chromium's `getTools()` gives fresh objects with no
 * id, and its `toolchange` does not say which tool changed): `mc.siteAgentRegistrationOf(name)`
 * is the number of the registration listed under `name` now, or null when it was registered
 * before this ran or is gone (the agent then falls back to counting events; README, decision
 * binding).
 *
 * On the browser's own WebMCP (not the shim), each tool is registered with its result made
 * readable (readableTool), so that both report a tool that ran the same way.
 */
export function recordRegistrations(mc) {
  if (!mc || globalThis[REGISTRATIONS]) return;
  const records = [];
  const register = mc.registerTool;
  const current = new Map(); // name -> number of the registration listed under it
  let counter = 0;
  Object.defineProperty(globalThis, REGISTRATIONS, { value: records, configurable: true });
  Object.defineProperty(mc, 'siteAgentRegistrationOf', {
    configurable: true,
    value: (name) => current.get(name) ?? null,
  });
  const numbered = (tool, options) => {
    const name = typeof tool?.name === 'string' ? tool.name : null;
    if (name === null) return () => {};
    const number = ++counter;
    const previous = current.get(name);
    current.set(name, number);
    const forget = () => { if (current.get(name) === number) current.delete(name); };
    const signal = options?.signal;
    if (signal?.aborted) forget();
    else signal?.addEventListener?.('abort', forget, { once: true });
    // Refused (a duplicate name, a bad schema): the earlier registration, if any, stays listed.
    return () => {
      if (current.get(name) !== number) return;
      if (previous === undefined) current.delete(name);
      else current.set(name, previous);
    };
  };
  if (typeof mc.unregisterTool === 'function') {
    const unregister = mc.unregisterTool;
    Object.defineProperty(mc, 'unregisterTool', {
      configurable: true,
      writable: true,
      value: function unregisterTool(name) {
        current.delete(name);
        return unregister.apply(this, arguments);
      },
    });
  }
  Object.defineProperty(mc, 'registerTool', {
    configurable: true,
    writable: true,
    value: function registerTool(tool, options) {
      let refused = () => {};
      try {
        refused = numbered(tool, options);
      } catch {
        // an odd descriptor: not numbered; the browser decides
      }
      const record = {};
      for (const key of ['name', 'title', 'description', 'inputSchema', 'annotations']) {
        record[key] = copy(tool?.[key]);
      }
      // Hints given next to the descriptor's members instead of inside `annotations`.
      record.topLevel = Object.keys(tool ?? {}).filter((k) => /Hint$|^debugging$/.test(k));
      records.push(record);
      const args = [...arguments];
      if (!isShim(mc)) args[0] = readableTool(tool);
      let pending;
      try {
        pending = Promise.resolve(register.apply(this, args));
      } catch (error) {
        refused();
        throw error;
      }
      return pending.then((value) => {
        record.ok = true;
        return value;
      }, (error) => {
        refused();
        record.error = `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
        throw error;
      });
    },
  });
}

/** Starts the form tools once the document has a `<form toolname>`. */
function watchForms(context) {
  const found = () => document.querySelector('form[toolname]') !== null;
  if (found()) {
    context[START_FORMS]();
    return;
  }
  const observer = new MutationObserver(() => {
    if (!found()) return;
    observer.disconnect();
    context[START_FORMS]();
  });
  observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['toolname'] });
}

/**
 * Returns `document.modelContext`, installing a shim first only when the page has none
 * (never replacing the browser's own or an earlier shim; the same object each call).
 */
export function installShim() {
  if (typeof document === 'undefined') {
    throw new TypeError('installShim() needs a document; use createModelContext() elsewhere');
  }
  if (document.modelContext) return document.modelContext;
  const context = new ModelContextShim(typeof window === 'undefined' ? null : window);
  Object.defineProperty(document, 'modelContext', {
    value: context,
    enumerable: true,
    configurable: true,
    writable: false,
  });
  watchForms(context);
  return context;
}
