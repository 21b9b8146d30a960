"""Which stores keep an entry across a reload, per engine? A probe without Python.

WebKitGTK 2.50 lost the element's memory snapshot, kept in Cache Storage, when the same page
was loaded again, and kept it across a navigation to another page (docs/performance.md, "The
snapshot in WebKit"). This probe writes, from the window and from a dedicated worker (ended
once it answers), entries in three stores:

- Cache Storage: 1 MB (``cache:window``, ``cache:worker``);
- IndexedDB: a 4 MB ArrayBuffer, a 4 MB Blob and a 31 MB ArrayBuffer (``idb:ab4-*``,
  ``idb:blob4-*``, ``idb:ab31-*``; a Blob counts only when its bytes can be read back);
- the Origin Private File System: 4 MB with ``createWritable`` (window and worker,
  ``opfs:writable-*``) and with ``createSyncAccessHandle`` (worker only, ``opfs:sync-worker``);

then loads the next page three ways: the same URL again (WebDriver's navigation, or
Playwright's ``goto``), ``location.reload()``, and another URL (a query string added), and
lists what that page finds. Last, it times the read of a 31 MB entry in each store after a
navigation (median of three; IndexedDB's as an ArrayBuffer, Cache Storage's and OPFS's
through ``arrayBuffer()``). Firefox and WebKit are driven as in the engine lanes
(``tests/engines/engine_support.py``; WebKit on an Xvfb display), Chromium with Playwright.

Usage: python benchmarks/cache_reload_probe.py [--engines webkit,firefox,chromium]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from browser_common import CHROMIUM, FLAGS, REPO

sys.path.insert(0, str(REPO / "tests" / "engines"))
from engine_page import EnginePage
from engine_support import instrument, start_driver, start_engine_site, x_display

#: Loaded by the page (a classic script) and by the worker (importScripts): `self.probe`.
COMMON_JS = Path(__file__).with_suffix(".js").read_text("utf-8")
WORKER_JS = """importScripts('/common.js');
self.onmessage = ({ data }) => self.probe[data]('worker').then(
  (r) => self.postMessage(r ?? 'ok'), (e) => self.postMessage(`${e?.name}: ${e?.message}`));
"""
PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>probe</title>"
    "<script src='/common.js'></script></head><body><p>probe</p>"
    "<script>document.documentElement.dataset.ready='true'</script></body></html>"
)
IN_WORKER = """async (op) => {
  const w = new Worker('/store-worker.js');
  const r = await new Promise((res) => {
    w.onmessage = ({ data }) => res(data);
    w.postMessage(op);
  });
  w.terminate();
  return r;
}"""
NAVIGATIONS = ("same URL", "reload", "another URL")


def load_next(page: Any, url: str, nav: str) -> None:
    if nav == "same URL":
        page.goto(url)
    elif nav == "reload":
        page.evaluate("setTimeout(() => location.reload(), 10), true")
        time.sleep(1.5)
    else:
        page.goto(url + "?other=1")
    page.wait_for_selector("html[data-ready=true]")


def probe(engine: str, page: Any, base: str) -> None:
    url = base + "probe.html"
    for nav in NAVIGATIONS:
        page.goto(url)
        page.wait_for_selector("html[data-ready=true]")
        page.evaluate("probe.clear()")
        written = {**page.evaluate("probe.put('window')"), **page.evaluate(IN_WORKER, "put")}
        failed = {k: v for k, v in written.items() if v != "ok"}
        listed = page.evaluate("probe.list()")
        before = {k: v for k, v in listed.items() if isinstance(v, int)}
        if len(before) < len(listed):
            print(f"{engine:8} {nav:11} unreadable: {listed.keys() - before.keys()}", flush=True)
        load_next(page, url, nav)
        after = page.evaluate("probe.list()")
        kept = sorted(k for k in before if after.get(k) == before[k])
        lost = sorted(k for k in before if after.get(k) != before[k])
        print(f"{engine:8} {nav:11} written {len(before)}, kept {kept}, lost {lost}", flush=True)
        if failed:
            print(f"{engine:8} {nav:11} not written: {failed}", flush=True)
    page.goto(url)
    page.wait_for_selector("html[data-ready=true]")
    page.evaluate("probe.clear()")
    page.evaluate("probe.putLarge()")
    page.evaluate(IN_WORKER, "putLarge")
    runs = []
    for i in range(3):
        page.goto(url + f"?read={i}")
        page.wait_for_selector("html[data-ready=true]")
        runs.append(page.evaluate("probe.timeReads()"))
    reads: dict[str, Any] = {}
    for name in runs[0]:
        values = [run[name] for run in runs]
        ints = all(isinstance(v, int) for v in values)
        reads[name] = statistics.median(values) if ints else values
    print(f"{engine:8} read of 31 MB, ms (median of 3): {reads}; runs {runs}", flush=True)
    page.evaluate("probe.clear()")


@contextlib.contextmanager
def open_page(engine: str) -> Iterator[Any]:
    if engine == "chromium":
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            try:
                yield browser.new_page()
            finally:
                browser.close()
        return
    driver = start_driver(engine)
    try:
        yield EnginePage(driver, engine)
    finally:
        with contextlib.suppress(Exception):
            driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="webkit,firefox,chromium")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = instrument(Path(tmp), "", {"probe.html": PAGE})
        (folder / "common.js").write_text(COMMON_JS, encoding="utf-8")
        (folder / "store-worker.js").write_text(WORKER_JS, encoding="utf-8")
        site = start_engine_site(folder)
        try:
            with x_display():
                for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
                    with open_page(engine) as page:
                        probe(engine, page, site.url)
        finally:
            site.stop()
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
