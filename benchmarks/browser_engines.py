"""Chromium, Firefox and WebKit side by side in one run: click -> ready (cold and a later
visit), the largest frame gap, bytes before the first interaction, and the time per tool step.

All three engines are driven the same way, with Selenium (WebDriver classic) and the helpers
of the engine lanes (``tests/engines/engine_support.py``, ``engine_page.py``): Debian's
``chromium`` through ``chromedriver`` (headless, the shim: no ``--enable-features=WebMCP``),
``firefox-esr`` through geckodriver (headless) and WebKitGTK's ``MiniBrowser`` through
``WebKitWebDriver`` (on Xvfb). The demo shop with demo rules, served on loopback with
``Cache-Control: no-cache`` (as ``python -m pysite_agent demo`` does); each page first loads
``/__engines/init.js``, which also counts frames here. Engines take turns run by run, so a
drifting load hits all alike. Per run and engine, a new browser with a fresh profile:

- ``cold``: a first visit: empty HTTP cache and Cache Storage; from the click on the launcher
  (the element's ``site-agent:open`` mark) to ``site-agent:ready``; the start makes the memory
  snapshot (stored when the page is idle: the run waits for ``site-agent:snapshot-saved``);
- ``later``: the same browser, the page loaded again: warm HTTP cache, snapshot ``used``;
- ``frame gap``: the largest gap between ``requestAnimationFrame`` callbacks from the click to
  ready, cold (how long the page could not paint);
- ``bytes``: what the element fetched before the click (``loader.js`` and ``web/``), gzipped
  (as a server would send it), from the server's request log and the files served;
- ``step``: ``ask("find red mugs")`` on the later page, start to answer (one model step, a
  read-only tool, the answer: demo rules, so no model time), the median of 3 asks;
- ``bare``: the page loaded again, then a bare ``loadPyodide()`` on its main thread (warm HTTP
  cache): the yardstick of docs/performance.md's targets;
- with ``--breakdown``: where each start's time went, from the element's performance marks
  (``boot_marks.py``), cold and later, the median of each row.

Results are medians of ``--runs`` (default 3); printed and written to
``benchmarks/results/browser_engines.json``.

Usage: python benchmarks/browser_engines.py [--runs 3] [--engines chromium,firefox,webkit]
    [--breakdown] [--no-steps]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from boot_marks import READ_MARKS, breakdown
from browser_common import CHROMIUM, FLAGS, REPO, machine, median, save

sys.path.insert(0, str(REPO / "tests" / "engines"))
from engine_page import EnginePage
from engine_support import (
    EngineSite,
    instrument,
    start_driver,
    start_engine_site,
    x_display,
)

EL = "document.querySelector('site-agent')"
FRAMES = """
window.__frames = { max: 0, last: 0, on: false };
const __tick = (t) => {
  const f = window.__frames;
  if (f.on) {
    if (f.last) f.max = Math.max(f.max, t - f.last);
    f.last = t;
  }
  requestAnimationFrame(__tick);
};
requestAnimationFrame(__tick);
"""
BOOT_MS = 240_000


def chromium_driver() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, "--headless=new", "--window-size=1280,900"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def new_driver(engine: str) -> Any:
    return chromium_driver() if engine == "chromium" else start_driver(engine)


def gzipped_bytes(site: EngineSite, paths: list[str]) -> int:
    total = 0
    for path in paths:
        found = site.find(path)
        if found is not None:
            total += len(gzip.compress(found.read_bytes(), 6))
    return total


def boot(page: EnginePage) -> dict[str, float]:
    page.evaluate("window.__frames.on = true")
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_MS, polling=20)
    page.evaluate("window.__frames.on = false")
    return page.evaluate(
        """() => {
        const at = (n) => performance.getEntriesByName(n).at(-1)?.startTime;
        const snapshot = performance.getEntriesByName('site-agent:snapshot').at(-1)?.detail;
        return { total: at('site-agent:ready') - at('site-agent:open'),
                 gap: window.__frames.max, snapshot: snapshot?.state };
    }"""
    )


BARE = """async () => {
  const t0 = performance.now();
  const { loadPyodide } = await import('/pyodide/pyodide.mjs');
  const pyodide = await loadPyodide({ indexURL: new URL('/pyodide/', location.href).href });
  pyodide.runPython('1 + 1');
  return performance.now() - t0;
}"""


def one_run(engine: str, site: EngineSite, steps_too: bool = True) -> dict[str, Any]:
    driver = new_driver(engine)
    try:
        page = EnginePage(driver, engine)
        page.goto(site.url)
        page.wait_for_selector("html[data-ready=true]")
        time.sleep(0.5)
        before = [
            path
            for method, raw, _status in list(site.requests)
            if method == "GET"
            and ((path := raw.split("?")[0]) == "/loader.js" or path.startswith("/web/"))
        ]
        cold = boot(page)
        page.wait_for_function(
            "performance.getEntriesByName('site-agent:snapshot-saved').length > 0",
            timeout=BOOT_MS,
        )
        saved = page.evaluate(
            "performance.getEntriesByName('site-agent:snapshot-saved').at(-1).detail"
        )
        cold_parts = breakdown(page.evaluate(READ_MARKS))
        page.evaluate("sessionStorage.clear()")
        page.goto(site.url)
        page.wait_for_selector("html[data-ready=true]")
        later = boot(page)
        later_parts = breakdown(page.evaluate(READ_MARKS))
        steps = []
        for _ in range(3 if steps_too else 0):
            steps.append(
                page.evaluate(
                    f"""async () => {{
                    const t = performance.now();
                    const r = await {EL}.ask('find red mugs');
                    if (r.status !== 'answered') throw new Error(JSON.stringify(r));
                    return performance.now() - t;
                }}"""
                )
            )
        return {
            "cold_ms": cold["total"],
            "cold_state": cold["snapshot"],
            "frame_gap_ms": cold["gap"],
            "saved": bool(saved.get("saved")),
            "later_ms": later["total"],
            "later_state": later["snapshot"],
            "later_frame_gap_ms": later["gap"],
            "bytes_before_interaction": gzipped_bytes(site, before),
            "step_ms": median(steps) if steps else 0.0,
            "bare_ms": bare_load(page, site),
            "cold_parts": cold_parts,
            "later_parts": later_parts,
        }
    finally:
        with contextlib.suppress(Exception):
            driver.quit()


def bare_load(page: EnginePage, site: EngineSite) -> float:
    """A bare loadPyodide() on the shop's main thread, the HTTP cache warm (no element)."""
    page.goto(site.url + "?bare")
    page.wait_for_selector("html[data-ready=true]")
    return float(page.evaluate(BARE))


