"""Pyodide's standard library with its bytecode, against the shipped one, in one run.

``python_stdlib.zip`` of Pyodide 314.0.7 holds only ``.py`` sources (559 modules, no ``.pyc``):
every module a start imports is compiled first. The bundle adds ``python_stdlib_pyc.zip``, made
with Pyodide itself in Node (the same CPython 3.14, so the same bytecode:
``pysite_agent/bundle/_stdlib.py``), a copy of the zip with an unchecked hash-based
``.pyc`` beside each ``.py`` (``zipimport`` takes ``NAME.pyc`` first and, unchecked, never
reads the source to validate it; the sources stay for tracebacks). This times, in headless
Chromium, on loopback, from ``import('pyodide.mjs')`` to Python having imported the modules
the element's start imports from the standard library (``STDLIB_IMPORTS``):

- ``cold``: a fresh context (empty HTTP cache);
- ``warm``: the same context again (warm HTTP cache: the ``bare loadPyodide`` yardstick);

for ``source`` (the zip as shipped) and ``bytecode`` (``stdLibURL`` pointing at the copy),
taking turns. Prints medians of ``--runs`` (default 3), the zips' sizes (raw and gzipped) and
the load average; writes ``benchmarks/results/precompiled_stdlib.json``.

Usage: python benchmarks/precompiled_stdlib.py [--runs 3]
"""

from __future__ import annotations

import argparse
import gzip
import os
from typing import Any

from browser_common import bundle, chromium, median, save

from pysite_agent.bundle import _stdlib
from pysite_agent.cli.demo import DemoServer

#: What the element's start imports from the standard library (pysite_agent's own imports).
STDLIB_IMPORTS = (
    "json, asyncio, dataclasses, typing, enum, urllib.parse, html, ipaddress, uuid, fractions, "
    "pprint, importlib.resources, contextlib, functools, re"
)

TIMED = """async ([stdlib, imports]) => {
  const t0 = performance.now();
  const { loadPyodide } = await import('/pyodide/pyodide.mjs');
  const options = { indexURL: new URL('/pyodide/', location.href).href };
  if (stdlib) options.stdLibURL = stdlib;
  const pyodide = await loadPyodide(options);
  const t1 = performance.now();
  pyodide.runPython('import ' + imports);
  return { core: t1 - t0, total: performance.now() - t0 };
}"""

EMPTY_PAGE = "<!doctype html><meta charset='utf-8'><title>bare</title><p>bare"


def visit(context: Any, url: str, stdlib: str | None) -> dict[str, float]:
    page = context.new_page()
    page.route(
        "**/bare.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=EMPTY_PAGE),
    )
    page.goto(url + "bare.html")
    result: dict[str, float] = page.evaluate(TIMED, [stdlib, STDLIB_IMPORTS])
    page.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    root = bundle()
    results: dict[str, list[dict[str, float]]] = {}
    zipped = root / "pyodide" / _stdlib.FILE_NAME
    if not zipped.is_file():
        raise SystemExit(f"{zipped} is missing: the bundle needs Node 20+ to make it")
    server = DemoServer([root], port=0, cache_control="max-age=3600").start()
    ways = {"source": None, "bytecode": server.url + "pyodide/" + _stdlib.FILE_NAME}
    try:
        with chromium() as browser:
            for _ in range(args.runs):
                for way, stdlib in ways.items():
                    context = browser.new_context()
                    cold = visit(context, server.url, stdlib)
                    warm = visit(context, server.url, stdlib)
                    context.close()
                    for state, row in (("cold", cold), ("warm", warm)):
                        results.setdefault(f"{way} {state}", []).append(row)
                    print(f"{way:8} cold {cold} warm {warm}", flush=True)
    finally:
        server.stop()
    shipped = (root / "pyodide" / "python_stdlib.zip").read_bytes()
    ours = zipped.read_bytes()
    sizes = {
        "source": [len(shipped), len(gzip.compress(shipped, 6))],
        "bytecode": [len(ours), len(gzip.compress(ours, 6))],
    }
    load_after = os.getloadavg()[0]
    print(f"load average before {load_before:.1f}, after {load_after:.1f}")
    print(f"zip bytes raw / gzipped: {sizes}")
    summary = {
        key: {part: median([r[part] for r in rows]) for part in ("core", "total")}
        for key, rows in results.items()
    }
    for key, row in summary.items():
        print(
            f"{key:16} loadPyodide {row['core']:7.0f} ms, with the imports {row['total']:7.0f} ms"
        )
    save(
        "precompiled_stdlib",
        {
            "runs": args.runs,
            "load_average": {"before": load_before, "after": load_after},
            "sizes": sizes,
            "summary": summary,
            "samples": results,
        },
    )


if __name__ == "__main__":
    main()
