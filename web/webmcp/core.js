// The WebMCP shim's implementation (registration, listing, events), loaded by
// webmcp/shim.js on first use. Same-origin frames share one registry (on the
// topmost same-origin window); each context answers RUN (run a tool it hosts)
// and NOTIFY (dispatch one of its events). docs/webmcp-native.md: each choice.
import { readSchema as readSchemaText } from './schema.js';

const REGISTRY = Symbol.for('pysite-agent.webmcp-registry');
const RUN = Symbol.for('pysite-agent.webmcp-run');
const NOTIFY = Symbol.for('pysite-agent.webmcp-notify');
const WINDOW = Symbol.for('pysite-agent.webmcp-window');
const FORMS = Symbol.for('pysite-agent.webmcp-forms');
const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
// Annotations Chromium knows: booleans, false when absent if any annotations were given.
const KNOWN_HINTS = ['consequentialHint', 'debugging', 'readOnlyHint', 'untrustedContentHint'];
const HERE = import.meta.url;

let framesModule;
/** webmcp/frames.js (exposedTo across origins, over postMessage), loaded once. */
function frames() {
  framesModule ??= import(new URL('./frames.js', HERE).href);
  return framesModule;
}
const FRAME_MARK = 'pysite-agent.webmcp';

/** Resolves in a later task: native dispatches events and runs tools that way. */
function nextTask() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function fail(what, message) {
  return new TypeError(`Failed to execute '${what}' on 'ModelContext': ${message}`);
}

