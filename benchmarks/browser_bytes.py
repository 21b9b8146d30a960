"""Bytes a visitor downloads before the first interaction: loader.js and the element's assets.

Loads a bare page (``<site-agent>`` plus one ``<script type=module src=loader.js>``) in headless
Chromium, waits two seconds of idle time, and records every request the page made. The page's
own HTML is not counted; everything else is (it is all the project's). Sizes are the served
bytes and their gzip size (level 6, a typical server setting; level 9 shown too). Five runs;
the set of files is the same in each, which the script checks. Target: <= 20 kB gzipped.

Usage: python benchmarks/browser_bytes.py [--runs 5]
"""

from __future__ import annotations

import argparse
import gzip
import statistics

from browser_common import bundle, chromium, save, site

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,"><title>bytes</title></head><body>
<site-agent models="demo"></site-agent>
<script type="module" src="/loader.js"></script></body></html>"""
TARGET = 20_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = bundle()
    runs: list[list[str]] = []
    with site() as server, chromium() as browser:
        for _ in range(args.runs):
            context = browser.new_context()
            page = context.new_page()
            page.route(
                "**/bytes.html",
                lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE),
            )
            server.requests.clear()
            page.goto(server.url + "bytes.html")
            page.wait_for_function("customElements.get('site-agent') !== undefined")
            page.wait_for_timeout(2000)
            assert page.evaluate("document.querySelector('site-agent').state") == "idle"
            runs.append(sorted(p.split("?")[0] for m, p, s in server.requests if m == "GET"))
            context.close()
    assert all(r == runs[0] for r in runs), f"different files across runs: {runs}"
    rows = []
    for path in runs[0]:
        data = (root / path.lstrip("/")).read_bytes()
        rows.append(
            {
                "file": path,
                "bytes": len(data),
                "gzip6": len(gzip.compress(data, 6)),
                "gzip9": len(gzip.compress(data, 9)),
            }
        )
    total = {k: sum(r[k] for r in rows) for k in ("bytes", "gzip6", "gzip9")}
    print(f"{'file':32} {'bytes':>8} {'gzip -6':>8} {'gzip -9':>8}")
    for r in rows:
        print(f"{r['file']:32} {r['bytes']:8} {r['gzip6']:8} {r['gzip9']:8}")
    print(f"{'total':32} {total['bytes']:8} {total['gzip6']:8} {total['gzip9']:8}")
    verdict = "within" if total["gzip6"] <= TARGET else "OVER"
    print(f"median of {args.runs} runs (identical); target {TARGET} B gzipped: {verdict}")
    print(f"requests before interaction per run: {statistics.median(len(r) for r in runs):.0f}")
    path = save("browser_bytes", {"runs": args.runs, "files": rows, "total": total})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
