"""From opening the panel to "ready for a message", and the longest main-thread task meanwhile.

Headless Chromium on loopback, the demo shop with demo rules. The clock starts when the
launcher is clicked (the element's ``site-agent:open`` performance mark) and stops at
``site-agent:ready`` (the agent exists and the model answered ``availability()``). The
element and ``web/boot.js`` set marks in between, giving the breakdown:

- ``boot.js``: importing ``web/boot.js`` (dynamic import on first open);
- ``Pyodide core``: ``loadPyodide`` (pyodide.mjs, the wasm module, the standard library);
- ``packages``: ``loadPackage`` of pysite-agent and its dependencies from the bundle's lock
  (sha256 checked);
- ``import``: ``import pysite_agent``;
- ``agent``: importing the element glue, creating the agent, the model's availability.

Three cache states, each a median of ``--runs`` (default 5) page loads:

- ``cold``: a fresh browser context per run (empty HTTP cache);
- ``warm (revalidate)``: the same context, reloaded; the server says ``no-cache`` (as the demo
  does), so every file is revalidated (``304``);
- ``warm (max-age)``: the same, with ``Cache-Control: max-age=3600`` (a hosted bundle): no
  requests at all.

Long tasks come from the Long Tasks API (``PerformanceObserver`` for ``longtask``, buffered),
counting tasks that start between open and ready.

Usage: python benchmarks/browser_ready.py [--runs 5]
"""

from __future__ import annotations

import argparse
from typing import Any

from browser_common import chromium, median, save, site

OBSERVER = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longtasks.push([e.startTime, e.duration]);
}).observe({ type: 'longtask', buffered: true });
"""

PHASES = [
    ("boot.js", "boot-start", "runtime:start"),
    ("Pyodide core", "runtime:start", "runtime:end"),
    ("packages", "packages:start", "packages:end"),
    ("import", "import:start", "import:end"),
    ("agent", "boot-end", "ready"),
    ("total", "open", "ready"),
]


def one_load(page: Any, url: str) -> dict[str, float]:
    page.goto(url)
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_timeout(300)
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "performance.getEntriesByName('site-agent:ready').length > 0", timeout=120_000
    )
    marks = dict(
        page.evaluate(
            """() => performance.getEntriesByType('mark')
                .filter((m) => m.name.startsWith('site-agent:'))
                .map((m) => [m.name.slice(11), m.startTime])"""
        )
    )
    out = {name: marks[end] - marks[start] for name, start, end in PHASES}
    tasks = page.evaluate("window.__longtasks")
    inside = [d for s, d in tasks if marks["open"] <= s <= marks["ready"]]
    out["longest task"] = max(inside, default=0.0)
    out["long tasks"] = float(len(inside))
    return out


def measure(runs: int) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {}
    with chromium() as browser:
        with site() as server:
            cold = []
            for _ in range(runs):
                context = browser.new_context()
                context.add_init_script(OBSERVER)
                cold.append(one_load(context.new_page(), server.url))
                context.close()
            results["cold"] = cold
            context = browser.new_context()
            context.add_init_script(OBSERVER)
            page = context.new_page()
            one_load(page, server.url)  # fill the cache
            results["warm (revalidate)"] = [one_load(page, server.url) for _ in range(runs)]
            context.close()
        with site(cache_control="max-age=3600") as server:
            context = browser.new_context()
            context.add_init_script(OBSERVER)
            page = context.new_page()
            one_load(page, server.url)
            server.requests.clear()
            results["warm (max-age)"] = [one_load(page, server.url) for _ in range(runs)]
            fetched = [p for m, p, s in server.requests if m == "GET" and s == 200]
            results["warm (max-age) refetched"] = [{"files": float(len(fetched))}]
            context.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = measure(args.runs)
    keys = [name for name, _, _ in PHASES] + ["longest task", "long tasks"]
    states = ["cold", "warm (revalidate)", "warm (max-age)"]
    print(f"medians of {args.runs} runs, milliseconds")
    print(f"{'':16}" + "".join(f"{s:>20}" for s in states))
    summary: dict[str, dict[str, float]] = {}
    for key in keys:
        row = {s: median([r[key] for r in results[s]]) for s in states}
        summary[key] = row
        fmt = "{:>20.0f}"
        print(f"{key:16}" + "".join(fmt.format(row[s]) for s in states))
    path = save("browser_ready", {"runs": args.runs, "median_ms": summary, "samples": results})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