/** WebIDL DOMString conversion: null becomes "null", numbers their text. */
function toDOMString(value) {
  if (typeof value === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
  return String(value);
}

function isObjectLike(value) {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

function readSignal(options, what) {
  if (options === undefined || options === null) return undefined;
  if (!isObjectLike(options)) throw fail(what, 'The options are not an object.');
  const { signal } = options;
  if (signal === undefined) return undefined;
  // Native wants an AbortSignal of its own realm; the shim also takes one from
  // another realm (such as a frame) by its shape.
  const ok = (typeof AbortSignal === 'function' && signal instanceof AbortSignal)
    || (isObjectLike(signal) && typeof signal.aborted === 'boolean'
      && typeof signal.addEventListener === 'function');
  if (!ok) throw fail(what, "Failed to read the 'signal' property: Failed to convert value to 'AbortSignal'.");
  return signal;
}

/** JSON text of a value (functions and undefined dropped, as native does). */
function jsonText(value, what) {
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw fail(what, error.message);
  }
}

/** A tool's schema member as JSON text, or undefined (webmcp/schema.js: what is accepted). */
function readSchema(schema, member) {
  return readSchemaText(schema, member, (message) => fail('registerTool', message));
}

function readAnnotations(annotations) {
  if (annotations === undefined) return undefined;
  if (annotations !== null && typeof annotations !== 'object') {
    throw fail('registerTool', "Failed to read the 'annotations' property: The provided value is not of type 'ToolAnnotations'.");
  }
  // Keep every annotation the page gave (native drops the ones it does not
  // know), as JSON; the known hints become booleans, false when absent.
  const kept = JSON.parse(jsonText(annotations ?? {}, 'registerTool'));
  for (const hint of KNOWN_HINTS) kept[hint] = Boolean(annotations?.[hint]);
  const sorted = Object.fromEntries(Object.keys(kept).sort().map((key) => [key, kept[key]]));
  return JSON.stringify(sorted);
}

/** `exposedTo`: a sequence of potentially trustworthy origins (spec), as strings. */
function readExposedTo(options) {
  const list = isObjectLike(options) ? options.exposedTo : undefined;
  if (list === undefined) return undefined;
  if (typeof list === 'string' || !isObjectLike(list) || typeof list[Symbol.iterator] !== 'function') {
    throw fail('registerTool', "Failed to read the 'exposedTo' property: The provided value cannot be converted to a sequence.");
  }
  return [...list].map((item) => {
    let origin;
    try {
      origin = new URL(toDOMString(item)).origin;
    } catch {
      origin = 'null';
    }
    const host = origin.replace(/^[a-z]+:\/\//, '').replace(/:\d+$/, '');
    const local = ['localhost', '127.0.0.1', '[::1]'].includes(host) || host.endsWith('.localhost');
    if (!(origin.startsWith('https://') || origin.startsWith('wss://') || (local && origin.startsWith('http://')))) {
      throw new DOMException(`exposedTo: '${item}' is not a potentially trustworthy origin`, 'SecurityError');
    }
    return origin;
  });
}

let callsModule = null; // webmcp/calls.js once loaded
let callsLoading = null;
/** webmcp/calls.js (executeTool, the argument check, aborts), loaded on the first call. */
function calls() {
  callsLoading ??= import(new URL('./calls.js', HERE).href).then((m) => (callsModule = m));
  return callsLoading;
}

function eventClass(name) {
  const existing = globalThis[name];
  if (typeof existing === 'function') return existing;
  const cls = class extends Event {
    #toolName;
    constructor(type, init = undefined) {
      super(type, init);
      this.#toolName = init?.toolName === undefined ? '' : toDOMString(init.toolName);
    }

    get toolName() {
      return this.#toolName;
    }
  };
  Object.defineProperty(cls, 'name', { value: name });
  Object.defineProperty(globalThis, name, { value: cls, configurable: true, writable: true });
  return cls;
}

// Both classes exist as soon as the shim does (as native defines them).
if (typeof Event === 'function') {
  eventClass('ToolActivatedEvent');
  eventClass('ToolCancelEvent');
}

/** The registry this context shares with same-origin frames (or a private one). */
function sharedRegistry(win) {
  let host = win;
  try {
    while (host.parent && host.parent !== host && host.parent.location.origin === win.location.origin) {
      host = host.parent;
    }
  } catch {
    // A cross-origin parent: the registry stops at the last same-origin window.
  }
  if (!Object.prototype.hasOwnProperty.call(host, REGISTRY)) {
    Object.defineProperty(host, REGISTRY, { value: { tools: new Map(), contexts: new Set() } });
  }
  return host[REGISTRY];
}

/** The shim behind one `document.modelContext` (the `context`, an EventTarget). */
class Impl {
  #registry;
  #window;
  #calling = new Set(); // executeTool calls this context made that still run: AbortControllers

  constructor(context, win) {
    this.context = context;
    this.#window = win;
    this.#registry = win ? sharedRegistry(win) : { tools: new Map(), contexts: new Set() };
    this.#registry.contexts.add(context);
    context[RUN] = (entry, args, signal) => this.run(entry, args, signal);
    context[NOTIFY] = (type, toolName, now) => this.notify(type, toolName, now);
    context[FORMS] = this.#formHooks();
    // A frame that goes away takes its tools with it.
    win?.addEventListener('pagehide', (event) => {
      if (event.persisted) return; // kept in the back/forward cache: it may come back
      // The calls this page made end: their tools' signals abort, toolcancel fires there.
      for (const own of [...this.#calling]) own.abort(new DOMException('The page that called this tool went away.', 'AbortError'));
      this.#registry.contexts.delete(context);
      for (const entry of [...this.#registry.tools.values()]) {
        if (entry.context === context) this.#remove(entry);
      }
    });
  }

  /** A message from another frame's shim (webmcp/shim.js passes them on). */
  message(event) {
    // Tool lists are stored at once (a page may list right after a frame
    // loads); the rest goes to webmcp/frames.js.
    if (event.data[FRAME_MARK] === 'tools' && Array.isArray(event.data.tools)) this.#remoteTools(event);
    else frames().then((m) => m.onMessage(this.#frameHooks(), event));
  }

  /** Registers a tool (webmcp/shim.js says how it resolves). */
  registerTool(tool, options, argc) {
    return new Promise((resolve) => {
      if (argc === 0) throw fail('registerTool', '1 argument required, but only 0 present.');
      if (!isObjectLike(tool)) {
        throw fail('registerTool', "The provided value is not of type 'ModelContextTool'.");
      }
      // Members are read in the order WebIDL reads them (alphabetical).
      const annotations = readAnnotations(tool.annotations);
      if (tool.description === undefined) {
        throw fail('registerTool', "Failed to read the 'description' property: Required member is undefined.");
      }
      const description = toDOMString(tool.description);
      const { execute } = tool;
      if (typeof execute !== 'function') {
        throw fail('registerTool', execute === undefined
          ? "Failed to read the 'execute' property: Required member is undefined."
          : "Failed to read the 'execute' property: The given value is not a function.");
      }
      const inputSchema = readSchema(tool.inputSchema, 'inputSchema');
      if (tool.name === undefined) {
        throw fail('registerTool', "Failed to read the 'name' property: Required member is undefined.");
      }
      const name = toDOMString(tool.name);
      const outputSchema = readSchema(tool.outputSchema, 'outputSchema');
      const title = tool.title === undefined ? '' : toDOMString(tool.title);
      const exposedTo = readExposedTo(options);
      const signal = readSignal(options, 'registerTool');

      // A frame removed from its page (its document has no window any more): as Chromium.
      if (this.#detached()) throw new DOMException('The document is not active.', 'InvalidStateError');
      if (!NAME_RE.test(name)) throw new DOMException('Invalid tool name', 'InvalidStateError');
      if (this.#registry.tools.has(name)) throw new DOMException('Duplicate tool name', 'InvalidStateError');
      if (description === '') throw new DOMException('Description is required', 'InvalidStateError');
      if (signal?.aborted) throw signal.reason;

      const entry = this.#entry({ name, title, description, inputSchema, outputSchema, annotations, execute, exposedTo });
      if (exposedTo?.some((origin) => origin !== entry.origin)) {
        this.#registry.bridged = true;
        frames(); // loaded now, so a frame's hello is answered at once
      }
      this.#registry.tools.set(name, entry);
      const finish = () => {
        entry.listed = true;
        signal?.addEventListener('abort', () => this.#remove(entry), { once: true });
        return this.#changed().then(() => undefined);
      };
      resolve(finish());
    });
  }

  /** True when this context's window is gone (a frame removed from its page). */
  #detached() {
    const win = this.#window;
    if (!win) return false;
    try {
      return win.closed === true || win.document.defaultView === null;
    } catch {
      return true;
    }
  }

  #entry(fields) {
    return {
      ...fields,
      context: this.context,
      origin: globalThis.location?.origin ?? '',
      window: this.#window,
      listed: false,
    };
  }

  /** Stores the tools another origin's frame exposed to this one (webmcp/frames.js sends them). */
  #remoteTools(event) {
    const remote = (this.#registry.remote ??= new Map());
    const before = JSON.stringify(remote.get(event.source)?.tools ?? []);
    const tools = event.data.tools.map((t) => ({ ...t, origin: event.origin }));
    remote.set(event.source, { source: event.source, origin: event.origin, tools });
    if (JSON.stringify(tools) !== before) this.#changed();
  }

  #frameHooks() {
    return {
      registry: this.#registry,
      windows: () => [...this.#registry.contexts].map((c) => c[WINDOW]).filter(Boolean),
      changed: () => this.#changed(),
      run: async (entry, args, signal) => {
        (await calls()).checkInput(entry, args);
        return entry.context[RUN](entry, args, signal);
      },
    };
  }

  /** Dispatches `toolchange` on every context sharing the registry, in a later task. */
  #changed() {
    if (this.#registry.bridged) frames().then((m) => m.announce(this.#frameHooks()));
    const contexts = [...this.#registry.contexts];
    return Promise.all(contexts.map((c) => c[NOTIFY]('toolchange')));
  }

  #remove(entry) {
    if (this.#registry.tools.get(entry.name) !== entry) return;
    this.#registry.tools.delete(entry.name);
    if (entry.listed) this.#changed();
  }

  /** The registered tools, sorted by name (code-unit order), as fresh objects; `fromOrigins` filters. */
  getTools(options) {
    return new Promise((resolve) => {
      if (options !== undefined && options !== null && !isObjectLike(options)) {
        throw fail('getTools', "The provided value is not of type 'ModelContextGetToolOptions'.");
      }
      const from = options?.fromOrigins;
      const origins = from === undefined ? null : [...from].map(toDOMString);
      const remote = [...(this.#registry.remote?.values() ?? [])]
        .filter((r) => !r.source.closed)
        .flatMap((r) => r.tools.map((t) => ({ ...t, window: r.source, listed: true })));
      const entries = [...this.#registry.tools.values(), ...remote]
        .filter((e) => e.listed && (!origins || origins.includes(e.origin)))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      resolve(entries.map((e) => {
        const out = {};
        // Same key order as native (alphabetical); absent keys stay absent.
        if (e.annotations !== undefined) out.annotations = JSON.parse(e.annotations);
        out.description = e.description;
        if (e.inputSchema !== undefined) out.inputSchema = JSON.parse(e.inputSchema);
        out.name = e.name;
        out.origin = e.origin;
        if (e.outputSchema !== undefined) out.outputSchema = JSON.parse(e.outputSchema);
        out.title = e.title;
        out.window = e.window;
        // Chrome 160's name for `window`, for code written for it: not enumerable, so that
        // JSON.stringify, structuredClone/postMessage and {...tool} never meet a Window
        // (code for Chrome up to 159 leaves out `window` only).
        Object.defineProperty(out, 'source', { value: e.window, configurable: true, writable: true });
        return out;
      }));
    });
  }

  /** Runs a registered tool; resolves with its result as a string (webmcp/calls.js). */
  executeTool(tool, input, options, argc) {
    return calls().then((m) => m.executeTool(this.#callHooks(), tool, input, options, argc));
  }

  #callHooks() {
    const registry = this.#registry;
    const here = { calling: this.#calling, window: this.#window };
    return { registry, frames, fail, toDOMString, jsonText, readSignal, nextTask, RUN, here };
  }

  /** Runs `entry` (a tool this context registered) in this context's realm (webmcp/calls.js). */
  run(entry, args, signal) {
    const fire = (type) => this.notify(type, entry.name, true);
    if (callsModule) return callsModule.run(entry, args, signal, fire);
    return calls().then((m) => m.run(entry, args, signal, fire));
  }

  /**
   * Dispatches `type` here (and on this context's window for the tool events),
   * at once when `now`, else in a later task; resolves when done.
   */
  notify(type, toolName = undefined, now = false) {
    const dispatch = () => {
      if (toolName === undefined) {
        this.context.dispatchEvent(new Event(type));
        return;
      }
      const Cls = eventClass(type === 'toolcancel' ? 'ToolCancelEvent' : 'ToolActivatedEvent');
      this.context.dispatchEvent(new Cls(type, { toolName }));
      this.#window?.dispatchEvent(new Cls(type, { toolName }));
    };
    if (now) return dispatch();
    return nextTask().then(dispatch);
  }

  /** Internal hooks for webmcp/forms.js (same realm only). */
  #formHooks() {
    return {
      add: (fields) => {
        if (!NAME_RE.test(fields.name) || this.#registry.tools.has(fields.name)) return null;
        const entry = this.#entry(fields);
        entry.listed = true;
        this.#registry.tools.set(entry.name, entry);
        this.#changed();
        return entry;
      },
      remove: (entry) => this.#remove(entry),
      settle: (...a) => callsModule.settleCall(...a), // loaded: a call runs
    };
  }
}

/** Connects the shim `context` (of window `win`, or null) to its registry. */
export function attach(context, win) {
  return new Impl(context, win);
}

/** Loads webmcp/forms.js and turns the document's `<form toolname>` into tools. */
export function startForms(context) {
  return import(new URL('./forms.js', HERE).href).then((m) => m.startFormTools(context));
}
