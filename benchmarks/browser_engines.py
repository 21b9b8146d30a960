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
  read-only tool, the answer: demo rules, so no model time), the median of 3 asks.

Results are medians of ``--runs`` (default 3); printed and written to
``benchmarks/results/browser_engines.json``.

Usage: python benchmarks/browser_engines.py [--runs 3] [--engines chromium,firefox,webkit]
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


def one_run(engine: str, site: EngineSite) -> dict[str, Any]:
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
        page.evaluate("sessionStorage.clear()")
        page.goto(site.url)
        page.wait_for_selector("html[data-ready=true]")
        later = boot(page)
        steps = []
        for _ in range(3):
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
            "step_ms": median(steps),
        }
    finally:
        with contextlib.suppress(Exception):
            driver.quit()


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
    args = parser.parse_args()
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
                        result = one_run(engine, site)
                        results[engine].append(result)
                        print(f"run {run + 1} {engine}: {result}", flush=True)
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
            )
        }
        summary[engine]["states"] = sorted({f"{r['cold_state']}/{r['later_state']}" for r in runs})
        summary[engine]["saved"] = all(r["saved"] for r in runs)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    header = "engine     cold ms  later ms  gap ms  later gap  bytes gz  step ms  states"
    print(header)
    for engine, s in summary.items():
        print(
            f"{engine:9} {s['cold_ms']:8.0f} {s['later_ms']:9.0f} {s['frame_gap_ms']:7.0f} "
            f"{s['later_frame_gap_ms']:10.0f} {s['bytes_before_interaction']:9.0f} "
            f"{s['step_ms']:8.0f}  {','.join(s['states'])}"
        )
    path = save("browser_engines", {"runs": args.runs, "summary": summary, "raw": results})
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
