// Start Python for <site-agent>: Pyodide, then the pysite_agent wheel and its dependencies.
//
// Default source: the self-hosted bundle written by `python -m pysite_agent bundle OUT`, where
// this file is OUT/web/runtime/boot.js and Pyodide with the wheels and their lock is OUT/pyodide/.
// A CDN works as configuration only, e.g.
//   bootPython({ indexURL: "https://cdn.jsdelivr.net/pyodide/v0.29.x/full/" })
// (then packages missing from that CDN's lock, such as pysite-agent, come from PyPI through
// micropip). Nothing here reaches a third party unless the page configures it.
// It runs on a page's main thread or in a module worker alike.

import * as snapshots from "./snapshot.js";
import { stampFetches, stamper, timedFactory } from "./boot-timing.js";
import { scriptURL } from "./settings.js";

/**
 * @typedef {object} BootProgress
 * @property {"runtime" | "packages" | "import"} phase  what is happening now
 * @property {number} loaded  steps of this phase done so far (packages: wheels installed)
 * @property {number} [total]  steps of this phase in all, when known
 */

/**
 * @typedef {object} SnapshotInfo
 * @property {"used" | "made" | "stale" | "refused" | "absent" | "off"} state  which start this
 *   was (see web/runtime/snapshot.js): `used` started from a stored memory snapshot; the others started
 *   normally, and `made`/`stale`/`refused` took a new snapshot when they could (`made: true`)
 * @property {boolean} made  a new snapshot was taken during this start
 * @property {string} [reason]  why a snapshot was not used (for logs and tests)
 * @property {boolean} [saved]  on the second report only: the new snapshot was stored
 * @property {number} [bytes]  its size, when saved
 * @property {{start: number, stored?: number, end: number}} [timing]  on the second report of
 *   a snapshot made in a background worker: when (ms since the epoch) the worker started, its
 *   answer came and the page's read-back (snapshots.confirmStored) ended
 */

