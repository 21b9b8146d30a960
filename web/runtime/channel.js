// The worker channel: requests, replies and notifications between the page (main thread)
// and the worker that runs Python, over one MessagePort (or the Worker itself). Both sides
// import this file; docs/runtime.md lists the methods, and
// pysite_agent/schemas/worker-channel-v1.schema.json is the message schema.
//
// Every message is plain structured-clone data with `v: CHANNEL_VERSION`:
//   {v, kind: 'request', id, method, params}     answered by exactly one reply
//   {v, kind: 'reply', id, ok: true, value}      or {v, kind: 'reply', id, ok: false, error}
//   {v, kind: 'abort', id}                       the request's AbortSignal fired
//   {v, kind: 'progress', id, value}             the request's progress (e.g. a download)
//   {v, kind: 'notify', method, params}          no reply
// `error` is {name, message}. No SharedArrayBuffer and no functions cross: a value that cannot
// be cloned fails at the sender (DataCloneError) and becomes an error reply, and so does a value
// nested deeper than MAX_DEPTH (the browser's clone may fail to arrive at all beyond some depth).

export const CHANNEL_VERSION = 1;

/** Messages nest at most this many arrays/objects deep (the envelope included). */
export const MAX_DEPTH = 300;

/** Whether `value` nests arrays/objects deeper than `limit` (checked without recursion). */
export function nestedDeeper(value, limit = MAX_DEPTH) {
  const stack = [[value, 0]];
  const seen = new Set();
  while (stack.length) {
    const [item, depth] = stack.pop();
    if (item === null || typeof item !== 'object' || ArrayBuffer.isView(item)) continue;
    if (depth >= limit) return true;
    if (seen.has(item)) continue; // a cycle clones fine (structured clone keeps references)
    seen.add(item);
    let children;
    if (Array.isArray(item)) children = item;
    else if (item instanceof Map) children = [...item.keys(), ...item.values()];
    else if (item instanceof Set) children = [...item];
    else children = Object.values(item);
    for (const child of children) stack.push([child, depth + 1]);
  }
  return false;
}

const ERRORS = ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError'];

/** An Error (or DOMException) for an `error` field: the name is kept, so Python maps it. */
export function toError(error) {
  const name = String(error?.name || 'Error');
  const message = String(error?.message ?? error ?? 'unknown error');
  if (ERRORS.includes(name)) {
    const e = new globalThis[name](message);
    return e;
  }
  try {
    return new DOMException(message, name);
  } catch {
    return Object.assign(new Error(message), { name });
  }
}

/** The `error` field for a thrown value. */
export function fromError(error) {
  return { name: String(error?.name || 'Error'), message: String(error?.message ?? error) };
}

export const abortError = (reason) =>
  new DOMException(typeof reason === 'string' ? reason : 'The operation was aborted.', 'AbortError');

/**
 * One side of the channel. `handlers[method](params, {signal, progress})` answers requests
 * (its return value or promise is the reply; a throw is an error reply; `progress(value)`
 * reports progress); `notes[method](params)` receives notifications. `tap(direction, message)` sees every message (tests, debugging).
 */
export class Endpoint {
  #port;
  #handlers;
  #notes;
  #next = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #serving = new Map(); // id -> AbortController of a request we answer
  tap = null;

  constructor(port, handlers = {}, notes = {}) {
    this.#port = port;
    this.#handlers = handlers;
    this.#notes = notes;
    port.addEventListener('message', (event) => this.#receive(event.data));
    // A message that arrived but could not be read: which request it answered is unknown, so
    // every waiting request fails with a readable error (nothing waits for it forever).
    port.addEventListener('messageerror', () => {
      console.error('site-agent channel: a message from the other side could not be read');
      this.failAll(new DOMException('A message on the worker channel could not be read.', 'DataCloneError'));
    });
    port.start?.();
  }

  #post(message) {
    this.tap?.('out', message);
    if (nestedDeeper(message)) {
      throw new DOMException(`The value is nested deeper than ${MAX_DEPTH} levels, so it cannot be sent.`, 'DataCloneError');
    }
    this.#port.postMessage(message);
  }

  /**
   * Ask the other side; resolves to its reply's value. `signal` aborts (and tells it);
   * `onProgress(value)` receives the request's progress reports.
   */
  request(method, params, signal, onProgress) {
    if (signal?.aborted) return Promise.reject(abortError(signal.reason));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (!this.#pending.delete(id)) return;
        this.#post({ v: CHANNEL_VERSION, kind: 'abort', id });
        reject(abortError(signal.reason));
      };
      const done = (fn) => (value) => {
        signal?.removeEventListener('abort', onAbort);
        fn(value);
      };
      this.#pending.set(id, { resolve: done(resolve), reject: done(reject), onProgress });
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        this.#post({ v: CHANNEL_VERSION, kind: 'request', id, method, params });
      } catch (error) {
        this.#pending.delete(id);
        done(reject)(error);
      }
    });
  }

  notify(method, params) {
    this.#post({ v: CHANNEL_VERSION, kind: 'notify', method, params });
  }

  /** Reject every request still waiting (the other side is gone). */
  failAll(error) {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }

  #receive(message) {
    this.tap?.('in', message);
    if (!message || message.v !== CHANNEL_VERSION) {
      if (message && typeof message === 'object' && 'v' in message) {
        console.warn('site-agent channel: ignored a message of another version', message.v);
        return;
      }
      // Not a channel message at all (it did not survive the clone): fail what waits.
      console.error('site-agent channel: received an unreadable message', message);
      this.failAll(new DOMException('A message on the worker channel could not be read.', 'DataCloneError'));
      return;
    }
    if (message.kind === 'reply') {
      const entry = this.#pending.get(message.id);
      if (!entry) return; // aborted meanwhile
      this.#pending.delete(message.id);
      if (message.ok) entry.resolve(message.value);
      else entry.reject(toError(message.error));
    } else if (message.kind === 'request') {
      this.#serve(message);
    } else if (message.kind === 'progress') {
      try {
        this.#pending.get(message.id)?.onProgress?.(message.value);
      } catch (error) {
        console.error('site-agent channel: a progress callback failed', error);
      }
    } else if (message.kind === 'abort') {
      this.#serving.get(message.id)?.abort(abortError());
    } else if (message.kind === 'notify') {
      try {
        this.#notes[message.method]?.(message.params);
      } catch (error) {
        console.error(`site-agent channel: ${message.method} failed`, error);
      }
    }
  }

  async #serve({ id, method, params }) {
    const controller = new AbortController();
    this.#serving.set(id, controller);
    let reply;
    try {
      const handler = this.#handlers[method];
      if (!handler) throw new TypeError(`unknown channel method ${method}`);
      const progress = (value) => {
        if (this.#serving.has(id)) this.#post({ v: CHANNEL_VERSION, kind: 'progress', id, value });
      };
      const value = await handler(params, { signal: controller.signal, progress });
      reply = { v: CHANNEL_VERSION, kind: 'reply', id, ok: true, value: value ?? null };
    } catch (error) {
      reply = { v: CHANNEL_VERSION, kind: 'reply', id, ok: false, error: fromError(error) };
    } finally {
      this.#serving.delete(id);
    }
    try {
      this.#post(reply);
    } catch (error) {
      // The value cannot be cloned: the asker gets a readable error instead.
      this.#post({ v: CHANNEL_VERSION, kind: 'reply', id, ok: false, error: fromError(error) });
    }
  }
}
