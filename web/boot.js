// Start Python for <site-agent>: Pyodide, then the pysite_agent wheel and its dependencies.
//
// Default source: the self-hosted bundle written by `python -m pysite_agent bundle OUT`, where
// this file is OUT/web/boot.js and Pyodide with the wheels and their lock is OUT/pyodide/.
// A CDN works as configuration only, e.g.
//   bootPython({ indexURL: "https://cdn.jsdelivr.net/pyodide/v0.29.x/full/" })
// (then packages missing from that CDN's lock, such as pysite-agent, come from PyPI through
// micropip). Nothing here reaches a third party unless the page configures it.

/**
 * @typedef {object} BootProgress
 * @property {"runtime" | "packages" | "import"} phase  what is happening now
 * @property {number} loaded  steps of this phase done so far (packages: wheels installed)
 * @property {number} [total]  steps of this phase in all, when known
 */

/**
 * Start Pyodide (or use a running one), install pysite_agent and import it.
 *
 * Steps, each reported through `onProgress`:
 * 1. `runtime`: `loadPyodide` imported from `${indexURL}pyodide.mjs`, with the lock at
 *    `lockFileURL` (fetched once here). Skipped when the page hands in `pyodide`.
 * 2. `packages`: the names in `packages` (and their dependencies) with `pyodide.loadPackage`
 *    from the lock: every wheel is checked against the lock's sha256. This measured faster
 *    than micropip (docs/bundle.md). Names the lock does not list are installed with micropip.
 *    With a page's own `pyodide` (e.g. PyScript): if its lock lists the packages (it was
 *    started from this bundle), the same; otherwise one micropip transaction installs what
 *    its lock lists by name and the rest from this bundle's wheels by URL.
 * 3. `import`: `import pysite_agent`.
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
 * @param {(progress: BootProgress) => void} [options.onProgress]  progress callback;
 *   an exception it throws is logged and ignored.
 * @param {AbortSignal} [options.signal]  aborts between steps (and the lock's fetch); the
 *   promise then rejects with `signal.reason`.
 * @returns {Promise<any>} the Pyodide instance, with pysite_agent imported.
 */
export async function bootPython({
  indexURL,
  lockFileURL,
  pyodide: existing,
  packages,
  onProgress,
  signal,
} = {}) {
  const base = folderURL(indexURL ?? new URL("../pyodide/", import.meta.url));
  const lockURL = new URL(lockFileURL ?? "pyodide-lock.json", base).href;
  const wanted = packages ?? ["pysite-agent"];
  const report = (progress) => {
    if (!onProgress) return;
    try {
      onProgress(progress);
    } catch (error) {
      console.error("bootPython: onProgress failed", error);
    }
  };
  signal?.throwIfAborted();

  let lock = null;
  let pyodide = existing;
  if (!pyodide) {
    report({ phase: "runtime", loaded: 0, total: 1 });
    const [module, lockContents] = await Promise.all([
      import(new URL("pyodide.mjs", base).href),
      fetchLock(lockURL, signal, true),
    ]);
    lock = lockContents;
    signal?.throwIfAborted();
    pyodide = await module.loadPyodide({
      indexURL: base,
      lockFileContents: lock,
      packageBaseUrl: new URL(".", lockURL).href,
    });
    signal?.throwIfAborted();
    report({ phase: "runtime", loaded: 1, total: 1 });
  } else {
    lock = await fetchLock(lockURL, signal, false);
    signal?.throwIfAborted();
  }

  if (existing) {
    await installWithMicropip(pyodide, wanted, lock, lockURL, report, signal);
  } else {
    await installFromLock(pyodide, wanted, lock, report, signal);
  }
  signal?.throwIfAborted();

  report({ phase: "import", loaded: 0, total: 1 });
  pyodide.pyimport("pysite_agent").destroy?.();
  report({ phase: "import", loaded: 1, total: 1 });
  return pyodide;
}

function folderURL(url) {
  const href = new URL(String(url), globalThis.location?.href).href;
  return href.endsWith("/") ? href : `${href}/`;
}

async function fetchLock(url, signal, required) {
  try {
    const response = await fetch(url, { signal });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.json();
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

async function installFromLock(pyodide, wanted, lock, report, signal) {
  const inLock = [];
  const others = [];
  for (const item of wanted) {
    const name = canonical(item);
    if (!item.endsWith(".whl") && lock.packages?.[name]) inLock.push(name);
    else others.push(item);
  }
  const names = closure(lock, inLock);
  const total = names.length + others.length;
  report({ phase: "packages", loaded: 0, total });
  if (names.length) await loadPackages(pyodide, names);
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
    return installFromLock(pyodide, wanted, own, report, signal);
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