/**
 * Start Pyodide (or use a running one), install pysite_agent and import it.
 *
 * Steps, each reported through `onProgress`:
 * 1. `runtime`: `loadPyodide` imported from `${indexURL}pyodide.mjs`, with the lock at
 *    `lockFileURL` (fetched once here). Skipped when the page hands in `pyodide`. When this
 *    origin keeps a memory snapshot for this bundle (web/runtime/snapshot.js), Python starts from it,
 *    with the modules in `imports` already imported; otherwise a normal start that takes one
 *    (stored when the page is idle) for the next start. Any problem with a snapshot falls back
 *    to a normal start; which path was taken is reported through `onSnapshot`, as the
 *    `snapshot` field of the `runtime` phase's last progress report, and as the performance
 *    mark `site-agent:snapshot` (its `detail`; `site-agent:snapshot-saved` once stored).
 * 2. `packages`: the names in `packages` (and their dependencies) from the lock, every wheel
 *    checked against the lock's sha256. With snapshots: each wheel is fetched with that
 *    hash as its `integrity` and kept on `sys.path` as a zip file (so it can be written again
 *    after a restore). Without: `pyodide.loadPackage`, measured faster than micropip
 *    (docs/bundle.md); names the lock does not list are installed with micropip (no
 *    snapshot then). With a page's own `pyodide` (e.g. PyScript): if its lock lists the
 *    packages (it was started from this bundle), the same; otherwise one micropip
 *    transaction installs what its lock lists by name and the rest from this bundle's wheels
 *    by URL. A page's own Pyodide is never snapshotted.
 * 3. `import`: the modules in `imports`.
 *
 * @param {object} [options]
 * @param {string | URL} [options.indexURL]  folder of pyodide.mjs and the runtime files;
 *   default: `../pyodide/` relative to this module (the bundle's layout).
 * @param {string | URL} [options.lockFileURL]  `pyodide-lock.json` listing the wheels;
 *   default: `${indexURL}pyodide-lock.json`.
 * @param {any} [options.pyodide]  an already running Pyodide instance to use instead of
 *   starting one (PyScript pages).
 * @param {string[]} [options.packages]  distributions to install (names in the lock, or
 *   wheel URLs ending in `.whl`); default `["pysite-agent"]`.
 * @param {string[]} [options.imports]  modules to import (before a snapshot is taken, so they
 *   are in it); default: `pysite_agent`, `pysite_agent.browser.element`,
 *   `pysite_agent.browser.event_loop` and `pysite_agent.tools.model_context` (what the
 *   element's first calls use).
 * @param {string[]} [options.laterImports]  modules a start does not wait for: imported once
 *   the page is idle after it (an import that fails is ignored; the code that needs them
 *   imports them itself when it runs first), and in every snapshot, with `imports`; default
 *   `jsonschema` and `referencing` (the argument check's library: 60 % of the agent's import
 *   time in Pyodide, and not needed before the first tool call; docs/performance.md).
 * @param {boolean} [options.snapshot]  use and keep a memory snapshot when possible; default true.
 * @param {"worker" | "inline"} [options.snapshotMaker]  who takes a new snapshot: `worker`
 *   (default where module workers exist): the visitor's runtime starts normally and a
 *   throwaway runtime in a background worker takes it once the page is idle; `inline`: this
 *   runtime starts in Pyodide's snapshot-making mode (slower, measured about 13 %) and takes it
 *   right after the imports.
 * @param {(progress: BootProgress) => void} [options.onProgress]  progress callback;
 *   an exception it throws is logged and ignored.
 * @param {(info: SnapshotInfo) => void} [options.onSnapshot]  called once with the path taken,
 *   and once more (with `saved`) when a snapshot taken during this start was stored or not.
 * @param {(mark: {name: string, at: number, detail?: any}) => void} [options.onMark]  called at
 *   each step of the start (see "Timing marks" below) with `at` in ms since the epoch
 *   (`performance.timeOrigin + performance.now()`), so that a page can place a worker's
 *   steps on its own timeline; an exception it throws is ignored.
 * @param {boolean} [options.batchCallbacks]  run asyncio's ready callbacks in batches
 *   (`pysite_agent/browser/event_loop.py`, `docs/runtime.md`) on a runtime started here;
 *   default true. A Pyodide handed in (`pyodide`) keeps its own loop.
 * @param {AbortSignal} [options.signal]  aborts between steps (and the lock's fetch); the
 *   promise then rejects with `signal.reason`.
 * @returns {Promise<any>} the Pyodide instance, with the `imports` imported.
 *
 * Timing marks (always on; `performance.mark` in this realm as `site-agent:boot:NAME`, and
 * `onMark`): `begin`; `lock` (the lock read); `pyodide.mjs` and `asm.mjs` (Pyodide's two
 * scripts imported, in parallel with the lock); `snapshot-read` (the stored snapshot read and
 * checked, on a start that may use one); `wasm:start` / `wasm:end` (WebAssembly compiled and
 * instantiated, streaming from the fetch); `emscripten` (CPython initialised, the standard
 * library mounted); `core` (Pyodide's own Python set-up done: `loadPyodide` resolved);
 * `wheels` (the wheels fetched, snapshot path); `packages`; `import:MODULE` (each of
 * `imports` done); `event-loop`; `end`; and `fetch:FILE:start` / `fetch:FILE:end` from
 * Resource Timing for Pyodide's files and the wheels (`detail`: transfer and body bytes).
 * docs/performance.md reads them (benchmarks/browser_ready.py).
 */
export async function bootPython({ batchCallbacks = true, ...options } = {}) {
  ensureErrorStacks();
  const stamp = stamper(options.onMark);
  stamp("begin");
  const pyodide = await startPython({ ...options, stamp });
  if (batchCallbacks && !options.pyodide) {
    const mod = pyodide.pyimport("pysite_agent.browser.event_loop");
    try {
      const install = mod.install;
      try {
        install();
      } finally {
        install.destroy();
      }
    } finally {
      mod.destroy();
    }
    stamp("event-loop");
  }
  stampFetches(stamp, folderURL(options.indexURL ?? new URL("../../pyodide/", import.meta.url)));
  stamp("end");
  return pyodide;
}

/**
 * Gives `Error.prototype` a `stack` (reading `name: message`) where it has none, in the scope
 * Python runs in. Pyodide raises a rejected promise's reason in Python only when it looks like
 * an Error (`name`, `message` and `stack`); otherwise the awaiting coroutine never resumes
 * ("invalid exception object"). WebKit's own errors, such as the `TypeError` of a failed
 * `fetch`, carry no `stack`: without this a proxy that cannot be reached would hang the run
 * there. Errors made by scripts keep their own stack; so do every engine's errors in V8 and
 * SpiderMonkey (which has `Error.prototype.stack` already).
 *
 * @param {typeof globalThis} [scope]
 * @returns {boolean} whether it was added now
 */
