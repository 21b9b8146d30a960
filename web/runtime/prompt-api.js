// The Prompt API (Chrome's LanguageModel) across the worker channel, both ends in one place.
// LanguageModel is exposed on windows only, so in worker mode the page keeps the sessions and
// the worker's Python talks to stand-ins with the same members:
//   - the worker's end (web/runtime/worker.js): workerLanguageModel() (availability(options),
//     create({monitor, signal, ...}) and a session's prompt(), promptStreaming(),
//     measureContextUsage(), clone(), destroy(), contextWindow/contextUsage and its
//     contextoverflow event) and workerToolTypes() (stand-ins of the tool-use classes);
//   - the page's end (web/runtime/worker-host.js): promptHandlers() answers the lm.* requests
//     and pageToolTypes() says which tool-use classes the page has.
// Tool-use objects (LanguageModelToolCall, ...) cannot be cloned: a stand-in carries its class
// name under LM_TYPE and the page makes the real one again (revive()).

/** The member that names a tool-use stand-in's class. */
export const LM_TYPE = 'site-agent:lm-type';
export const LM_TYPES = ['LanguageModelToolCall', 'LanguageModelToolSuccess', 'LanguageModelToolError'];

/** A value as plain (cloneable) data; strings and null as they are. */
export const plain = (value) => {
  if (value === undefined || value === null || typeof value === 'string') return value ?? null;
  return JSON.parse(JSON.stringify(value));
};

// ---------------------------------------------------------------- the page's end

export const usage = (session) => ({
  contextWindow: Number.isFinite(session.contextWindow) ? session.contextWindow : null,
  contextUsage: Number.isFinite(session.contextUsage) ? session.contextUsage : null,
});


/** The tool-use classes this page has: all three, or none. */
export function pageToolTypes() {
  return LM_TYPES.every((name) => typeof globalThis[name] === 'function') ? LM_TYPES : [];
}

/** A prompt's input from the worker, with its stand-ins made real tool-use objects again. */
function revive(value) {
  if (Array.isArray(value)) return value.map(revive);
  if (!value || typeof value !== 'object') return value;
  const out = {};
  for (const [key, member] of Object.entries(value)) if (key !== LM_TYPE) out[key] = revive(member);
  const name = value[LM_TYPE];
  if (name === undefined) return out;
  if (!LM_TYPES.includes(name) || typeof globalThis[name] !== 'function') {
    throw new TypeError(`This page has no ${String(name)}.`);
  }
  return new globalThis[name](out);
}

/** A streamed chunk for the worker: a tool-call part's value as plain data (it cannot be cloned). */
function plainChunk(chunk) {
  if (!chunk || typeof chunk !== 'object' || chunk.type !== 'tool-call' || !chunk.value) return chunk;
  const { callID, name, arguments: args } = chunk.value;
  return { ...chunk, value: { callID, name, arguments: plain(args ?? null) } };
}

function languageModel() {
  const lm = globalThis.LanguageModel;
  if (!lm) throw new DOMException('LanguageModel is not available in this browser.', 'NotSupportedError');
  return lm;
}

/**
 * The lm.* requests of the worker: `host(params)` finds the element's AgentHost (its
 * guard(signal, fn), keep(session) and session(id)).
 */
