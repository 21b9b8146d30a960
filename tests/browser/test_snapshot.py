"""Warm start from a memory snapshot (``web/runtime/snapshot.js`` through
``web/runtime/boot.js``), in Chromium.

One page per module and lane on the demo site (bundle + examples) with an overlay folder in
front of it, so a test can change a bundle file (the lock) without rebuilding. The tests share
the origin's IndexedDB and run in file order; each one first puts the store in the state
it needs. A boot reports its path (``used``, ``made``, ``stale``, ``refused``, ``absent``)
through ``onSnapshot``, the ``runtime`` progress report and the ``site-agent:snapshot``
performance mark; every test checks that Python works afterwards, whichever path was taken.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from element_support import EL, RECORDER, Shop, e2e_bundle

from pysite_agent.cli.demo import DemoServer

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
PAGE = "<!doctype html><meta charset='utf-8'><title>snapshot test</title><p>snapshot test</p>"
BOOT_MS = 90_000

#: Boots Python with web/runtime/boot.js and checks it: the modules are imported, a module first
#: imported now is found (the wheels were written again after a restore), jsonschema reads
#: its metaschemas, and `js` is the page's real global scope.
BOOT = """async (options) => {
  const { bootPython } = await import('/web/runtime/boot.js');
  const infos = [];
  let progressState = null;
  window.__saved = new Promise((resolve) => {
    window.__resolveSaved = resolve;
  });
  const pyodide = await bootPython({
    ...options,
    onProgress: (p) => { if (p.snapshot) progressState = p.snapshot; },
    onSnapshot: (info) => {
      infos.push(info);
      if (info.saved !== undefined) window.__resolveSaved(info);
    },
  });
  const check = JSON.parse(pyodide.runPython(`
import json, sys
before = "pysite_agent.browser.element" in sys.modules
late = "pysite_agent.core.trace_view"
late_was_imported = late in sys.modules
__import__(late)
from jsonschema import Draft202012Validator
errors = [e.message for e in Draft202012Validator({"type": "integer"}).iter_errors("x")]
import js
json.dumps({"imported": before, "late": late_was_imported, "errors": errors,
            "title": js.document.title})
`));
  const mark = performance.getEntriesByName('site-agent:snapshot').at(-1)?.detail;
  return { info: infos[0], progressState, mark, check };
}"""

#: The element's snapshot database (web/runtime/snapshot.js), for the scripts below:
#: `snapshotDB(mode, (meta, bytes) => ...)` runs one transaction over its two object stores
#: and resolves, once it committed, to what the callback returned.
SNAPSHOT_DB = """
  const snapshotDB = async (mode, body) => {
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open('pysite-agent-snapshot', 1);
      r.onupgradeneeded = () => ['meta', 'bytes'].forEach((n) => r.result.createObjectStore(n));
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    try {
      const t = db.transaction(['meta', 'bytes'], mode);
      const out = body(t.objectStore('meta'), t.objectStore('bytes'));
      await new Promise((resolve, reject) => {
        t.oncomplete = resolve;
        t.onerror = t.onabort = () => reject(t.error);
      });
      return out;
    } finally {
      db.close();
    }
  };