export function ensureErrorStacks(scope = globalThis) {
  const proto = scope.Error?.prototype;
  if (!proto || "stack" in proto) return false;
  Object.defineProperty(proto, "stack", {
    configurable: true,
    get() {
      return `${this.name}: ${this.message}`;
    },
    set(value) {
      Object.defineProperty(this, "stack", { value, writable: true, configurable: true });
    },
  });
  return true;
}

async function startPython({
  indexURL,
  lockFileURL,
  pyodide: existing,
  packages,
  imports,
  laterImports,
  snapshot = true,
  snapshotMaker,
  onProgress,
  onSnapshot,
  signal,
  stamp,
} = {}) {
  const base = folderURL(indexURL ?? new URL("../../pyodide/", import.meta.url));
  const lockURL = new URL(lockFileURL ?? "pyodide-lock.json", base).href;
  const wanted = packages ?? ["pysite-agent"];
  const modules = imports ?? [
    "pysite_agent",
    "pysite_agent.browser.element",
    "pysite_agent.browser.event_loop",
    "pysite_agent.tools.model_context",
  ];
  const later = (laterImports ?? ["jsonschema", "referencing"]).filter((m) => !modules.includes(m));
  const all = [...modules, ...later]; // what a snapshot holds
  const importLater = (pyodide) => {
    for (const name of later) {
      try {
        pyodide.pyimport(name).destroy?.();
        stamp(`later:${name}`);
      } catch {}
    }
  };
  const report = (progress) => {
    if (!onProgress) return;
    try {
      onProgress(progress);
    } catch (error) {
      console.error("bootPython: onProgress failed", error);
    }
  };
  const tell = (info) => {
    try {
      const name = info.saved === undefined ? "site-agent:snapshot" : "site-agent:snapshot-saved";
      globalThis.performance?.mark?.(name, { detail: info });
    } catch {}
    try {
      onSnapshot?.(info);
    } catch (error) {
      console.error("bootPython: onSnapshot failed", error);
    }
  };
  signal?.throwIfAborted();

  if (existing) {
    const lock = await fetchLock(lockURL, signal, false);
    signal?.throwIfAborted();
    tell({ state: "off", made: false, reason: "a running Pyodide was handed in" });
    await installWithMicropip(existing, wanted, lock, lockURL, report, signal);
    signal?.throwIfAborted();
    importModules(existing, modules, report, stamp);
    whenIdle(() => importLater(existing));
    return existing;
  }

  report({ phase: "runtime", loaded: 0, total: 1 });
  // While pyodide.mjs loads: the lock, then (when a snapshot may be used) the wheels and the
  // stored snapshot.
  const early = fetchLock(lockURL, signal, true, true).then(async (lockText) => {
    stamp("lock");
    const lock = JSON.parse(lockText);
    const plan = { lockText, lock, ...splitWanted(wanted, lock) };
    if (snapshot && !plan.others.length && !snapshots.unsupported(null, true)) {
      plan.names = closure(lock, plan.inLock);
      plan.wheels = fetchWheels(lock, plan.names, new URL(".", lockURL).href, signal).then((w) => {
        stamp("wheels");
        return w;
      });
      plan.wheels.catch(() => {});
      plan.key = await snapshots.snapshotKey(lockText, all);
      plan.stored = snapshots.readSnapshot(plan.key)
        .catch((error) => ({ state: "missing", reason: String(error?.message ?? error) }))
        .then((stored) => {
          stamp("snapshot-read", { state: stored.state, bytes: stored.bytes?.length ?? 0 });
          return stored;
        });
    }
    return plan;
  });
  // Pyodide's second script is imported here too, beside the first, instead of after it.
  const asm = import(new URL("pyodide.asm.mjs", base).href).then((m) => {
    stamp("asm.mjs");
    return m.default;
  });
  asm.catch(() => {});
  const script = import(new URL("pyodide.mjs", base).href).then((m) => {
    stamp("pyodide.mjs");
    return m;
  });
  const [module, plan] = await Promise.all([script, early]);
  const { lock, inLock, others } = plan;
  signal?.throwIfAborted();
  const settings = {
    indexURL: base,
    lockFileContents: lock,
    packageBaseUrl: new URL(".", lockURL).href,
  };
  if (stdlibURL(lock, lockURL)) settings.stdLibURL = stdlibURL(lock, lockURL);
  if (module.version === snapshots.PYODIDE_VERSION) {
    const create = await asm.catch(() => null);
    if (typeof create === "function") settings.createPyodideModule = timedFactory(create, stamp);
  }
  const core = (options) => module.loadPyodide(options).then((pyodide) => {
    stamp("core");
    return pyodide;
  });
  const why = !snapshot ? "snapshot: false"
    : others.length ? "packages outside the lock"
      : null;
  const absent = why ? null : snapshots.unsupported(module);
  if (why || absent) {
    // The normal start, as before snapshots.
    const info = { state: why ? "off" : "absent", made: false, reason: why ?? absent };
    const pyodide = await core(settings);
    signal?.throwIfAborted();
    tell(info);
    report({ phase: "runtime", loaded: 1, total: 1, snapshot: info.state });
    await installFromLock(pyodide, inLock, others, lock, report, signal, stamp);
    signal?.throwIfAborted();
    importModules(pyodide, modules, report, stamp);
    whenIdle(() => importLater(pyodide));
    return pyodide;
  }

  // Snapshot path.
  const { names, wheels, key } = plan;
  const stored = await plan.stored;
  signal?.throwIfAborted();
  let pyodide = null;
  const info = { state: stored.state === "missing" ? "made" : stored.state, made: false };
  if (stored.reason) info.reason = stored.reason;
  if (stored.state === "found") {
    try {
      pyodide = await core({ ...settings, ...snapshots.loadOptions(stored.bytes) });
      info.state = "used";
    } catch (error) {
      await snapshots.deleteSnapshots();
      Object.assign(info, { state: "refused", reason: `Pyodide: ${error?.message ?? error}` });
    }
  }
  const maker = snapshotMaker ?? (typeof Worker === "function" ? "worker" : "inline");
  if (!pyodide && maker === "worker") {
    // A normal start for the visitor; the snapshot is made by a throwaway runtime in a
    // background worker once the page is idle (web/runtime/snapshot-worker.js).
    pyodide = await core(settings);
    signal?.throwIfAborted();
    info.made = true;
    tell(info);
    report({ phase: "runtime", loaded: 1, total: 1, snapshot: info.state });
    // The wheels fetched beside the core's start, kept as zip files on sys.path as after a
    // restore (not loadPackage, which fetched them again and unpacked them: 0.4-4.5 s).
    report({ phase: "packages", loaded: 0, total: names.length });
    placeWheels(pyodide, await wheels, false);
    stamp("packages");
    signal?.throwIfAborted();
    report({ phase: "packages", loaded: names.length, total: names.length });
    importModules(pyodide, modules, report, stamp);
    whenIdle(() => {
      makeInWorker(
        { indexURL: base, lockFileURL: lockURL, packages: wanted, imports: all, laterImports: [] },
        (result) => tell({ ...info, ...result }),
      );
      importLater(pyodide);
    });
    return pyodide;
  }
  const making = !pyodide;
  if (making) pyodide = await core({ ...settings, ...snapshots.loadOptions(null) });
  signal?.throwIfAborted();
  report({ phase: "runtime", loaded: 1, total: 1, snapshot: info.state });

  report({ phase: "packages", loaded: 0, total: names.length });
  placeWheels(pyodide, await wheels, !making);
  stamp("packages");
  signal?.throwIfAborted();
  report({ phase: "packages", loaded: names.length, total: names.length });

  // A snapshot holds the later imports too; a start from one finds them imported.
  importModules(pyodide, modules, report, stamp);
  if (making) {
    importLater(pyodide);
    let bytes = null;
    try {
      bytes = snapshots.takeSnapshot(pyodide);
      info.made = true;
    } catch (error) {
      Object.assign(info, { state: "refused", reason: `Pyodide: ${error?.message ?? error}` });
    } finally {
      snapshots.releaseRecorder(pyodide);
    }
    if (bytes) whenIdle(() => snapshots.storeSnapshot(key, bytes).then(
      (size) => tell({ ...info, saved: true, bytes: size }),
      (error) => tell({ ...info, saved: false, reason: `storing: ${error?.message ?? error}` }),
    ));
  }
  tell(info);
  return pyodide;
}