export function promptHandlers(host) {
  return {
    'lm.availability': (p) => languageModel().availability(p.options ?? undefined),
    'lm.create': (p, { signal, progress }) => {
      const a = host(p);
      return a.guard(signal, async (inner) => {
        const options = { ...revive(p.options ?? {}), signal: inner };
        if (p.monitor) {
          options.monitor = (m) => m.addEventListener('downloadprogress', (event) => {
            progress(event.loaded);
          });
        }
        return a.keep(await languageModel().create(options));
      });
    },
    'lm.clone': (p, { signal }) => {
      const a = host(p);
      const session = a.session(p.session);
      return a.guard(signal, async (inner) => a.keep(await session.clone({ ...(p.options ?? {}), signal: inner })));
    },
    'lm.prompt': (p, { signal }) => {
      const a = host(p);
      const session = a.session(p.session);
      return a.guard(signal, async (inner) => {
        const value = await session.prompt(revive(p.input), { ...(p.options ?? {}), signal: inner });
        return { value, usage: usage(session) };
      });
    },
    'lm.stream': (p, { signal, progress }) => {
      const a = host(p);
      const session = a.session(p.session);
      return a.guard(signal, async (inner) => {
        const input = revive(p.input);
        const reader = session.promptStreaming(input, { ...(p.options ?? {}), signal: inner }).getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            progress(plainChunk(value));
          }
        } finally {
          reader.releaseLock();
        }
        return { usage: usage(session) };
      });
    },
    'lm.measure': (p, { signal }) => {
      const a = host(p);
      const session = a.session(p.session);
      return a.guard(signal, (inner) => session.measureContextUsage(revive(p.input), { ...(p.options ?? {}), signal: inner }));
    },
  };
}

// ---------------------------------------------------------------- the worker's end

export function workerToolTypes(names) {
  if (!Array.isArray(names) || names.length !== 3) return undefined;
  const out = {};
  for (const name of names) {
    out[name] = class {
      constructor(init) {
        Object.assign(this, init ?? {});
        this[LM_TYPE] = name;
      }
    };
  }
  return out;
}

export const sessions = new Map(); // "agent:session" -> the session stand-in (for its events)

/** A Prompt API session kept by the page, seen from here: the same members. */
function sessionOf(endpoint, agent, info) {
  const session = info.session;
  const target = new EventTarget();
  let usage = info.usage ?? {};
  const update = (next) => {
    if (next) usage = next;
  };
  Object.defineProperties(target, {
    contextWindow: { get: () => usage.contextWindow ?? undefined },
    contextUsage: { get: () => usage.contextUsage ?? undefined },
  });
  const split = (more) => {
    const { signal, ...options } = more ?? {};
    return [signal, options];
  };
  target.prompt = async (input, more) => {
    const [signal, options] = split(more);
    const reply = await endpoint.request('lm.prompt', { agent, session, input, options }, signal);
    update(reply.usage);
    return reply.value;
  };
  target.promptStreaming = (input, more) => {
    const [signal, options] = split(more);
    const controller = new AbortController();
    signal?.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
    if (signal?.aborted) controller.abort(signal.reason);
    return new ReadableStream({
      start(stream) {
        endpoint
          .request('lm.stream', { agent, session, input, options }, controller.signal, (chunk) => {
            stream.enqueue(chunk);
          })
          .then((reply) => {
            update(reply.usage);
            stream.close();
          }, (error) => stream.error(error));
      },
      cancel: () => controller.abort(),
    });
  };
  target.measureContextUsage = (input, more) => {
    const [signal, options] = split(more);
    return endpoint.request('lm.measure', { agent, session, input, options }, signal);
  };
  target.clone = async (more) => {
    const [signal, options] = split(more);
    return sessionOf(endpoint, agent, await endpoint.request('lm.clone', { agent, session, options }, signal));
  };
  target.destroy = () => {
    sessions.delete(`${agent}:${session}`);
    endpoint.notify('lm.destroy', { agent, session });
  };
  sessions.set(`${agent}:${session}`, target);
  return target;
}

export function workerLanguageModel(endpoint, agent) {
  return {
    availability: (options) => endpoint.request('lm.availability', { agent, options: options ?? null }),
    async create(options) {
      const { signal, monitor, ...rest } = options ?? {};
      let onProgress;
      if (typeof monitor === 'function') {
        const m = new EventTarget();
        monitor(m);
        onProgress = (loaded) =>
          m.dispatchEvent(Object.assign(new Event('downloadprogress'), { loaded }));
      }
      const params = { agent, options: rest, monitor: !!onProgress };
      return sessionOf(endpoint, agent, await endpoint.request('lm.create', params, signal, onProgress));
    },
  };
}
