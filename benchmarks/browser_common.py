"""Shared plumbing for the ``benchmarks/browser_*.py`` scripts (not a benchmark itself).

Each benchmark builds the self-hosted bundle from the working tree (``dist/bench-bundle``),
serves it with ``examples/`` exactly as ``python -m pysite_agent demo`` does (loopback, a free
port), and drives the system Chromium (``$CHROMIUM_BIN``, default ``/usr/bin/chromium``) with
Playwright. Results are printed and written as JSON to ``benchmarks/results/`` (git-ignored).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pysite_agent.bundle import build_bundle  # noqa: E402
from pysite_agent.cli.demo import DemoServer  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RESULTS = REPO / "benchmarks" / "results"
#: The stored memory snapshot's bytes, base64 (the element's IndexedDB entry,
#: web/runtime/snapshot.js).
TAKE_SNAPSHOT = """async () => {
  const db = await new Promise((resolve, reject) => {
    const r = indexedDB.open('pysite-agent-snapshot', 1);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const buffer = await new Promise((resolve, reject) => {
    const store = db.transaction('bytes').objectStore('bytes');
    const r = store.getAll();
    r.onsuccess = () => resolve(r.result[0]);
    r.onerror = () => reject(r.error);
  });
  db.close();
  const bytes = new Uint8Array(buffer);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}"""


def bundle() -> Path:
    """The bundle built from the working tree (from the download cache: no network)."""
    return build_bundle(REPO / "dist" / "bench-bundle", progress=lambda _m: None).out_dir


@contextmanager
def site(cache_control: str = "no-cache") -> Iterator[DemoServer]:
    """The demo site (bundle + examples) on a free loopback port."""
    server = DemoServer([bundle(), REPO / "examples"], port=0, cache_control=cache_control).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def chromium(native: bool = False) -> Iterator[Any]:
    """Headless Chromium (``native``: with ``--enable-features=WebMCP``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        args = FLAGS + (["--enable-features=WebMCP"] if native else [])
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_1m": load[0] if load else None,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **data}, indent=1) + "\n")
    return path
