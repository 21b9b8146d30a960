// The site's own model in the visitor's browser: hosts @wllama/wllama (llama.cpp compiled to
// WebAssembly) for the Python adapter pysite_agent/models/local.py, as web/runtime/prompt-api.js
// hosts Chrome's LanguageModel. It holds no agent logic: the prompt, the reply schema, the
// history budget and the parsing are Python's. Loaded (by a dynamic import) only when the
// element's models include "local"; the engine files (../../wllama/) load only at the first
// step, and the model file only after the visitor's click (download()).
//
// Where it runs: beside Python (the element's module worker by default, else the page);
// wllama runs llama.cpp in a worker of its own, so the page never freezes. Threads: several
// when the page is cross-origin isolated (COOP/COEP headers: SharedArrayBuffer), else one.
// WebGPU when the browser offers navigator.gpu. No third party is ever reached: wllama's
// compatibility build (fetched from a CDN by default, for browsers without JSPI) is turned off.
//
// The model file is kept per origin in Cache Storage (cache "site-agent-models-v1", one entry
// per model URL) with its size and sha256 in the entry's headers. Each page's first status()
// checks the kept copy: its size, its sha256 against the site's pin (or against the hash
// taken when it was saved), and, when the site pins no hash, the server's ETag/size (HEAD).
// A damaged or stale copy is deleted and offered for download again.

export const CACHE_NAME = 'site-agent-models-v1';
// Prompt tokens per batch: llama.cpp reports progress after each (its default of 512 gives
// none before a short prompt is done); measured no slower for a 135M model (docs/local-model.md).
export const PROMPT_BATCH = 64;
const H_SHA = 'x-site-agent-sha256';
const H_SIZE = 'x-site-agent-size';
const H_TAG = 'x-site-agent-etag';

function named(name, message) {
  const error = new Error(message);
  error.name = name;
  return error;
}

function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return new DOMException(typeof reason === 'string' ? reason : 'The operation was aborted.', 'AbortError');
}

