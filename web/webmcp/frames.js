// Cross-origin frames for the shim: `exposedTo` (WebMCP) over postMessage.
//
// webmcp/shim.js loads this module when the page is framed, when a tool is
// registered with `exposedTo` naming another origin, or when a message from
// another frame's shim arrives. Same-origin frames need none of this: they
// share one registry directly.
//
// - A registry whose tools name other origins in `exposedTo` sends, on every
//   change, to its parent and to child frames allowed the `tools` feature
//   (`<iframe allow="tools ...">`), one list per exposed origin, posted with
//   that origin as the target (the browser delivers it only there).
// - A framed shim says hello to its parent when it starts (webmcp/shim.js
//   does, and stores the lists it receives), so the parent sends the tools
//   exposed to the frame's origin.
// - Received lists appear in getTools() with the sender's origin and its
//   window as `window`/`source`; executeTool() on one of them runs the tool in
//   its frame (which checks `exposedTo` again) and carries aborts there.

const MARK = 'pysite-agent.webmcp';
const calls = new Map(); // call id -> {resolve, reject}
const running = new Map(); // call id from a peer -> AbortController
let nextId = 1;

function peers(hooks) {
  const out = new Set();
  for (const win of hooks.windows()) {
    if (win.parent !== win) out.add(win.parent);
    for (const frame of win.document.querySelectorAll('iframe')) {
      if (/(^|[\s;])tools(\s|;|$)/.test(frame.allow) && frame.contentWindow) out.add(frame.contentWindow);
    }
  }
  return out;
}

function describe(entry) {
  const { name, title, description, inputSchema, outputSchema, annotations, origin } = entry;
  return { name, title, description, inputSchema, outputSchema, annotations, origin };
}

/** Sends each exposed origin the list of tools exposed to it. */
export function announce(hooks) {
  const { registry } = hooks;
  registry.exposedOrigins ??= new Set();
  for (const entry of registry.tools.values()) {
    for (const origin of entry.exposedTo ?? []) registry.exposedOrigins.add(origin);
  }
  const targets = peers(hooks);
  for (const origin of registry.exposedOrigins) {
    const tools = [...registry.tools.values()]
      .filter((e) => e.listed && e.exposedTo?.includes(origin))
      .map(describe);
    for (const peer of targets) peer.postMessage({ [MARK]: 'tools', tools }, origin);
  }
}

/**
 * Runs a tool of another frame; resolves with its result text. The call ends at once when
 * that frame goes away (UnknownError) and, when this page goes away, the frame is told to
 * abort it (its tool's signal fires, toolcancel fires there).
 */
export function callRemote(remote, name, args, signal) {
  return new Promise((resolve, reject) => {
    const id = `${Date.now()}-${nextId++}`;
    const poll = setInterval(() => {
      if (remote.source.closed) end(new DOMException('The frame that hosts this tool went away while it ran.', 'UnknownError'));
    }, 50);
    const end = (error, value) => {
      if (!calls.delete(id)) return;
      clearInterval(poll);
      if (error) reject(error);
      else resolve(value);
    };
    calls.set(id, { resolve: (value) => end(null, value), reject: end, remote });
    remote.source.postMessage({ [MARK]: 'call', id, name, args }, remote.origin);
    signal?.addEventListener('abort', () => {
      if (!calls.has(id)) return;
      remote.source.postMessage({ [MARK]: 'abort', id }, remote.origin);
      end(signal.reason);
    }, { once: true });
  });
}

// This page goes away: the frames running its calls stop them.
globalThis.addEventListener?.('pagehide', (event) => {
  if (event.persisted) return;
  for (const [id, call] of [...calls]) {
    try {
      call.remote.source.postMessage({ [MARK]: 'abort', id }, call.remote.origin);
    } catch {}
    call.reject(new DOMException('The page that called this tool went away.', 'AbortError'));
  }
});

function error(name, message) {
  return new DOMException(message, name);
}

/** Handles one message from another frame's shim. */
export function onMessage(hooks, event) {
  const { registry } = hooks;
  const data = event.data;
  const kind = data[MARK];
  if (kind === 'hello') {
    announce(hooks);
  } else if (kind === 'call') {
    const entry = registry.tools.get(data.name);
    const reply = (body) => event.source.postMessage({ [MARK]: 'result', id: data.id, ...body }, event.origin);
    if (!entry?.listed || !entry.exposedTo?.includes(event.origin)) {
      reply({ ok: false, name: 'UnknownError', message: `No tool named "${data.name}" is exposed to ${event.origin}` });
      return;
    }
    const controller = new AbortController();
    running.set(data.id, controller);
    // A caller frame removed without a word: its call is cancelled here too.
    const caller = event.source;
    const poll = setInterval(() => {
      if (caller.closed) controller.abort(error('AbortError', 'The page that called this tool went away.'));
    }, 100);
    Promise.resolve()
      .then(() => hooks.run(entry, data.args ?? {}, controller.signal))
      .then((value) => reply({ ok: true, value }), (e) => reply({ ok: false, name: e?.name ?? 'UnknownError', message: String(e?.message ?? e) }))
      .catch(() => {}) // the caller is gone: nobody to answer
      .finally(() => {
        clearInterval(poll);
        running.delete(data.id);
      });
  } else if (kind === 'abort') {
    running.get(data.id)?.abort(error('AbortError', 'The caller cancelled this tool call.'));
  } else if (kind === 'result') {
    const call = calls.get(data.id);
    if (!call) return;
    if (data.ok) call.resolve(data.value);
    else call.reject(error(data.name, data.message));
  }
}