"""

#: The stored entries: [{key, size (as recorded), bytes (as stored)}].
STORED = (
    "async () => {"
    + SNAPSHOT_DB
    + """
  const found = await snapshotDB('readonly', (meta, bytes) => {
    const out = [];
    meta.getAllKeys().onsuccess = ({ target }) => {
      for (const key of target.result) {
        out.push({ key, meta: meta.get(key), bytes: bytes.get(key) });
      }
    };
    return out;
  });
  return found.map(({ key, meta, bytes }) => (
    { key, size: meta.result.size, bytes: bytes.result?.byteLength ?? -1 }));
}"""
)

#: Empties the store (and nothing else).
CLEAR = (
    "async () => {"
    + SNAPSHOT_DB
    + "  await snapshotDB('readwrite', (meta, bytes) => { meta.clear(); bytes.clear(); });\n}"
)

#: Rewrites the stored entry: `how` is "truncate" (half the bytes, same size and SHA-256
#: recorded) or "garbage" (random bytes with a matching size and SHA-256, so only Pyodide can
#: refuse it).
DAMAGE = (
    "async (how) => {"
    + SNAPSHOT_DB
    + """
  const keys = await snapshotDB('readonly', (meta) => meta.getAllKeys());
  const [key] = keys.result;
  const got = await snapshotDB('readonly', (meta, bytes) => (
    { meta: meta.get(key), bytes: bytes.get(key) }));
  let bytes = new Uint8Array(got.bytes.result);
  const info = { ...got.meta.result };
  if (how === 'truncate') {
    bytes = bytes.slice(0, bytes.length >> 1);
  } else {
    bytes = new Uint8Array(4 << 20);
    for (let i = 0; i < bytes.length; i += 65536) {
      crypto.getRandomValues(bytes.subarray(i, i + 65536));
    }
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    info.size = bytes.length;
    info.sha256 = Array.from(new Uint8Array(digest),
      (b) => b.toString(16).padStart(2, '0')).join('');
  }
  await snapshotDB('readwrite', (meta, store) => {
    meta.put(info, key);
    store.put(bytes.buffer, key);
  });
}"""
)

WORKS = {
    "imported": True,
    "late": False,
    "errors": ["'x' is not of type 'integer'"],
    "title": "snapshot test",
}


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("snapshot-overlay")
    (folder / "snapshot-test.html").write_text(PAGE, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def site(overlay: Path) -> Iterator[DemoServer]:
    server = DemoServer([overlay, e2e_bundle(), REPO / "examples"], port=0).start()
    yield server
    server.stop()


def boot(page: Any, site: DemoServer, **options: Any) -> dict[str, Any]:
    """A fresh document, then bootPython(options); waits until a new snapshot is stored."""
    page.goto(site.url + "snapshot-test.html")
    result: dict[str, Any] = page.evaluate(BOOT, options)
    assert result["check"] == WORKS, result
    assert result["mark"] == result["info"], "the mark carries the same report"
    assert result["progressState"] == result["info"]["state"]
    if result["info"]["made"]:
        saved = page.evaluate("window.__saved")
        assert saved["saved"] is True, saved
        result["saved"] = saved
    return result


#: An entry as versions before IndexedDB stored it (Cache Storage, 1 MB).
OLD_CACHE_ENTRY = """async () => {
  const cache = await caches.open('pysite-agent-snapshot');
  await cache.put('/.pysite-agent-snapshot/old', new Response(new Uint8Array(1 << 20)));
}"""


def stored(page: Any) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = page.evaluate(STORED)
    return entries


def ensure_snapshot(page: Any, site: DemoServer) -> None:
    """The store holds a good snapshot of the current bundle."""
    state = boot(page, site)["info"]["state"]
    assert state in {"used", "made", "stale"}
    assert len(stored(page)) == 1


def test_first_start_makes_a_snapshot_and_the_second_uses_it(page: Any, site: DemoServer) -> None:
    page.goto(site.url + "snapshot-test.html")
    page.evaluate(CLEAR)
    page.evaluate(OLD_CACHE_ENTRY)  # what an earlier version kept in Cache Storage

    first = boot(page, site)
    assert first["info"] == {"state": "made", "made": True}
    assert first["saved"]["bytes"] > 20_000_000  # ~31 MB of wasm memory
    [entry] = stored(page)
    assert entry["size"] == entry["bytes"] == first["saved"]["bytes"]
    assert page.evaluate("caches.has('pysite-agent-snapshot')") is False  # its quota freed

    second = boot(page, site)
    assert second["info"] == {"state": "used", "made": False}
    assert stored(page) == [entry]


def test_the_element_starts_from_the_snapshot_and_runs_tools(page: Any, site: DemoServer) -> None:
    """The demo shop on the same origin: a visitor's run in a runtime restored from memory."""
    ensure_snapshot(page, site)
    page.add_init_script(RECORDER)
    shop = Shop(page, site.url).open()
    detail = page.evaluate("performance.getEntriesByName('site-agent:snapshot')[0].detail")
    assert detail == {"state": "used", "made": False}
    shop.reset()
    result = shop.ask_and_wait("find red mugs")
    assert result["status"] == "answered"
    assert "Red enamel mug" in result["answer"]
    shop.ask("add two mugs to my cart")
    shop.card().locator(".allow").click()
    shop.wait_cart(2)
    assert page.evaluate(f"{EL}.state") == "ready"