/**
 * Warm the HTTP cache with what `bootPython` fetches (Pyodide's files, the lock and the wheels
 * of `packages`), at low priority, without starting Python. Never rejects.
 * @param {object} [options]  `indexURL`, `lockFileURL`, `packages`: as for bootPython.
 * @returns {Promise<number>} how many files were fetched.
 */
export async function prefetchPython({ indexURL, lockFileURL, packages } = {}) {
  const base = folderURL(indexURL ?? new URL("../../pyodide/", import.meta.url));
  const lockURL = new URL(lockFileURL ?? "pyodide-lock.json", base).href;
  const lock = await fetchLock(lockURL, undefined, false);
  const files = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm"]
    .map((name) => new URL(name, base).href);
  files.push(stdlibURL(lock, lockURL) ?? new URL("python_stdlib.zip", base).href);
  if (lock?.packages) {
    const { inLock } = splitWanted(packages ?? ["pysite-agent"], lock);
    for (const name of closure(lock, inLock)) {
      files.push(new URL(lock.packages[name].file_name, new URL(".", lockURL)).href);
    }
  }
  const done = await Promise.all(files.map(async (url) => {
    try {
      const response = await fetch(url, { priority: "low" });
      const reader = response.body?.getReader();
      while (reader && !(await reader.read()).done);
      return response.ok;
    } catch {
      return false;
    }
  }));
  return done.filter(Boolean).length;
}

