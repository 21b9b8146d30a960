"""Warm start from a memory snapshot (``web/runtime/snapshot.js`` through
``web/runtime/boot.js``), in Chromium.

One page per module and lane on the demo site (bundle + examples) with an overlay folder in
front of it, so a test can change a bundle file (the lock) without rebuilding. The tests share
the origin's Cache Storage and run in file order; each one first puts the store in the state
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

STORED = """async () => {
  const cache = await caches.open('pysite-agent-snapshot');
  const out = [];
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    out.push({ url: request.url, size: Number(response.headers.get('x-snapshot-size')),
               bytes: (await response.arrayBuffer()).byteLength });
  }
  return out;
}"""

#: Rewrites the stored entry: `how` is "truncate" (half the bytes, same headers) or
#: "garbage" (random bytes with a matching size and SHA-256, so only Pyodide can refuse it).
DAMAGE = """async (how) => {
  const cache = await caches.open('pysite-agent-snapshot');
  const [request] = await cache.keys();
  const response = await cache.match(request);
  let bytes = new Uint8Array(await response.arrayBuffer());
  const headers = new Headers(response.headers);
  if (how === 'truncate') {
    bytes = bytes.slice(0, bytes.length >> 1);
  } else {
    bytes = new Uint8Array(4 << 20);
    for (let i = 0; i < bytes.length; i += 65536) {
      crypto.getRandomValues(bytes.subarray(i, i + 65536));
    }
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    headers.set('x-snapshot-size', String(bytes.length));
    headers.set('x-snapshot-sha256',
      Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join(''));
  }
  await cache.put(request, new Response(bytes, { headers }));
}"""

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
    page.evaluate("caches.delete('pysite-agent-snapshot')")

    first = boot(page, site)
    assert first["info"] == {"state": "made", "made": True}
    assert first["saved"]["bytes"] > 20_000_000  # ~31 MB of wasm memory
    [entry] = stored(page)
    assert entry["size"] == entry["bytes"] == first["saved"]["bytes"]

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
        assert after["url"] != before["url"]  # the old one is gone, the new one is stored
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
    assert reasons[1] is None or "Cache Storage" in reasons[1]


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


def test_without_cache_storage_the_api_is_absent(page: Any, site: DemoServer) -> None:
    page.goto(site.url + "snapshot-test.html")
    page.evaluate("caches.delete('pysite-agent-snapshot')")
    page.add_init_script("Object.defineProperty(window, 'caches', { value: undefined })")
    result = boot(page, site)  # (last in this module: the init script stays on the page)
    assert result["info"]["state"] == "absent"
    assert "Cache Storage" in result["info"]["reason"]
    assert result["info"]["made"] is False