def parts_table(summary: dict[str, dict[str, Any]], key: str) -> None:
    """Rows of boot_marks.breakdown, one column per engine (medians)."""
    rows: list[str] = []
    for s in summary.values():
        rows += [r for r in s[key] if r not in rows]
    print(f"{key:36}" + "".join(f"{e:>10}" for e in summary))
    for row in rows:
        cells = [s[key].get(row) for s in summary.values()]
        print(
            f"{row[:36]:36}"
            + "".join("{:>10}".format("-" if v is None else f"{v:.0f}") for v in cells)
        )


@contextlib.contextmanager
def display_if(needed: bool) -> Iterator[None]:
    if needed:
        with x_display():
            yield
    else:
        yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default="chromium,firefox,webkit")
    parser.add_argument("--breakdown", action="store_true", help="print where the time went")
    parser.add_argument("--no-steps", action="store_true", help="skip the tool steps")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    print("machine:", machine())
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    with tempfile.TemporaryDirectory() as tmp:
        site = start_engine_site(instrument(Path(tmp), FRAMES))
        try:
            with display_if("webkit" in engines and not os.environ.get("DISPLAY")):
                for run in range(args.runs):
                    for engine in engines:
                        site.requests.clear()
                        result = one_run(engine, site, not args.no_steps)
                        results[engine].append(result)
                        brief = {k: v for k, v in result.items() if not k.endswith("_parts")}
                        print(f"run {run + 1} {engine}: {brief}", flush=True)
        finally:
            site.stop()
    summary: dict[str, dict[str, Any]] = {}
    for engine, runs in results.items():
        summary[engine] = {
            key: median([r[key] for r in runs])
            for key in (
                "cold_ms",
                "later_ms",
                "frame_gap_ms",
                "later_frame_gap_ms",
                "bytes_before_interaction",
                "step_ms",
                "bare_ms",
            )
        }
        for key in ("cold_parts", "later_parts"):
            rows = {row for r in runs for row in r[key]}
            summary[engine][key] = {
                row: median([r[key][row] for r in runs if row in r[key]]) for row in sorted(rows)
            }
        summary[engine]["states"] = sorted({f"{r['cold_state']}/{r['later_state']}" for r in runs})
        summary[engine]["saved"] = all(r["saved"] for r in runs)
    load_after = os.getloadavg()[0]
    print(f"load average before {load_before:.1f}, after {load_after:.1f}")
    header = "engine     cold ms  later ms  gap ms  later gap  bytes gz  step ms  bare ms  states"
    print(header)
    for engine, s in summary.items():
        print(
            f"{engine:9} {s['cold_ms']:8.0f} {s['later_ms']:9.0f} {s['frame_gap_ms']:7.0f} "
            f"{s['later_frame_gap_ms']:10.0f} {s['bytes_before_interaction']:9.0f} "
            f"{s['step_ms']:8.0f} {s['bare_ms']:8.0f}  {','.join(s['states'])}"
        )
    if args.breakdown:
        # Rows with a wall-clock overlap: the fetches run beside the scripts and the instantiation.
        parts_table(summary, "cold_parts")
        parts_table(summary, "later_parts")
    path = save(
        "browser_engines",
        {
            "runs": args.runs,
            "load_average": {"before": load_before, "after": load_after},
            "summary": summary,
            "raw": results,
        },
    )
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
