// Warm start: a memory snapshot of Python with pysite_agent imported, kept per origin.
//
// The only file that touches Pyodide's private snapshot API, which is undocumented and may
// change in any release: it is used with the Pyodide version below and no other.
//   loadPyodide({ _makeSnapshot: true })   start a runtime that can be snapshotted
//   pyodide.makeMemorySnapshot()          -> Uint8Array (the wasm memory and JS references)
//   loadPyodide({ _loadSnapshot: bytes })  start from it
// Facts this relies on (measured with 314.0.7):
// - the snapshot holds the wasm memory, not the file system: files Python reads later must be
//   written again after a restore (boot.js keeps the wheels on sys.path as zip files);
// - it refuses ("Unexpected hiwire entry") once Python holds JS objects, e.g. after
//   `loadPackage`: take it right after the imports, before anything touches the page;
// - a runtime started with `_makeSnapshot` sees `js` (the global scope) through a recording
//   Proxy, on which accessors such as `js.document` throw "Illegal invocation": after the
//   snapshot, `releaseRecorder` gives Python the real global scope again.
//
// Storage: Cache Storage (a window or a worker, secure contexts only), one entry per origin,
// named by the key (a hash of Pyodide's version, the bundle's lock and what was imported).
// Another key found there is stale and deleted. Each entry carries its size and SHA-256,
// checked before use. States (reported by boot.js):
//   used     started from a stored snapshot
//   made     none stored: a normal start; a snapshot was taken and is stored when idle
//   stale    the stored one was for another bundle or Pyodide: deleted, normal start, made anew
//   refused  the stored one was corrupt or truncated, or Pyodide refused to load or make one:
//            deleted, normal start (and made anew when possible)
//   absent   no snapshot API here (another Pyodide version, no Cache Storage or WebCrypto)
//   off      not wanted: a running Pyodide was handed in (PyScript), packages outside the
//            lock, or `snapshot: false`

/** The Pyodide version whose private snapshot API this module was written against. */
export const PYODIDE_VERSION = '314.0.7';
/** Bump when what boot.js puts into a snapshot changes (paths, imports, this format). */
const FORMAT = 1;
const CACHE = 'pysite-agent-snapshot';

/**
 * Why snapshots cannot be used here, or null when they can.
 * @param {{version?: string} | null} pyodideModule  the module imported from pyodide.mjs
 * @param {boolean} [storageOnly]  check only this realm's Cache Storage and WebCrypto
 * @returns {string | null}
 */
export function unsupported(pyodideModule, storageOnly = false) {
  if (!storageOnly && pyodideModule?.version !== PYODIDE_VERSION) {
    return `Pyodide ${pyodideModule?.version} (snapshots are wired for ${PYODIDE_VERSION})`;
  }
  if (!storageOnly && typeof pyodideModule.loadPyodide !== 'function') return 'no loadPyodide';
  if (!globalThis.caches?.open) return 'no Cache Storage (not a secure context?)';
  if (!globalThis.crypto?.subtle?.digest) return 'no WebCrypto';
  return null;
}

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

async function sha256(bytes) {
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

/**
 * The key a snapshot is stored under: SHA-256 (hex) of the format, Pyodide's version, the
 * lock's exact text (it lists every wheel's sha256, so any bundle change changes it) and the
 * modules imported before the snapshot.
 */
export async function snapshotKey(lockText, imports) {
  const text = JSON.stringify([FORMAT, PYODIDE_VERSION, imports, lockText]);
  return sha256(new TextEncoder().encode(text));
}

function entryURL(key) {
  // A name in this origin's Cache Storage; never fetched.
  return new URL(`/.pysite-agent-snapshot/${key}`, globalThis.location?.href).href;
}

/**
 * Read the stored snapshot for `key`.
 * @returns {Promise<{state: "found", bytes: Uint8Array} | {state: "missing" | "stale" | "refused", reason?: string}>}
 *   stale entries (other keys) and bad entries are deleted before this resolves.
 */
export async function readSnapshot(key) {
  let cache;
  try {
    cache = await caches.open(CACHE);
  } catch (error) {
    return { state: 'missing', reason: `Cache Storage: ${error?.message ?? error}` };
  }
  const url = entryURL(key);
  const others = (await cache.keys()).filter((request) => request.url !== url);
  await Promise.all(others.map((request) => cache.delete(request)));
  const response = await cache.match(url);
  if (!response) {
    return others.length ? { state: 'stale', reason: 'the bundle or Pyodide changed' } : { state: 'missing' };
  }
  try {
    const bytes = new Uint8Array(await response.arrayBuffer());
    const size = Number(response.headers.get('x-snapshot-size'));
    if (bytes.length !== size) throw new Error(`truncated: ${bytes.length} of ${size} bytes`);
    if ((await sha256(bytes)) !== response.headers.get('x-snapshot-sha256')) throw new Error('corrupt: SHA-256 differs');
    return { state: 'found', bytes };
  } catch (error) {
    await deleteSnapshots();
    return { state: 'refused', reason: error?.message ?? String(error) };
  }
}

/** Store `bytes` as the snapshot for `key` (replacing any other). Resolves to its size. */
export async function storeSnapshot(key, bytes) {
  const digest = await sha256(bytes);
  const cache = await caches.open(CACHE);
  const url = entryURL(key);
  for (const request of await cache.keys()) if (request.url !== url) await cache.delete(request);
  await cache.put(url, new Response(bytes, {
    headers: {
      'content-type': 'application/octet-stream',
      'x-snapshot-size': String(bytes.length),
      'x-snapshot-sha256': digest,
      'x-snapshot-pyodide': PYODIDE_VERSION,
    },
  }));
  return bytes.length;
}

/**
 * Read back, in this realm, the entry another realm (the snapshot worker) stored: resolves to
 * its size, or rejects when no entry of `bytes` bytes is visible here. WebKitGTK 2.50 kept a
 * worker's entry across a reload only when a page had matched it before the worker ended
 * (docs/browsers.md); in every engine it makes `saved` mean "visible to the next page".
 */
export async function confirmStored(bytes) {
  const cache = await caches.open(CACHE);
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    if (Number(response?.headers.get('x-snapshot-size')) === bytes) {
      await response.arrayBuffer();
      return bytes;
    }
  }
  throw new Error('the stored entry is not visible to the page');
}

/** Delete every stored snapshot of this origin. */
export async function deleteSnapshots() {
  try {
    await caches.delete(CACHE);
  } catch {}
}

/** Options for loadPyodide that start from `bytes`, or that allow taking a snapshot. */
export function loadOptions(bytes) {
  return bytes ? { _loadSnapshot: bytes } : { _makeSnapshot: true };
}

/**
 * Take the snapshot of a runtime started with `loadOptions(null)`. Synchronous (it copies the
 * wasm memory, ~31 MB). Throws when Pyodide refuses; call `releaseRecorder` either way.
 * @returns {Uint8Array}
 */
export function takeSnapshot(pyodide) {
  return pyodide.makeMemorySnapshot();
}

/**
 * After `takeSnapshot` (or its failure): give Python the real global scope as `js`, in
 * `sys.modules` and in every module that imported it, instead of the recording Proxy.
 */
export function releaseRecorder(pyodide) {
  pyodide.registerJsModule('js', globalThis);
  pyodide.runPython(`
def _pysite_agent_release():
    import sys
    old = sys.modules.pop("js", None)
    import js
    if old is not None:
        for module in list(sys.modules.values()):
            if getattr(module, "js", None) is old:
                module.js = js
_pysite_agent_release()
del _pysite_agent_release
`);
}
