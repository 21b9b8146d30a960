"""Ship a memory snapshot in the bundle, or make one per origin? A first visit both ways, per
link speed, in one run.

Headless Chromium, an empty HTTP cache per run (a fresh context), the link emulated through the
DevTools protocol (``Network.emulateNetworkConditions``: ``--mbit`` down, 20 ms round trip;
``0`` means loopback, no emulation). The page is a bare one on the demo server (the bundle's
precompressed copies sent as the browser asks), Python on its main thread, so both ways are
timed alike from the first fetch to Python with the agent's modules imported:

- ``normal``: what a first visit does today: ``loadPyodide()``, the ``pysite-agent`` wheels
  (``loadPackage``), the element's imports (``web/runtime/boot.js``'s defaults);
- ``shipped``: ``loadPyodide({_loadSnapshot})`` from a snapshot file next to the bundle
  (``snapshot.bin``, with ``.gz`` and ``.br`` copies as the bundle writes for its other files),
  fetched beside Pyodide's own files, plus the wheels (a snapshot holds memory, not files:
  boot.js writes them again after a restore).

The snapshot is the one the element makes on a first visit of the same bundle (taken from the
origin's Cache Storage). The bytes each way are counted where they leave the server. Medians
of ``--runs`` (default 2); printed and written to ``benchmarks/results/ship_snapshot.json``.

Usage: python benchmarks/ship_snapshot.py [--runs 2] [--mbit 0,100,50,25,10]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from browser_common import REPO, TAKE_SNAPSHOT, bundle, chromium, median, save

from pysite_agent.cli import demo as _demo
from pysite_agent.cli.demo import DemoServer

IMPORTS = [
    "pysite_agent",
    "pysite_agent.browser.element",
    "pysite_agent.browser.event_loop",
    "pysite_agent.tools.model_context",
]
EMPTY_PAGE = "<!doctype html><meta charset='utf-8'><title>bare</title><p>bare"

NORMAL = """async (imports) => {
  const t0 = performance.now();
  const { loadPyodide } = await import('/pyodide/pyodide.mjs');
  const pyodide = await loadPyodide({ indexURL: new URL('/pyodide/', location.href).href });
  await pyodide.loadPackage(['pysite-agent'], { messageCallback: () => {} });
  for (const name of imports) pyodide.pyimport(name);
  return performance.now() - t0;
}"""

SHIPPED = """async (imports) => {
  const t0 = performance.now();
  const base = new URL('/pyodide/', location.href).href;
  const lock = fetch(base + 'pyodide-lock.json').then((r) => r.json());
  const wheels = lock.then((l) => {
    const names = new Set();
    const visit = (n) => {
      const key = n.toLowerCase().replace(/[-_.]+/g, '-');
      if (names.has(key)) return;
      names.add(key);
      l.packages[key].depends.forEach(visit);
    };
    visit('pysite-agent');
    return Promise.all([...names].map(async (key) => {
      const file = l.packages[key].file_name;
      return [file, new Uint8Array(await (await fetch(base + file)).arrayBuffer())];
    }));
  });
  const [{ loadPyodide }, bytes] = await Promise.all([
    import(base + 'pyodide.mjs'),
    fetch('/shipped/snapshot.bin').then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b)),
  ]);
  const pyodide = await loadPyodide({ indexURL: base, _loadSnapshot: bytes });
  for (const [name, data] of await wheels) pyodide.FS.writeFile('/tmp/' + name, data);
  const names = JSON.stringify(imports);
  const ok = pyodide.runPython(`import sys; all(m in sys.modules for m in ${names})`);
  return { ms: performance.now() - t0, ok };
}"""

_sent = {"bytes": 0}
_lock = threading.Lock()
_copyfile = _demo._Handler.copyfile


def _counting_copyfile(self: Any, source: Any, outputfile: Any) -> None:
    with _lock:
        _sent["bytes"] += os.fstat(source.fileno()).st_size
    _copyfile(self, source, outputfile)


_demo._Handler.copyfile = _counting_copyfile  # type: ignore[method-assign]


def make_snapshot(browser: Any, server: DemoServer) -> bytes:
    """The snapshot the element makes on a first visit of this bundle."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url)
    page.wait_for_selector("html[data-ready=true]")
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "performance.getEntriesByName('site-agent:snapshot-saved').length > 0", timeout=240_000
    )
    data = base64.b64decode(page.evaluate(TAKE_SNAPSHOT))
    context.close()
    return data


