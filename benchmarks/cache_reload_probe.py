"""Does an engine keep Cache Storage entries across a reload? A probe without Python.

WebKitGTK 2.50 lost the element's stored memory snapshot when the same page was loaded again,
and kept it across a navigation to another page (docs/performance.md, "The snapshot in
WebKit"). This probe puts five 1 MB entries (from the window; from a module worker, with and
without the page reading the entry back; from a worker nested in a worker, the same two ways),
then navigates three ways: to the same URL (WebDriver), ``location.reload()``, and to another
URL, and lists what the next page finds. Engines are driven as in the engine lanes
(``tests/engines/engine_support.py``); WebKit on an Xvfb display.

Usage: python benchmarks/cache_reload_probe.py [--engines webkit,firefox]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

from browser_common import REPO

sys.path.insert(0, str(REPO / "tests" / "engines"))
from engine_page import EnginePage
from engine_support import instrument, start_driver, start_engine_site, x_display

PUT_JS = """// put.js?name=X[&nest=1]: puts a 1 MB entry X (or spawns a worker that does).
const params = new URL(self.location.href).searchParams;
const name = params.get('name');
if (params.get('nest')) {
  const inner = new Worker(`put.js?name=${name}`, { type: 'module' });
  inner.onmessage = ({ data }) => self.postMessage(data);
} else {
  caches.open('probe').then((c) => c.put(`/probe/${name}`, new Response(new Uint8Array(1 << 20))))
    .then(() => self.postMessage('ok'), (e) => self.postMessage(String(e)));
}
"""
PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>probe</title></head><body>"
    "<p>probe</p><script>document.documentElement.dataset.ready='true'</script></body></html>"
)
PUT = """async ([name, nest, read]) => {
  const w = new Worker(`/put.js?name=${name}` + (nest ? '&nest=1' : ''), { type: 'module' });
  const r = await new Promise((res) => { w.onmessage = ({ data }) => res(data); });
  if (read) {
    const c = await caches.open('probe');
    await (await c.match(`/probe/${name}`)).arrayBuffer();
  }
  w.terminate();
  return r;
}"""
LIST = "async () => (await (await caches.open('probe')).keys()).map((r) => new URL(r.url).pathname)"
WINDOW = """async () => {
  const c = await caches.open('probe');
  await c.put('/probe/window', new Response(new Uint8Array(1 << 20)));
  return 'ok';
}"""
PUTS = [("worker", 0, 0), ("worker-read", 0, 1), ("nested", 1, 0), ("nested-read", 1, 1)]


def probe(engine: str, url: str) -> None:
    driver = start_driver(engine)
    page = EnginePage(driver, engine)
    try:
        for nav in ("same URL", "reload", "another URL"):
            page.goto(url + "probe.html")
            page.wait_for_selector("html[data-ready=true]")
            page.evaluate("caches.delete('probe')")
            page.evaluate(WINDOW)
            for name, nest, read in PUTS:
                page.evaluate(PUT, [name, nest, read])
            before = sorted(page.evaluate(LIST))
            if nav == "same URL":
                page.goto(url + "probe.html")
            elif nav == "reload":
                page.evaluate("setTimeout(() => location.reload(), 10), true")
                time.sleep(1.5)
            else:
                page.goto(url + "probe.html?other=1")
            page.wait_for_selector("html[data-ready=true]")
            after = sorted(page.evaluate(LIST))
            print(f"{engine:8} {nav:12} before {len(before)} entries, after {after}", flush=True)
    finally:
        with contextlib.suppress(Exception):
            driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="webkit,firefox")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = instrument(Path(tmp), "", {"probe.html": PAGE})
        (folder / "put.js").write_text(PUT_JS, encoding="utf-8")
        site = start_engine_site(folder)
        try:
            with x_display():
                for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
                    probe(engine, site.url)
        finally:
            site.stop()


if __name__ == "__main__":
    main()