// `promise`, or an AbortError as soon as `signal` aborts (the run itself ends at its next token).
function untilAborted(promise, signal) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function sha256Hex(blob) {
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The settings the page allows: threads and WebGPU (docs/local-model.md, "Threads and GPU").
 * `gpu` is whether a WebGPU adapter that is not a software fallback was found. */
export function engineSettings(options = {}, gpu = false) {
  const isolated = globalThis.crossOriginIsolated === true;
  const cores = Math.max(1, Number(globalThis.navigator?.hardwareConcurrency) || 1);
  let threads = isolated ? Math.min(8, cores) : 1; // every core (up to 8) where SharedArrayBuffer is
  if (Number.isInteger(options.threads) && options.threads > 0) threads = isolated ? options.threads : 1;
  const webgpu = options.webgpu !== false && gpu;
  return { crossOriginIsolated: isolated, threads, webgpu };
}

/** Whether WebGPU has a hardware adapter here (a software fallback is slower than the CPU). */
export async function hasWebGPU() {
  try {
    const adapter = await globalThis.navigator?.gpu?.requestAdapter();
    return !!adapter && !(adapter.info?.isFallbackAdapter ?? adapter.isFallbackAdapter);
  } catch {
    return false;
  }
}

// One engine per model and settings in this realm: a new configuration of the element (its
// attributes changed) finds the model already checked, or loaded.
const engines = new Map();

export function createLocalEngine(options = {}) {
  const base = options.baseUrl ?? globalThis.location?.href;
  const key = JSON.stringify([new URL(String(options.url ?? ''), base).href, options.sha256 ?? null,
    options.contextTokens ?? null, options.threads ?? null, options.webgpu ?? null, options.engineUrl ?? null]);
  let engine = engines.get(key);
  if (!engine) {
    engine = new LocalEngine(options);
    engines.set(key, engine);
  }
  return engine;
}

class LocalEngine {
  #url;
  #sha256;
  #size;
  #context;
  #assets;
  #options;
  #checked = null; // the promise of the first check of the kept copy
  #state = null; // absent | downloading | cached | loaded | stale | damaged | unsupported
  #reason = '';
  #blob = null; // the kept copy, checked
  #stored = 0;
  #wllama = null;
  #loading = null;
  #gpu = false;

  constructor(options) {
    this.#options = options;
    const base = options.baseUrl ?? globalThis.location?.href;
    this.#url = new URL(String(options.url ?? ''), base).href;
    this.#sha256 = typeof options.sha256 === 'string' ? options.sha256.toLowerCase() : null;
    this.#size = Number.isInteger(options.size) && options.size > 0 ? options.size : null;
    this.#context = Number.isInteger(options.contextTokens) ? options.contextTokens : 2048;
    this.#assets = new URL(options.engineUrl ?? '../../wllama/', import.meta.url).href;
  }

  get url() {
    return this.#url;
  }

  #status() {
    const out = { state: this.#state, size: this.#size, stored: this.#stored, url: this.#url };
    if (this.#reason) out.reason = this.#reason;
    return { ...out, ...engineSettings(this.#options, this.#gpu) };
  }

  async status() {
    if (!this.#checked) this.#checked = this.#check();
    await this.#checked;
    return this.#status();
  }

  async #cache() {
    return globalThis.caches.open(CACHE_NAME);
  }

  async #check() {
    if (typeof WebAssembly !== 'object' || !globalThis.caches || !globalThis.crypto?.subtle) {
      this.#state = 'unsupported';
      this.#reason = 'this browser lacks WebAssembly, Cache Storage or Web Crypto (a secure context)';
      return;
    }
    if (this.#options.webgpu !== false) this.#gpu = await hasWebGPU();
    let kept;
    try {
      kept = await (await this.#cache()).match(this.#url);
    } catch (error) {
      this.#state = 'unsupported';
      this.#reason = `Cache Storage is not usable here (${error?.name ?? error})`;
      return;
    }
    if (!this.#size) await this.#askServer(kept);
    if (!kept) {
      this.#state = 'absent';
      return;
    }
    const blob = await kept.blob();
    const savedHash = kept.headers.get(H_SHA);
    const savedSize = Number(kept.headers.get(H_SIZE));
    this.#stored = blob.size;
    let problem = null;
    if (blob.size !== savedSize) problem = ['damaged', 'the saved copy is incomplete'];
    else if (this.#size && blob.size !== this.#size) problem = ['stale', 'the site has a new version of the model'];
    else if (this.#sha256 && savedHash !== this.#sha256) problem = ['stale', 'the site has a new version of the model'];
    else if (this.#staleTag && this.#staleTag !== kept.headers.get(H_TAG)) problem = ['stale', 'the site has a new version of the model'];
    else if ((await sha256Hex(blob)) !== savedHash) problem = ['damaged', 'the saved copy is damaged'];
    if (problem) {
      [this.#state, this.#reason] = problem;
      await this.#forget();
      return;
    }
    this.#blob = blob;
    this.#size = this.#size ?? blob.size;
    this.#state = 'cached';
  }

  #staleTag = null;

  async #askServer(kept) {
    // The size for the download button, and (with no pinned hash) the server's version tag.
    try {
      const response = await fetch(this.#url, { method: 'HEAD', cache: 'no-store' });
      if (!response.ok) return;
      const length = Number(response.headers.get('content-length'));
      if (Number.isInteger(length) && length > 0 && !this.#size && !kept) this.#size = length;
      const tag = response.headers.get('etag');
      if (kept && tag && !this.#sha256) this.#staleTag = tag;
      if (kept && !this.#sha256 && Number.isInteger(length) && length > 0) this.#size = length;
    } catch {
      // Offline: the kept copy is used as it is.
    }
  }

  async #forget() {
    this.#blob = null;
    this.#stored = 0;
    try {
      await (await this.#cache()).delete(this.#url);
    } catch {
      // Nothing kept, or storage gone: nothing to remove.
    }
  }

  async download({ onProgress, signal } = {}) {
    await this.status();
    if (this.#state === 'cached' || this.#state === 'loaded') {
      onProgress?.(1);
      return this.#status();
    }
    if (this.#state === 'unsupported') throw named('NotSupportedError', this.#reason);
    if (this.#state === 'downloading') throw named('InvalidStateError', 'a download is already running');
    const before = this.#state;
    this.#state = 'downloading';
    try {
      if (signal?.aborted) throw abortError(signal);
      let response;
      try {
        response = await fetch(this.#url, { cache: 'no-store', signal });
      } catch (error) {
        if (signal?.aborted || error?.name === 'AbortError') throw abortError(signal);
        throw named('NetworkError', `could not fetch ${this.#url}: ${error?.message ?? error}`);
      }
      if (!response.ok) throw named('NetworkError', `${this.#url} answered HTTP ${response.status}`);
      const total = this.#size ?? (Number(response.headers.get('content-length')) || 0);
      const reader = response.body.getReader();
      const parts = [];
      let loaded = 0;
      for (;;) {
        let step;
        try {
          step = await reader.read();
        } catch (error) {
          if (signal?.aborted) throw abortError(signal);
          throw named('NetworkError', `the download of ${this.#url} broke off: ${error?.message ?? error}`);
        }
        if (step.done) break;
        parts.push(step.value);
        loaded += step.value.byteLength;
        if (total) onProgress?.(Math.min(1, loaded / total));
      }
      if (signal?.aborted) throw abortError(signal);
      const blob = new Blob(parts, { type: 'application/octet-stream' });
      if (this.#size && blob.size !== this.#size) {
        throw named('IntegrityError', `${this.#url} has ${blob.size} bytes, expected ${this.#size}`);
      }
      const hash = await sha256Hex(blob);
      if (this.#sha256 && hash !== this.#sha256) {
        throw named('IntegrityError', `${this.#url} has sha256 ${hash}, expected ${this.#sha256}`);
      }
      const headers = {
        'content-type': 'application/octet-stream',
        [H_SHA]: hash,
        [H_SIZE]: String(blob.size),
        'x-site-agent-saved': new Date().toISOString(),
      };
      const tag = response.headers.get('etag');
      if (tag) headers[H_TAG] = tag;
      await (await this.#cache()).put(this.#url, new Response(blob, { headers }));
      this.#blob = blob;
      this.#stored = blob.size;
      this.#size = blob.size;
      this.#staleTag = null;
      this.#reason = '';
      this.#state = 'cached';
      onProgress?.(1);
      return this.#status();
    } catch (error) {
      if (this.#state === 'downloading') this.#state = before === 'absent' ? 'absent' : before;
      throw error;
    }
  }

  async load({ signal } = {}) {
    await this.status();
    if (this.#state === 'loaded') return this.info();
    if (this.#state !== 'cached' || !this.#blob) {
      throw named('InvalidStateError', 'the model is not on this device yet: download it first');
    }
    if (!this.#loading) {
      this.#loading = this.#start().finally(() => {
        this.#loading = null;
      });
    }
    const loading = this.#loading;
    if (!signal) return loading;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(abortError(signal));
      if (signal.aborted) onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      loading.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  async #start() {
    const started = performance.now();
    const { Wllama } = await import(new URL('index.js', this.#assets).href);
    const settings = engineSettings(this.#options, this.#gpu);
    const quiet = { debug() {}, log() {}, warn() {}, error: (...args) => console.error(...args) };
    const wllama = new Wllama(
      { default: new URL('wllama.wasm', this.#assets).href },
      { suppressNativeLog: true, logger: quiet, allowOffline: true },
    );
    wllama.setCompat(null); // never the CDN build: every file comes from this site
    await wllama.loadModel([this.#blob], {
      n_ctx: this.#context,
      n_threads: settings.threads,
      n_gpu_layers: settings.webgpu ? 99999 : 0,
      n_parallel: 1,
      n_batch: PROMPT_BATCH,
      n_ubatch: PROMPT_BATCH,
    });
    this.#wllama = wllama;
    this.#state = 'loaded';
    this.#loadMs = Math.round(performance.now() - started);
    return this.info();
  }

  #loadMs = null;

  info() {
    const w = this.#wllama;
    return {
      contextSize: w?.getLoadedContextInfo?.().n_ctx ?? this.#context,
      threads: w?.getNumThreads?.() ?? 1,
      multithread: w?.isMultithread?.() ?? false,
      webgpu: engineSettings(this.#options, this.#gpu).webgpu,
      loadMs: this.#loadMs,
    };
  }

  // onProgress({total, cache, processed}): llama.cpp's prompt progress, in tokens, after each
  // batch of PROMPT_BATCH tokens (a slow first step shows how far it got).
  // One request at a time (llama.cpp has one slot): a step asked while the prefix is being
  // warmed waits for it (and then reuses it); Stop ends the wait at once.
  async chat(request, options = {}) {
    const turn = this.#turn.then(() => this.#chat(request, options));
    this.#turn = turn.catch(() => {});
    return untilAborted(turn, options.signal);
  }

  #turn = Promise.resolve();

  async #chat(request, { onText, onProgress, signal } = {}) {
    if (this.#state !== 'loaded') await this.load({ signal });
    if (signal?.aborted) throw abortError(signal);
    let text = '';
    let usage = null;
    let timings = null;
    let firstTokenMs = null;
    const started = performance.now();
    const onData = (chunk) => {
      const piece = chunk?.choices?.[0]?.delta?.content;
      if (piece) {
        firstTokenMs ??= Math.round(performance.now() - started);
        text += piece;
        onText?.(piece);
      }
      if (chunk?.prompt_progress && onProgress) {
        try {
          onProgress(chunk.prompt_progress);
        } catch {
          // A sign of life must not break the reply.
        }
      }
      if (chunk?.usage) usage = chunk.usage;
      if (chunk?.timings) timings = chunk.timings;
    };
    try {
      // wllama's callback form: one promise for the whole reply, which Stop rejects through
      // wllama's own abortSignal. (Its async-iterator form leaves a rejected promise behind
      // when the loop is left during generation: an uncaught AbortError.)
      const run = this.#wllama.createChatCompletion({
        ...request, stream: true, return_progress: !!onProgress, abortSignal: signal, onData,
      });
      await untilAborted(run, signal);
    } catch (error) {
      if (signal?.aborted || error?.name === 'AbortError') throw abortError(signal);
      const message = String(error?.message ?? error);
      if (/grammar|json.?schema|response_format/i.test(message)) throw named('SchemaError', message);
      if (/context|kv.?cache|exceed/i.test(message) || error?.type === 'kv_cache_full') {
        throw named('ContextError', message);
      }
      throw error;
    }
    if (!usage && timings) usage = { prompt_tokens: timings.prompt_n, completion_tokens: timings.predicted_n };
    return { text, usage, timings, firstTokenMs };
  }

  async clear() {
    await this.status();
    if (this.#state === 'downloading') throw named('InvalidStateError', 'a download is running');
    await this.unload();
    await this.#forget();
    this.#state = 'absent';
    this.#reason = '';
    return this.#status();
  }

  async unload() {
    const w = this.#wllama;
    this.#wllama = null;
    if (this.#state === 'loaded') this.#state = this.#blob ? 'cached' : 'absent';
    if (w) await w.exit().catch(() => {});
  }
}
