// Running a tool of the WebMCP shim: webmcp/core.js loads this module on the
// first executeTool (with webmcp/arguments.js, which it imports). With the browser's
// own WebMCP, shim.js loads it only for a tool result JSON cannot write.
import { checkArguments } from './arguments.js';

// What native executeTool returns when a tool returns the empty string.
const EMPTY_RESULT = 'Operation succeeded';

function isObjectLike(value) {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

/**
 * Turns a tool's return value into the string executeTool resolves with. A value JSON cannot
 * write (a cycle, a BigInt) makes native executeTool reject as if the tool had failed; the
 * tool has run by then, so the shim resolves with an MCP error result that says so and why
 * (a caller that retried a failed call would run it twice). With the browser's own WebMCP,
 * shim.js's readableTool gives the same result (with unreadableResult and describeError).
 */
function resultText(value, name) {
  if (typeof value === 'string') return value === '' ? EMPTY_RESULT : value;
  if (isObjectLike(value)) {
    let text;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      return unreadableResult(name, describeError(error));
    }
    return text === undefined ? 'undefined' : text;
  }
  return String(value); // undefined -> "undefined", 42 -> "42", like native
}

/**
 * The MCP error result (JSON text) for a tool `name` that ran but whose return value JSON
 * cannot write (`why`, e.g. "TypeError: Converting circular structure to JSON"): the tool
 * has run, so the caller must not retry it (docs/webmcp-native.md, executeTool "Result").
 */
export function unreadableResult(name, why) {
  return JSON.stringify({
    content: [{
      type: 'text',
      text: `${name} ran, but its return value could not be read (${why}), so its result is unknown. It has already run: do not call it again to retry.`,
    }],
    isError: true,
  });
}

/** What a thrown value was, as text (`Name: message` for an Error). */
export function describeError(error) {
  // An Error of this realm or another (a frame's): its name and message.
  if (error instanceof Error || (isObjectLike(error) && typeof error.message === 'string'
    && typeof error.name === 'string')) return `${error.name}: ${error.message}`;
  // A thrown non-Error value: say what it was, never "[object Object]" or an empty text.
  if (error === undefined || error === null) return `the tool threw ${error} instead of an Error`;
  if (isObjectLike(error) && typeof error !== 'function') {
    try {
      const text = JSON.stringify(error);
      if (text !== undefined) return `the tool threw ${text.length > 2000 ? `${text.slice(0, 2000)}…` : text}`;
    } catch {
      // a cycle or a BigInt: fall back to String()
    }
  }
  try {
    const text = String(error);
    return text === '' ? 'the tool threw an empty string' : text;
  } catch {
    return 'unknown error';
  }
}

function invocationFailed(error) {
  if (error instanceof DOMException && error.name === 'UnknownError') return error;
  const ex = new DOMException(
    `Tool was executed but the invocation failed: ${describeError(error)}`,
    'UnknownError',
  );
  Object.defineProperty(ex, 'cause', { value: error, configurable: true, writable: true });
  return ex;
}

/**
 * Settles a running call: its result, or the caller's abort. On abort the
 * caller's promise rejects at once with the signal's reason; in a later task
 * the tool's own signal aborts (an AbortError) and `cancelled()` runs (WPT
 * webmcp/imperative/executeTool-abort: rejection, then the tool's abort, then
 * toolcancel). A result the tool delivers after that is dropped.
 */
export function settleCall(running, signal, call, cancelled) {
  return new Promise((resolve, reject) => {
    let done = false;
    const onAbort = () => {
      if (done) return;
      done = true;
      reject(signal.reason);
      setTimeout(() => {
        call.abort(new DOMException('The caller cancelled this tool call.', 'AbortError'));
        cancelled();
      }, 0);
    };
    const finish = (fn) => (value) => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', onAbort);
      fn(value);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    running.then(finish(resolve), finish((error) => reject(invocationFailed(error))));
    // Aborted while the call was queued: the tool has started, so it is cancelled now.
    if (signal?.aborted) onAbort();
  });
}

/** Rejects with a DataError when `args` fail the tool's inputSchema (spec). */
export function checkInput(entry, args) {
  if (entry.inputSchema === undefined) return;
  const problem = checkArguments(JSON.parse(entry.inputSchema), args);
  if (problem) throw new DOMException(JSON.stringify(problem), 'DataError');
}

