"""Does the page freeze while Python starts? Main-thread frame gaps and long tasks, from the
click on the launcher to "ready", in worker mode (the default) and main-thread mode.

Headless Chromium on loopback, the demo shop with demo rules; the mode is chosen with
``window.pysiteAgent = {runtime}``, set before the page's scripts run. From the click (the
element's ``site-agent:open`` mark) to ``site-agent:ready``:

- **largest frame gap**: the longest time between two ``requestAnimationFrame`` callbacks
  (a steady page draws every 16.7 ms; a keystroke waits out a gap); the Long Tasks API
  under-reports a frozen page, so gaps are measured as well;
- **long tasks**: entries of the Long Tasks API (``PerformanceObserver``, ``longtask``) that
  start in the interval, and the longest;
- **click to ready**, for reference.

Two cache states, each a median of ``--runs`` page loads per mode, alternating the modes:
``cold`` (a fresh browser context per load: empty HTTP cache and Cache Storage, so no memory
snapshot) and ``warm`` (one context, reloaded; the demo's ``no-cache`` revalidates every file;
a memory snapshot from the earlier loads is used where boot.js keeps one).

Target (worker mode): no gap over 100 ms and no long task, cold and warm.

Usage: python benchmarks/browser_frames.py [--runs 5]
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

from browser_common import chromium, median, save, site

INIT = """
window.pysiteAgent = { runtime: %s };
window.__frames = [];
window.__longtasks = [];
const tick = (t) => { window.__frames.push(t); requestAnimationFrame(tick); };
requestAnimationFrame(tick);
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longtasks.push([e.startTime, e.duration]);
}).observe({ type: 'longtask', buffered: true });
"""

MODES = ("worker", "main")


def one_load(page: Any, url: str) -> dict[str, float]:
    page.goto(url)
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_timeout(300)
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "performance.getEntriesByName('site-agent:ready').length > 0", timeout=120_000
    )
    page.wait_for_timeout(100)  # one more frame after ready
    data = page.evaluate(
        """() => {
            const at = (n) => performance.getEntriesByName('site-agent:' + n)[0].startTime;
            return { open: at('open'), ready: at('ready'), frames: window.__frames,
                     tasks: window.__longtasks };
        }"""
    )
    start, end = data["open"], data["ready"]
    frames = [t for t in data["frames"] if t >= start]
    before = [t for t in data["frames"] if t < start]
    points = ([before[-1]] if before else [start]) + [t for t in frames if t <= end]
    after = [t for t in frames if t > end]
    if after:
        points.append(after[0])
    gaps = [b - a for a, b in itertools.pairwise(points)]
    tasks = [d for s, d in data["tasks"] if start <= s <= end]
    return {
        "click to ready": end - start,
        "largest frame gap": max(gaps, default=end - start),
        "gaps over 100 ms": float(sum(1 for g in gaps if g > 100)),
        "long tasks": float(len(tasks)),
        "longest task": max(tasks, default=0.0),
    }


def measure(runs: int) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {
        f"{m} {c}": [] for m in MODES for c in ("cold", "warm")
    }
    with chromium() as browser, site() as server:
        for _ in range(runs):
            for mode in MODES:
                context = browser.new_context()
                context.add_init_script(INIT % repr(mode))
                results[f"{mode} cold"].append(one_load(context.new_page(), server.url))
                context.close()
        for mode in MODES:
            context = browser.new_context()
            context.add_init_script(INIT % repr(mode))
            page = context.new_page()
            one_load(page, server.url)  # fill the caches
            page.wait_for_timeout(3000)  # a snapshot is stored when the page is idle
            results[f"{mode} warm"] = [one_load(page, server.url) for _ in range(runs)]
            context.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = measure(args.runs)
    keys = ["click to ready", "largest frame gap", "gaps over 100 ms", "long tasks", "longest task"]
    states = list(results)
    print(f"medians of {args.runs} runs (ms, or counts)")
    print(f"{'':20}" + "".join(f"{s:>14}" for s in states))
    summary: dict[str, dict[str, float]] = {}
    for key in keys:
        row = {s: median([r[key] for r in results[s]]) for s in states}
        summary[key] = row
        print(f"{key:20}" + "".join(f"{row[s]:>14.0f}" for s in states))
    path = save("browser_frames", {"runs": args.runs, "median": summary, "samples": results})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