def one_visit(browser: Any, server: DemoServer, mbit: float, way: str) -> dict[str, float]:
    context = browser.new_context()
    page = context.new_page()
    page.route(
        "**/bare.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=EMPTY_PAGE),
    )
    page.goto(server.url + "bare.html")
    if mbit:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {
                "offline": False,
                "latency": 20,
                "downloadThroughput": mbit * 1e6 / 8,
                "uploadThroughput": mbit * 1e6 / 8,
            },
        )
    with _lock:
        _sent["bytes"] = 0
    if way == "normal":
        ms = float(page.evaluate(NORMAL, IMPORTS))
    else:
        result = page.evaluate(SHIPPED, IMPORTS)
        assert result["ok"] is True, result
        ms = float(result["ms"])
    sent = _sent["bytes"]
    context.close()
    return {"ms": ms, "bytes": float(sent)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--mbit", default="0,100,50,25,10")
    args = parser.parse_args()
    speeds = [float(v) for v in args.mbit.split(",") if v.strip()]
    load_before = os.getloadavg()[0]
    root = bundle()
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="pysite-ship-") as tmp:
        shipped = Path(tmp) / "shipped"
        shipped.mkdir()
        server = DemoServer([Path(tmp), root, REPO / "examples"], port=0).start()
        try:
            with chromium() as browser:
                snapshot = make_snapshot(browser, server)
                (shipped / "snapshot.bin").write_bytes(snapshot)
                (shipped / "snapshot.bin.gz").write_bytes(gzip.compress(snapshot, 9))
                try:
                    import brotli

                    (shipped / "snapshot.bin.br").write_bytes(brotli.compress(snapshot, quality=9))
                except ImportError:
                    pass
                for _ in range(args.runs):
                    for mbit in speeds:
                        for way in ("normal", "shipped"):
                            row = one_visit(browser, server, mbit, way)
                            results.setdefault(f"{mbit:g}", {}).setdefault(way, []).append(row)
                            print(f"{mbit:g} Mbit/s {way:8} {row}", flush=True)
        finally:
            server.stop()
    load_after = os.getloadavg()[0]
    sizes = {"raw": len(snapshot), "gzip9": len(gzip.compress(snapshot, 9))}
    print(f"load average before {load_before:.1f}, after {load_after:.1f}; snapshot {sizes}")
    print(f"{'link':>10} {'normal s':>9} {'MB':>6} {'shipped s':>10} {'MB':>6}  faster")
    summary: dict[str, dict[str, float]] = {}
    for speed, ways in results.items():
        row = {
            f"{way} {key}": median([r[key] for r in runs])
            for way, runs in ways.items()
            for key in ("ms", "bytes")
        }
        summary[speed] = row
        label = "loopback" if speed == "0" else f"{speed} Mbit/s"
        faster = "shipped" if row["shipped ms"] < row["normal ms"] else "normal"
        print(
            f"{label:>10} {row['normal ms'] / 1e3:9.2f} {row['normal bytes'] / 1e6:6.1f} "
            f"{row['shipped ms'] / 1e3:10.2f} {row['shipped bytes'] / 1e6:6.1f}  {faster}"
        )
    save(
        "ship_snapshot",
        {
            "runs": args.runs,
            "load_average": {"before": load_before, "after": load_after},
            "snapshot_bytes": sizes,
            "summary": summary,
            "samples": results,
        },
    )


if __name__ == "__main__":
    main()