def test_a_snapshot_of_another_bundle_is_stale_deleted_and_replaced(
    page: Any, site: DemoServer, overlay: Path
) -> None:
    ensure_snapshot(page, site)
    [before] = stored(page)
    # The bundle changes: here its lock (which names every wheel's sha256) gets new bytes.
    lock = json.loads((e2e_bundle() / "pyodide" / "pyodide-lock.json").read_text("utf-8"))
    changed = overlay / "pyodide" / "pyodide-lock.json"
    changed.parent.mkdir(exist_ok=True)
    changed.write_text(json.dumps(lock, indent=2), encoding="utf-8")
    try:
        result = boot(page, site)
        assert result["info"]["state"] == "stale"
        assert result["info"]["made"] is True
        [after] = stored(page)
        assert after["key"] != before["key"]  # the old one is gone, the new one is stored
        assert boot(page, site)["info"]["state"] == "used"
    finally:
        shutil.rmtree(overlay / "pyodide")


@pytest.mark.parametrize(
    ("how", "reason"),
    [("truncate", "truncated"), ("garbage", "Pyodide: Snapshot has invalid magic number")],
)
def test_a_damaged_snapshot_is_refused_and_python_starts_normally(
    page: Any, site: DemoServer, how: str, reason: str
) -> None:
    ensure_snapshot(page, site)
    page.evaluate(DAMAGE, how)
    result = boot(page, site)
    assert result["info"]["state"] == "refused"
    assert result["info"]["reason"].startswith(reason), result["info"]
    assert result["info"]["made"] is True  # a good one replaces it
    assert len(stored(page)) == 1


def test_another_pyodide_version_is_absent(page: Any, site: DemoServer) -> None:
    page.goto(site.url + "snapshot-test.html")
    reasons = page.evaluate(
        """async () => {
        const s = await import('/web/runtime/snapshot.js');
        const real = await import('/pyodide/pyodide.mjs');
        return [s.unsupported({ version: '0.29.5', loadPyodide() {} }), s.unsupported(real)];
    }"""
    )
    assert reasons[0].startswith("Pyodide 0.29.5")
    assert reasons[1] is None or "IndexedDB" in reasons[1]


def test_snapshot_false_starts_normally(page: Any, site: DemoServer) -> None:
    result = boot(page, site, snapshot=False)
    assert result["info"] == {"state": "off", "made": False, "reason": "snapshot: false"}


def test_a_site_can_turn_snapshots_off(browser: Any, site: DemoServer) -> None:
    """`window.pysiteAgent = {snapshot: false}` (or configureRuntime): nothing is stored."""
    context = browser.new_context()
    context.add_init_script("window.pysiteAgent = { snapshot: false };")
    page = context.new_page()
    try:
        Shop(page, site.url).open()
        detail = page.evaluate("performance.getEntriesByName('site-agent:snapshot')[0].detail")
        assert detail == {"state": "off", "made": False, "reason": "snapshot: false"}
        assert stored(page) == []
    finally:
        context.close()


def test_a_failed_write_leaves_the_start_working(page: Any, site: DemoServer) -> None:
    """IndexedDB refuses the write (as with QuotaExceededError): `saved: false` with the
    reason, Python works, and no partial entry is left (one transaction, aborted)."""
    page.goto(site.url + "snapshot-test.html")
    page.evaluate(CLEAR)
    page.evaluate(
        """() => {
        IDBObjectStore.prototype.put = function () {
          throw new DOMException('the quota is full (test)', 'QuotaExceededError');
        };
    }"""
    )
    result = page.evaluate(BOOT, {"snapshotMaker": "inline"})  # stored by this page
    assert result["check"] == WORKS, result
    assert result["info"] == {"state": "made", "made": True}
    saved = page.evaluate("window.__saved")
    assert saved == {
        **result["info"],
        "saved": False,
        "reason": "storing: the quota is full (test)",
    }
    assert stored(page) == []


def test_without_indexeddb_the_api_is_absent(page: Any, site: DemoServer) -> None:
    """As in a private mode without IndexedDB: a normal start, nothing stored."""
    page.goto(site.url + "snapshot-test.html")
    page.evaluate(CLEAR)
    page.add_init_script("Object.defineProperty(window, 'indexedDB', { value: undefined })")
    result = boot(page, site)  # (last in this module: the init script stays on the page)
    assert result["info"]["state"] == "absent"
    assert "IndexedDB" in result["info"]["reason"]
    assert result["info"]["made"] is False