/** Make and store a snapshot in a module worker; `done({saved, bytes?, reason?})` once. */
function makeInWorker(options, done) {
  let worker;
  let finished = false;
  // ms since the epoch: the maker started, its entry was stored, the page read it back.
  const now = () => performance.timeOrigin + performance.now();
  const timing = { start: now() };
  const finish = (result) => {
    if (finished) return;
    finished = true;
    worker?.terminate();
    timing.end = now();
    done({ ...result, timing });
  };
  try {
    worker = new Worker(scriptURL(new URL("./snapshot-worker.js", import.meta.url).href), { type: "module" });
  } catch (error) {
    finish({ saved: false, reason: `worker: ${error?.message ?? error}` });
    return;
  }
  // The worker lives until this realm has read its entry back (snapshots.confirmStored).
  worker.onmessage = ({ data }) => {
    timing.stored = now();
    if (!data?.saved) return finish(data);
    snapshots.confirmStored(data.bytes).then(
      () => finish(data),
      (error) => finish({ saved: false, reason: `storing: ${error?.message ?? error}` }),
    );
  };
  worker.onerror = (event) => finish({ saved: false, reason: `worker: ${event.message ?? "failed"}` });
  worker.postMessage(options);
}

/** The bytecode stdlib zip named in the lock (pysite_agent/bundle/_stdlib.py), else null. */
function stdlibURL(lock, lockURL) {
  const name = lock?.pysite_agent?.stdlib?.file_name;
  return typeof name === "string" && name ? new URL(name, new URL(".", lockURL)).href : null;
}

/** Where the wheels live as zip files on `sys.path` (the same path in every snapshot). */
const WHEEL_DIR = "/lib/pysite-agent/wheels";

function splitWanted(wanted, lock) {
  const inLock = [];
  const others = [];
  for (const item of wanted) {
    const name = canonical(item);
    if (!item.endsWith(".whl") && lock.packages?.[name]) inLock.push(name);
    else others.push(item);
  }
  return { inLock, others };
}

/** The wheels `names` from the lock, each fetched with its sha256 as `integrity`. */
function fetchWheels(lock, names, packageBase, signal) {
  return Promise.all(names.map(async (name) => {
    const entry = lock.packages[name];
    const integrity = `sha256-${btoa(String.fromCharCode(...entry.sha256.match(/../g).map((b) => parseInt(b, 16))))}`;
    const url = new URL(entry.file_name, packageBase).href;
    const response = await fetch(url, { integrity, signal });
    if (!response.ok) throw new Error(`bootPython: ${url}: HTTP ${response.status}`);
    return [entry.file_name, new Uint8Array(await response.arrayBuffer())];
  }));
}

/** Write the wheels into the file system; on a fresh runtime, put them on sys.path. */
function placeWheels(pyodide, wheels, restored) {
  pyodide.FS.mkdirTree(WHEEL_DIR);
  for (const [name, bytes] of wheels) pyodide.FS.writeFile(`${WHEEL_DIR}/${name}`, bytes);
  if (restored) return;
  const paths = wheels.map(([name]) => `${WHEEL_DIR}/${name}`).sort();
  pyodide.runPython(`
def _pysite_agent_paths(paths):
    import importlib, sys
    sys.path.extend(p for p in paths if p not in sys.path)
    importlib.invalidate_caches()
_pysite_agent_paths(${JSON.stringify(paths)})
del _pysite_agent_paths
`);
}