/** Runs `entry` with `args`; `fire(type)` dispatches its tool events. */
export function run(entry, args, signal, fire) {
  if (entry.run) return entry.run(args, signal, fire); // a form tool
  const call = new AbortController();
  let running;
  try {
    running = Promise.resolve(entry.execute.call(undefined, args, { signal: call.signal }));
  } catch (error) {
    running = Promise.reject(error);
  }
  fire('toolactivated');
  return settleCall(running.then((value) => resultText(value, entry.name)), signal, call, () => fire('toolcancel'));
}

/**
 * Runs a registered tool and resolves with its result as a string (`hooks`:
 * webmcp/core.js's registry and helpers).
 *
 * `tool` is a tool object from getTools() (the shim also takes a plain
 * name); the tool is looked up by name when the call runs. `input` is an
 * object (the shim also takes a JSON string of one), checked against the
 * tool's inputSchema (a failure rejects with a `DataError` whose message is
 * JSON `{path, reason, schemaPath, message}`) and passed to the tool as a
 * JSON copy. Aborting `options.signal` rejects with the signal's reason,
 * then aborts the signal the tool received and fires `toolcancel`.
 */
export async function executeTool(hooks, tool, input, options, argc) {
  const { registry, frames, fail, toDOMString, jsonText, readSignal, nextTask, RUN } = hooks;
  if (argc === 0) throw fail('executeTool', '1 argument required, but only 0 present.');
  let name;
  if (typeof tool === 'string') {
    name = tool;
  } else if (isObjectLike(tool)) {
    for (const member of ['description', 'name', 'origin']) {
      if (tool[member] === undefined) {
        throw fail('executeTool', `Failed to read the '${member}' property from 'RegisteredTool': Required member is undefined.`);
      }
    }
    name = toDOMString(tool.name);
  } else {
    throw fail('executeTool', "The provided value is not of type 'RegisteredTool'.");
  }

  let args = input === undefined ? {} : input;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      throw fail('executeTool', 'invalid input object: the string is not valid JSON');
    }
  }
  if (!isObjectLike(args)) throw fail('executeTool', 'invalid input object: value is not an object');
  const text = jsonText(args, 'executeTool');
  if (text === undefined) throw fail('executeTool', 'invalid input object: it has no JSON form');
  args = JSON.parse(text);
  const signal = readSignal(options, 'executeTool');

  // webmcp/shim.js rejected a signal aborted before the call. The call
  // runs in a later task; an abort from now on reaches the tool after it
  // started (as native: the abort is queued behind the call).
  await nextTask();
  const entry = registry.tools.get(name);
  const origin = typeof tool === 'string' ? undefined : toDOMString(tool.origin);
  if (origin !== undefined && entry?.origin !== origin) {
    // A tool another origin's frame exposed to this one.
    const remote = [...(registry.remote?.values() ?? [])]
      .find((r) => r.origin === origin && !r.source.closed && r.tools.some((t) => t.name === name));
    if (remote) return (await frames()).callRemote(remote, name, args, signal);
  }
  if (!entry?.listed) throw new DOMException(`No tool named "${name}" is registered`, 'UnknownError');
  await checkInput(entry, args);
  return watched(hooks.here, entry, () => entry.context[RUN], args, signal);
}

/** One signal that aborts when `signal` (the caller's, maybe from another realm) or `own` does. */
function linkSignals(signal, own) {
  if (!signal) return own;
  const both = new AbortController();
  const forward = (from) => () => both.abort(from.reason);
  if (signal.aborted) both.abort(signal.reason);
  else signal.addEventListener('abort', forward(signal), { once: true });
  if (own.aborted) both.abort(own.reason);
  else own.addEventListener('abort', forward(own), { once: true });
  return both.signal;
}

/**
 * Runs `entry` in the context that registered it, and ends the call at once when that
 * context's frame goes away (rejects with UnknownError) or the calling page goes away
 * (`here.calling` is aborted on its pagehide: the tool's signal aborts and toolcancel fires
 * there), instead of waiting forever for a realm that is gone.
 */
function watched(here, entry, runner, args, signal) {
  const own = new AbortController();
  const linked = linkSignals(signal, own.signal);
  here.calling.add(own);
  const host = entry.window;
  const poll = host && host !== here.window
    ? setInterval(() => {
      if (host.closed) own.abort(new DOMException('The frame that hosts this tool went away while it ran.', 'UnknownError'));
    }, 50)
    : null;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(own.signal.reason);
    own.signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve()
      .then(() => runner()(entry, args, linked))
      .then(resolve, reject)
      .finally(() => own.signal.removeEventListener('abort', onAbort));
  }).finally(() => {
    if (poll !== null) clearInterval(poll);
    here.calling.delete(own);
  });
}
