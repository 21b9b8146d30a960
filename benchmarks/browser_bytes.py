"""Bytes a visitor downloads before the first interaction, on the demo shop page.

Loads ``examples/demo-shop.html`` (it registers five WebMCP tools at load, so what registration
needs is counted) in headless Chromium, waits two seconds of idle time, and records every
request of the project's files (``loader.js``, ``web/``, ``pyodide/``); the page's own files
(``examples/``) are not counted. Two lanes: ``shim`` (plain Chromium: the page gets the JS
shim) and ``native`` (``--enable-features=WebMCP``: the browser's own ``document.modelContext``).
Sizes are the served bytes and their gzip size (level 6, a typical server setting; level 9
shown too). Five runs per lane; the set of files is the same in each, which the script checks
(the sizes are then the same too, so the median is that value). Target: <= 20 kB gzipped in the
shim lane, and no more than the native lane plus the shim's own files.

``--tree DIR`` serves ``DIR/loader.js`` and ``DIR/web/`` instead of the working tree's (e.g. an
older commit: ``git archive COMMIT loader.js web | tar -x -C DIR``), so old and new are measured
in one session.

Usage: python benchmarks/browser_bytes.py [--runs 5] [--tree DIR]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
from pathlib import Path
from typing import Any

from browser_common import REPO, DemoServer, bundle, chromium, save

TARGET = 20_000
PAGE = "demo-shop.html"


def first_bytes(roots: list[Path], native: bool, runs: int) -> tuple[list[dict[str, Any]], int]:
    """The files fetched before any interaction (one row per file) and the requests per run."""
    server = DemoServer(roots, port=0, cache_control="no-store").start()
    seen: list[list[str]] = []
    try:
        with chromium(native=native) as browser:
            for _ in range(runs):
                context = browser.new_context()
                page = context.new_page()
                server.requests.clear()
                page.goto(server.url + PAGE)
                page.wait_for_function("customElements.get('site-agent') !== undefined")
                page.wait_for_timeout(2000)
                assert page.evaluate("document.querySelector('site-agent').state") == "idle"
                assert page.evaluate("!!document.modelContext")
                paths = {p.split("?")[0] for m, p, _s in server.requests if m == "GET"}
                ours = ("/loader.js", "/web/", "/pyodide/")
                seen.append(sorted(p for p in paths if p.startswith(ours)))
                context.close()
    finally:
        server.stop()
    assert all(r == seen[0] for r in seen), f"different files across runs: {seen}"
    rows = []
    for path in seen[0]:
        file = next(r / path.lstrip("/") for r in roots if (r / path.lstrip("/")).is_file())
        data = file.read_bytes()
        rows.append(
            {
                "file": path,
                "bytes": len(data),
                "gzip6": len(gzip.compress(data, 6)),
                "gzip9": len(gzip.compress(data, 9)),
            }
        )
    return rows, int(statistics.median(len(r) for r in seen))


def total(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(r[k] for r in rows) for k in ("bytes", "gzip6", "gzip9")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, help="serve DIR/loader.js and DIR/web/ instead")
    args = parser.parse_args()
    roots = [bundle(), REPO / "examples"]
    if args.tree:
        roots.insert(0, args.tree.resolve())
    lanes: dict[str, Any] = {}
    for lane in ("shim", "native"):
        rows, requests = first_bytes(roots, lane == "native", args.runs)
        lanes[lane] = {"files": rows, "total": total(rows), "requests": requests}
        print(f"\n{lane} lane ({PAGE}, {requests} requests before interaction)")
        print(f"{'file':34} {'bytes':>8} {'gzip -6':>8} {'gzip -9':>8}")
        for r in rows:
            print(f"{r['file']:34} {r['bytes']:8} {r['gzip6']:8} {r['gzip9']:8}")
        t = lanes[lane]["total"]
        print(f"{'total':34} {t['bytes']:8} {t['gzip6']:8} {t['gzip9']:8}")
    shim, native = lanes["shim"], lanes["native"]
    native_files = {r["file"] for r in native["files"]}
    # The shim's own share: its files (web/webmcp/, or web/webmcp-*.js in older trees) that
    # the native lane does not fetch.
    own = sum(
        r["gzip6"]
        for r in shim["files"]
        if r["file"].startswith("/web/webmcp") and r["file"] not in native_files
    )
    s6, n6 = shim["total"]["gzip6"], native["total"]["gzip6"]
    verdict = "within" if s6 <= TARGET else "OVER"
    print(f"\nmedian of {args.runs} runs per lane (identical); target {TARGET} B: {verdict}")
    fair = "yes" if s6 <= n6 + own else "NO"
    print(f"shim lane {s6} B <= native lane {n6} B + the shim's own files {own} B: {fair}")
    tree = str(args.tree) if args.tree else "working tree"
    path = save("browser_bytes", {"runs": args.runs, "page": PAGE, "tree": tree, "lanes": lanes})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
