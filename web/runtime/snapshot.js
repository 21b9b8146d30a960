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
// Storage: IndexedDB (a window or a worker), database `pysite-agent-snapshot`, one entry per
// origin, named by the key (a hash of Pyodide's version, the bundle's lock and what was
// imported): its size, SHA-256 and Pyodide version in the object store `meta`, its bytes as an
// ArrayBuffer in `bytes`, written in one transaction. IndexedDB, not Cache Storage: WebKitGTK
// 2.50 empties an origin's Cache Storage when the same page is loaded again, and keeps its
// IndexedDB; an ArrayBuffer, not a Blob: WebKit refused to store a Blob there ("Error
// preparing Blob/File data") (benchmarks/cache_reload_probe.py, docs/performance.md "The
// snapshot in WebKit"). Another key found there is stale and deleted; so is the Cache Storage
// entry of earlier versions. Each entry's size and SHA-256 are checked before use. States
// (reported by boot.js):
//   used     started from a stored snapshot
//   made     none stored: a normal start; a snapshot was taken and is stored when idle
//   stale    the stored one was for another bundle or Pyodide: deleted, normal start, made anew
//   refused  the stored one was corrupt or truncated, or Pyodide refused to load or make one:
//            deleted, normal start (and made anew when possible)
//   absent   no snapshot API here (another Pyodide version, no IndexedDB or WebCrypto)
//   off      not wanted: a running Pyodide was handed in (PyScript), packages outside the
//            lock, or `snapshot: false`

/** The Pyodide version whose private snapshot API this module was written against. */
export const PYODIDE_VERSION = '314.0.7';
/** Bump when what boot.js puts into a snapshot changes (paths, imports, this format). */
const FORMAT = 1;
const DB = 'pysite-agent-snapshot';
const DB_VERSION = 1;
/** The Cache Storage of earlier versions (before IndexedDB): deleted when a snapshot is stored. */
const OLD_CACHE = 'pysite-agent-snapshot';
/** How long opening the database may take before a start goes on without a snapshot. */
const OPEN_MS = 10_000;

/**
 * Why snapshots cannot be used here, or null when they can.
 * @param {{version?: string} | null} pyodideModule  the module imported from pyodide.mjs
 * @param {boolean} [storageOnly]  check only this realm's IndexedDB and WebCrypto
 * @returns {string | null}
 */
export function unsupported(pyodideModule, storageOnly = false) {
  if (!storageOnly && pyodideModule?.version !== PYODIDE_VERSION) {
    return `Pyodide ${pyodideModule?.version} (snapshots are wired for ${PYODIDE_VERSION})`;
  }
  if (!storageOnly && typeof pyodideModule.loadPyodide !== 'function') return 'no loadPyodide';
  if (!globalThis.indexedDB?.open) return 'no IndexedDB (a private mode?)';
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

/** The database, opened (created on first use); rejects after OPEN_MS without an answer. */
function openDatabase() {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`IndexedDB did not open within ${OPEN_MS} ms`)), OPEN_MS);
    let request;
    try {
      request = indexedDB.open(DB, DB_VERSION);
    } catch (error) {
      clearTimeout(timer);
      reject(error);
      return;
    }
    request.onupgradeneeded = () => {
      for (const name of ['meta', 'bytes']) {
        if (!request.result.objectStoreNames.contains(name)) request.result.createObjectStore(name);
      }
    };
    request.onsuccess = () => {
      clearTimeout(timer);
      const db = request.result;
      db.onversionchange = () => db.close(); // never block a later version's upgrade
      resolve(db);
    };
    request.onerror = () => {
      clearTimeout(timer);
      reject(request.error ?? new Error('IndexedDB did not open'));
    };
    request.onblocked = () => {}; // another tab holds an older version: wait (bounded by the timer)
  });
}

/**
 * Run `body(stores)` in one transaction over `meta` and `bytes`, then close the database.
 * Resolves to what `body` returned, once the transaction committed (a request it returned
 * has its `result` by then); rejects when the transaction fails or aborts.
 */
