// A stand-in for WebMCP's `document.modelContext` in browsers that do not have it.
//
// It follows what Chromium 156's own implementation does (measured; see
// docs/webmcp-native.md), with a few deliberate differences listed there:
// it keeps every annotation the page gave, accepts `inputSchema` and tool
// arguments as JSON strings, accepts a tool name where native wants a tool
// object, ignores `exposedTo`, and keeps a thrown error's message.
//
// Tools registered here are visible only to code on this page: no browser
// agent or other outside client can see them.
//
// No dependencies and no build step. Works wherever EventTarget, Event,
// DOMException and setTimeout exist (browsers, workers, Node 20+).

const BRAND = Symbol.for('pysite-agent.webmcp-shim');
const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
// Annotations Chromium knows. Native coerces them to booleans and fills the
// missing ones with false whenever the page gave any annotations at all.
const KNOWN_HINTS = ['consequentialHint', 'debugging', 'readOnlyHint', 'untrustedContentHint'];
// What native executeTool returns when a tool returns the empty string.
const EMPTY_RESULT = 'Operation succeeded';

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

function readInputSchema(schema) {
  if (schema === undefined) return undefined;
  let value = schema;
  if (typeof value === 'string') {
    // Native 156 wants an object; older Chrome took a JSON string. Accept both.
    try {
      value = JSON.parse(value);
    } catch {
      throw fail('registerTool', "Failed to read the 'inputSchema' property: the string is not valid JSON.");
    }
  }
  if (typeof value !== 'object' || value === null) {
    throw fail('registerTool', "Failed to read the 'inputSchema' property: Failed to convert value to 'object'.");
  }
  return jsonText(value, 'registerTool');
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

/** Turns a tool's return value into the string executeTool resolves with. */
function resultText(value) {
  if (typeof value === 'string') return value === '' ? EMPTY_RESULT : value;
  if (isObjectLike(value)) {
    const text = JSON.stringify(value); // throws on cycles and BigInt, like native
    return text === undefined ? 'undefined' : text;
  }
  return String(value); // undefined -> "undefined", 42 -> "42", like native
}

function describeError(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  try {
    return String(error);
  } catch {
    return 'unknown error';
  }
}

function invocationFailed(error) {
  const ex = new DOMException(
    `Tool was executed but the invocation failed: ${describeError(error)}`,
    'UnknownError',
  );
  Object.defineProperty(ex, 'cause', { value: error, configurable: true, writable: true });
  return ex;
}

class ModelContextShim extends EventTarget {
  #tools = new Map(); // name -> entry
  #handlers = new Map(); // event type -> [handler, listener]

  get [BRAND]() {
    return true;
  }

  get [Symbol.toStringTag]() {
    return 'ModelContext';
  }

  /**
   * Registers a tool. Resolves (with undefined) once the `toolchange` event
   * has been dispatched. Abort `options.signal` to unregister.
   */
  registerTool(tool, options = undefined) {
    const argc = arguments.length;
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
      const inputSchema = readInputSchema(tool.inputSchema);
      if (tool.name === undefined) {
        throw fail('registerTool', "Failed to read the 'name' property: Required member is undefined.");
      }
      const name = toDOMString(tool.name);
      const title = tool.title === undefined ? '' : toDOMString(tool.title);
      const signal = readSignal(options, 'registerTool');
      // options.exposedTo is accepted and ignored: nothing outside this page
      // can see the shim's tools anyway.

      if (!NAME_RE.test(name)) throw new DOMException('Invalid tool name', 'InvalidStateError');
      if (this.#tools.has(name)) throw new DOMException('Duplicate tool name', 'InvalidStateError');
      if (description === '') throw new DOMException('Description is required', 'InvalidStateError');
      if (signal?.aborted) throw signal.reason;

      const entry = { name, title, description, inputSchema, annotations, execute };
      entry.origin = globalThis.location?.origin ?? '';
      entry.window = typeof window === 'undefined' ? null : window;
      this.#tools.set(name, entry);
      signal?.addEventListener('abort', () => this.#unregister(entry), { once: true });
      nextTask().then(() => {
        this.#fire('toolchange');
        resolve(undefined);
      });
    });
  }

  #unregister(entry) {
    if (this.#tools.get(entry.name) !== entry) return;
    this.#tools.delete(entry.name);
    nextTask().then(() => this.#fire('toolchange'));
  }

  /**
   * Lists the registered tools, sorted by name (code-unit order). Each call
   * returns fresh objects: changing them does not change the registry.
   * `options.fromOrigins` is accepted and ignored, as native 156 does.
   */
  getTools(options = undefined) {
    return new Promise((resolve) => {
      if (options !== undefined && options !== null && !isObjectLike(options)) {
        throw fail('getTools', "The provided value is not of type 'ModelContextGetToolOptions'.");
      }
      const names = [...this.#tools.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      resolve(names.map((name) => {
        const e = this.#tools.get(name);
        const out = {};
        // Same key order as native (alphabetical); absent keys stay absent.
        if (e.annotations !== undefined) out.annotations = JSON.parse(e.annotations);
        out.description = e.description;
        if (e.inputSchema !== undefined) out.inputSchema = JSON.parse(e.inputSchema);
        out.name = e.name;
        out.origin = e.origin;
        out.title = e.title;
        out.window = e.window;
        return out;
      }));
    });
  }

  /**
   * Runs a registered tool and resolves with its result as a string.
   *
   * `tool` is a tool object from getTools() (the shim also takes a plain
   * name); the tool is looked up by name when the call runs. `input` is an
   * object (the shim also takes a JSON string), passed to the tool as a JSON
   * copy. Aborting `options.signal` rejects with the signal's reason, aborts
   * the signal the tool received and fires `toolcancel`.
   */
  executeTool(tool, input = undefined, options = undefined) {
    const argc = arguments.length;
    return (async () => {
      if (argc === 0) throw fail('executeTool', '1 argument required, but only 0 present.');
      let name;
      if (typeof tool === 'string') name = tool;
      else if (isObjectLike(tool) && tool.name !== undefined) name = toDOMString(tool.name);
      else throw fail('executeTool', "The provided value is not of type 'RegisteredTool'.");

      let args = input === undefined ? {} : input;
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          throw fail('executeTool', 'invalid input object: the string is not valid JSON');
        }
      }
      if (typeof args !== 'object' || args === null) {
        throw fail('executeTool', 'invalid input object: value is not an object');
      }
      args = JSON.parse(jsonText(args, 'executeTool'));
      const signal = readSignal(options, 'executeTool');

      if (signal?.aborted) throw signal.reason;
      await nextTask();
      if (signal?.aborted) throw signal.reason;
      const entry = this.#tools.get(name);
      if (!entry) throw new DOMException(`No tool named "${name}" is registered`, 'UnknownError');

      const call = new AbortController();
      const client = {
        signal: call.signal,
        // Not in native 156 (its client has only `signal`). The shim has no
        // browser UI to hand over to, so the callback simply runs now.
        requestUserInteraction: async (callback) => {
          if (typeof callback !== 'function') throw new TypeError('requestUserInteraction needs a function');
          return callback();
        },
      };
      let running;
      try {
        running = Promise.resolve(entry.execute.call(undefined, args, client));
      } catch (error) {
        running = Promise.reject(error);
      }
      this.#fire('toolactivated', name);

      let onAbort;
      const aborted = new Promise((_, reject) => {
        onAbort = () => {
          call.abort(signal.reason);
          this.#fire('toolcancel', name);
          reject(signal.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      const finished = running.then(resultText).catch((error) => {
        throw invocationFailed(error);
      });
      aborted.catch(() => {});
      finished.catch(() => {}); // an abort wins; the tool's late failure is dropped
      try {
        return await Promise.race([finished, aborted]);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    })();
  }

  #fire(type, toolName = undefined) {
    const event = new Event(type);
    if (toolName !== undefined) {
      Object.defineProperty(event, 'toolName', { value: toolName, enumerable: true });
    }
    this.dispatchEvent(event);
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

/** A new shim, not installed anywhere (tests, workers, Node). */
export function createModelContext() {
  return new ModelContextShim();
}

/** True for a model context made by this module (any copy of it). */
export function isShim(object) {
  return isObjectLike(object) && object[BRAND] === true;
}

/** True when the browser itself provides `document.modelContext`. */
export function hasNativeModelContext() {
  if (typeof Document === 'undefined' || typeof document === 'undefined') return false;
  const desc = Object.getOwnPropertyDescriptor(Document.prototype, 'modelContext');
  if (!desc || typeof desc.get !== 'function') return false;
  if (!/\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(desc.get))) return false;
  const mc = desc.get.call(document);
  return isObjectLike(mc) && !isShim(mc);
}

/**
 * Returns `document.modelContext`, installing a shim first only when the page
 * has none. Never replaces an existing one (the browser's own, or a shim
 * installed earlier); calling it again returns the same object.
 */
export function installShim() {
  if (typeof document === 'undefined') {
    throw new TypeError('installShim() needs a document; use createModelContext() elsewhere');
  }
  if (document.modelContext) return document.modelContext;
  Object.defineProperty(document, 'modelContext', {
    value: createModelContext(),
    enumerable: true,
    configurable: true,
    writable: false,
  });
  return document.modelContext;
}
