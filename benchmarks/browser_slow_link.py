"""The first open of the panel on a slow mobile link: precompressed files against plain ones.

Headless Chromium opens the demo shop with an empty HTTP cache on a link emulated through the
DevTools protocol (``Network.emulateNetworkConditions``: 1.6 Mbit/s down, 750 kbit/s up,
562.5 ms round trip: DevTools' "Fast 3G"), clicks the launcher and waits until the element's
``state`` is ``ready`` (Python started, the agent configured). Two servers, both
:class:`pysite_agent.cli.demo.DemoServer` on loopback:

- ``plain``: the bundle without its ``.br``/``.gz`` copies (every file sent as it is, as the
  demo server did before it knew them);
- ``precompressed``: the bundle as built (brotli copies sent, Chromium asks for ``br``).

Bytes are counted where they leave the server (response bodies, until ``ready``), so requests
from the module worker that runs Python are included. Medians of ``--runs`` runs per server,
alternating. Results: printed and written to ``benchmarks/results/browser_slow_link.json``.

Usage: python benchmarks/browser_slow_link.py [--runs 3] [--mbit 1.6]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from browser_common import REPO, bundle, chromium, median, save

from pysite_agent.cli import demo as _demo
from pysite_agent.cli.demo import DemoServer

_sent: dict[str, Any] = {"bytes": 0, "files": {}}
_lock = threading.Lock()
_copyfile = _demo._Handler.copyfile


def _counting_copyfile(self: Any, source: Any, outputfile: Any) -> None:
    size = os.fstat(source.fileno()).st_size
    with _lock:
        _sent["bytes"] += size
        path = self.path.split("?")[0]
        _sent["files"][path] = _sent["files"].get(path, 0) + size
    _copyfile(self, source, outputfile)


_demo._Handler.copyfile = _counting_copyfile  # type: ignore[method-assign]


def plain_copy(root: Path, into: Path) -> Path:
    """``root`` without its precompressed copies."""
    target = into / "plain-bundle"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("*.br", "*.gz"))
    return target


def first_open(browser: Any, url: str, mbit: float) -> dict[str, Any]:
    context = browser.new_context()
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 562.5,
            "downloadThroughput": mbit * 1e6 / 8,
            "uploadThroughput": 750e3 / 8,
        },
    )
    with _lock:
        _sent["bytes"] = 0
        _sent["files"] = {}
    started = time.monotonic()
    page.goto(url, timeout=600_000)
    page.wait_for_selector("html[data-ready=true]", timeout=600_000)
    loaded = time.monotonic()
    page_bytes = _sent["bytes"]
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "document.querySelector('site-agent').state === 'ready'", timeout=900_000, polling=250
    )
    ready = time.monotonic()
    total = _sent["bytes"]
    twice = {p: n for p, n in _sent["files"].items() if n > 1.5 * os.path.getsize(_local(p))}
    context.close()
    return {
        "page_s": loaded - started,
        "page_bytes": page_bytes,
        "open_s": ready - loaded,
        "open_bytes": total - page_bytes,
        "total_bytes": total,
        "sent_more_than_once": twice,
    }


_roots: list[Path] = []


def _local(url_path: str) -> Path:
    """The file a URL path was served from (for the twice-sent check)."""
    for root in _roots:
        candidate = root / url_path.lstrip("/")
        if candidate.is_file():
            return candidate
    return REPO / "examples" / "demo-shop.html"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mbit", type=float, default=1.6)
    args = parser.parse_args()
    root = bundle()
    results: dict[str, list[dict[str, Any]]] = {"plain": [], "precompressed": []}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"plain": plain_copy(root, Path(tmp)), "precompressed": root}
        _roots.extend([root, REPO / "examples"])
        servers = {
            name: DemoServer([folder, REPO / "examples"], port=0).start()
            for name, folder in roots.items()
        }
        try:
            with chromium() as browser:
                for run in range(args.runs):
                    for name, server in servers.items():
                        row = first_open(browser, server.url, args.mbit)
                        results[name].append(row)
                        print(
                            f"run {run + 1} {name:13} page {row['page_s']:6.1f} s "
                            f"{row['page_bytes'] / 1e3:8.0f} kB  open {row['open_s']:6.1f} s "
                            f"{row['open_bytes'] / 1e6:6.2f} MB  sent twice: "
                            f"{sorted(row['sent_more_than_once']) or 'none'}",
                            flush=True,
                        )
        finally:
            for server in servers.values():
                server.stop()
    summary = {
        name: {
            key: median([r[key] for r in rows]) for key in rows[0] if key != "sent_more_than_once"
        }
        for name, rows in results.items()
    }
    print(f"\nmedians of {args.runs} runs, {args.mbit} Mbit/s, 562.5 ms RTT:")
    for name, row in summary.items():
        print(
            f"  {name:13} first page {row['page_s']:.1f} s ({row['page_bytes'] / 1e3:.0f} kB), "
            f"click -> ready {row['open_s']:.1f} s ({row['open_bytes'] / 1e6:.2f} MB)"
        )
    path = save(
        "browser_slow_link",
        {"mbit": args.mbit, "latency_ms": 562.5, "runs": results, "medians": summary},
    )
    print(f"written: {path}")


if __name__ == "__main__":
    main()