async function withStores(mode, body) {
  const db = await openDatabase();
  try {
    const transaction = db.transaction(['meta', 'bytes'], mode);
    const stores = { meta: transaction.objectStore('meta'), bytes: transaction.objectStore('bytes') };
    let out;
    try {
      out = body(stores);
    } catch (error) {
      transaction.abort(); // nothing of it is kept (e.g. the clears before a put that threw)
      throw error;
    }
    await new Promise((resolve, reject) => {
      const fail = () => reject(transaction.error ?? new Error('the IndexedDB transaction was aborted'));
      transaction.oncomplete = resolve;
      transaction.onerror = fail;
      transaction.onabort = fail;
    });
    return out;
  } finally {
    db.close();
  }
}

/**
 * Read the stored snapshot for `key`.
 * @returns {Promise<{state: "found", bytes: Uint8Array} | {state: "missing" | "stale" | "refused", reason?: string}>}
 *   stale entries (other keys) and bad entries are deleted before this resolves.
 */
export async function readSnapshot(key) {
  let got;
  try {
    got = await withStores('readwrite', ({ meta, bytes }) => {
      const out = { others: 0 };
      meta.getAllKeys().onsuccess = ({ target }) => {
        for (const other of target.result) {
          if (other === key) continue;
          out.others += 1;
          meta.delete(other);
          bytes.delete(other);
        }
      };
      meta.get(key).onsuccess = ({ target }) => { out.meta = target.result; };
      bytes.get(key).onsuccess = ({ target }) => { out.bytes = target.result; };
      return out;
    });
  } catch (error) {
    return { state: 'missing', reason: `IndexedDB: ${error?.message ?? error}` };
  }
  if (got.meta === undefined && got.bytes === undefined) {
    return got.others ? { state: 'stale', reason: 'the bundle or Pyodide changed' } : { state: 'missing' };
  }
  try {
    if (!got.meta || !(got.bytes instanceof ArrayBuffer)) throw new Error('incomplete: its size or its bytes are missing');
    const bytes = new Uint8Array(got.bytes);
    if (bytes.length !== got.meta.size) throw new Error(`truncated: ${bytes.length} of ${got.meta.size} bytes`);
    if ((await sha256(bytes)) !== got.meta.sha256) throw new Error('corrupt: SHA-256 differs');
    return { state: 'found', bytes };
  } catch (error) {
    await deleteSnapshots();
    return { state: 'refused', reason: error?.message ?? String(error) };
  }
}

/**
 * Store `bytes` as the snapshot for `key` (replacing any other, and deleting the Cache
 * Storage entry of earlier versions). Resolves to its size; rejects when IndexedDB refuses
 * (e.g. QuotaExceededError), leaving no partial entry (one transaction).
 */
export async function storeSnapshot(key, bytes) {
  const digest = await sha256(bytes);
  const buffer = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? bytes.buffer
    : bytes.slice().buffer;
  await withStores('readwrite', ({ meta, bytes: store }) => {
    meta.clear();
    store.clear();
    meta.put({ size: bytes.length, sha256: digest, pyodide: PYODIDE_VERSION }, key);
    store.put(buffer, key);
  });
  await deleteOldCache();
  return bytes.length;
}

/**
 * Read back, in this realm, the entry another realm (the snapshot worker) stored: resolves to
 * its size, or rejects when no entry of `bytes` bytes is visible here. With Cache Storage,
 * WebKitGTK 2.50 kept a worker's entry across a navigation only when a page had matched it
 * before the worker ended (docs/browsers.md); in every engine it makes `saved` mean "visible
 * to the next page". Reads the entry's size, not its 31 MB.
 */
export async function confirmStored(bytes) {
  const request = await withStores('readonly', ({ meta }) => meta.getAll());
  if (request.result.some((entry) => entry?.size === bytes)) return bytes;
  throw new Error('the stored entry is not visible to the page');
}

/** Delete every stored snapshot of this origin (and the Cache Storage of earlier versions). */
export async function deleteSnapshots() {
  try {
    await withStores('readwrite', ({ meta, bytes }) => {
      meta.clear();
      bytes.clear();
    });
  } catch {}
  await deleteOldCache();
}

async function deleteOldCache() {
  try {
    await globalThis.caches?.delete(OLD_CACHE);
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