function importModules(pyodide, modules, report, stamp) {
  report({ phase: "import", loaded: 0, total: 1 });
  for (const name of modules) {
    pyodide.pyimport(name).destroy?.();
    stamp(`import:${name}`);
  }
  report({ phase: "import", loaded: 1, total: 1 });
}

// A worker (where the element's Python runs by default) has no idle callback: wait this long
// (ms) after the start instead, so that a message the visitor typed while Python started runs
// first, without a second start competing for the CPU.
const WORKER_IDLE_DELAY_MS = 3000;

function whenIdle(fn) {
  if (globalThis.requestIdleCallback) requestIdleCallback(() => fn(), { timeout: 10_000 });
  else setTimeout(fn, globalThis.document ? 0 : WORKER_IDLE_DELAY_MS);
}

function folderURL(url) {
  const href = new URL(String(url), globalThis.location?.href).href;
  return href.endsWith("/") ? href : `${href}/`;
}

async function fetchLock(url, signal, required, asText = false) {
  try {
    const response = await fetch(url, { signal });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return asText ? await response.text() : await response.json();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (required) throw new Error(`bootPython: cannot read the lock ${url}: ${error.message}`);
    return null;
  }
}

function canonical(name) {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

/** Names in the lock plus all their dependencies (from the lock). */
function closure(lock, names) {
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const dep of lock.packages[name].depends) visit(canonical(dep));
  };
  names.forEach(visit);
  return [...seen];
}

async function installFromLock(pyodide, inLock, others, lock, report, signal, stamp) {
  const names = closure(lock, inLock);
  const total = names.length + others.length;
  report({ phase: "packages", loaded: 0, total });
  if (names.length) await loadPackages(pyodide, names);
  stamp?.("packages");
  signal?.throwIfAborted();
  report({ phase: "packages", loaded: names.length, total });
  if (others.length) {
    await micropipInstall(pyodide, others);
    report({ phase: "packages", loaded: total, total });
  }
}

async function installWithMicropip(pyodide, wanted, lock, lockURL, report, signal) {
  const own = pyodide.lockfile;
  if (own?.packages && wanted.every((item) => own.packages[canonical(item)])) {
    // Started from this bundle (e.g. PyScript pointed at it): same path as a fresh start.
    const { inLock, others } = splitWanted(wanted, own);
    return installFromLock(pyodide, inLock, others, own, report, signal);
  }
  // The page's Pyodide has its own lock: what it lists is installed by name, the rest from
  // this bundle by wheel URL, in one micropip transaction.
  const lockBase = new URL(".", lockURL).href;
  const loaded = pyodide.loadedPackages ?? {};
  const known = wanted.filter((item) => lock?.packages?.[canonical(item)]).map(canonical);
  const requirements = [
    ...closure(lock ?? { packages: {} }, known)
      .filter((name) => !loaded[name] && !loaded[lock.packages[name].name])
      .map((name) =>
        own?.packages?.[name] ? name : new URL(lock.packages[name].file_name, lockBase).href,
      ),
    ...wanted.filter((item) => !known.includes(canonical(item))),
  ];
  report({ phase: "packages", loaded: 0, total: requirements.length });
  if (requirements.length) await micropipInstall(pyodide, requirements);
  signal?.throwIfAborted();
  report({ phase: "packages", loaded: requirements.length, total: requirements.length });
}

/** `pyodide.loadPackage`, failing loudly (it reports some failures only to errorCallback). */
async function loadPackages(pyodide, names) {
  const errors = [];
  try {
    await pyodide.loadPackage(names, {
      checkIntegrity: true,
      messageCallback: () => {},
      errorCallback: (message) => errors.push(message),
    });
  } catch (error) {
    errors.push(error.message ?? String(error));
  }
  if (errors.length) {
    throw new Error(`bootPython: loading ${names.join(", ")} failed:\n${errors.join("\n")}`);
  }
}

async function micropipInstall(pyodide, requirements) {
  await loadPackages(pyodide, ["micropip"]);
  const micropip = pyodide.pyimport("micropip");
  try {
    await micropip.install(requirements);
  } finally {
    micropip.destroy?.();
  }
}
