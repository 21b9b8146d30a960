"""Measure, in headless Chromium, ways of installing pysite_agent from a bundle.

    .venv/bin/python tests/pyodide/measure_install.py [BUNDLE] [--runs 5]

BUNDLE (default ``dist/bundle``, built if missing) is served on loopback. Each run uses a
fresh browser context (empty HTTP cache) and times, inside the page:

- ``boot``: ``loadPyodide({indexURL})``;
- ``loadPackage``: ``pyodide.loadPackage(["pysite-agent"])`` (closure from the lock);
- ``loadPyodide+packages``: ``loadPyodide({packages: ["pysite-agent"]})``, in one step;
- ``micropip(url)``: ``loadPackage("micropip")`` then ``micropip.install(<wheel URL>)``
  (dependencies resolved by micropip from the lock);
- ``micropip(urls, deps=False)``: the same with every wheel URL of the closure.

Each install is followed by ``import pysite_agent, jsonschema`` (timed apart as ``import``).
Prints medians (ms).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import statistics
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

PAGE = b"""<!doctype html><meta charset="utf-8"><title>measure</title>
<script type="module">
import { loadPyodide } from "./pyodide/pyodide.mjs";
const indexURL = new URL("./pyodide/", location.href).href;
const IMPORT = "import pysite_agent, jsonschema";
function closure(lock, names) {
  const seen = new Set();
  const visit = (n) => {
    if (seen.has(n)) return;
    seen.add(n);
    lock.packages[n].depends.forEach(visit);
  };
  names.forEach(visit);
  return [...seen];
}
window.measure = async (variant) => {
  const t0 = performance.now();
  const t = {};
  let py;
  if (variant === "loadPyodide+packages") {
    py = await loadPyodide({ indexURL, packages: ["pysite-agent"] });
    py.runPython(IMPORT);
    t.total = performance.now() - t0;
    return t;
  }
  py = await loadPyodide({ indexURL });
  const t1 = performance.now();
  t.boot = t1 - t0;
  if (variant === "loadPackage") {
    await py.loadPackage(["pysite-agent"]);
  } else {
    await py.loadPackage("micropip");
    const micropip = py.pyimport("micropip");
    const lock = await (await fetch(indexURL + "pyodide-lock.json")).json();
    if (variant === "micropip(url)") {
      await micropip.install(indexURL + lock.packages["pysite-agent"].file_name);
    } else {
      const urls = closure(lock, ["pysite-agent"])
        .map((n) => indexURL + lock.packages[n].file_name);
      await micropip.install.callKwargs(urls, { deps: false });
    }
    micropip.destroy();
  }
  const t2 = performance.now();
  t.install = t2 - t1;
  py.runPython(IMPORT);
  t.import = performance.now() - t2;
  t.total = performance.now() - t0;
  return t;
};
window.ready = true;
</script>
"""

VARIANTS = ("loadPackage", "loadPyodide+packages", "micropip(url)", "micropip(urls, deps=False)")


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/__measure.html":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", default=str(ROOT / "dist" / "bundle"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    bundle = Path(args.bundle)
    if not (bundle / "pyodide" / "pyodide-lock.json").is_file():
        sys.path.insert(0, str(ROOT))
        from pysite_agent.bundle import build_bundle

        build_bundle(bundle)

    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, list[float]]] = {v: {} for v in VARIANTS}
    with serve(bundle) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for _ in range(args.runs):
            for variant in VARIANTS:
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/__measure.html")
                page.wait_for_function("window.ready === true")
                timings = page.evaluate("(v) => window.measure(v)", variant)
                context.close()
                for key, value in timings.items():
                    results[variant].setdefault(key, []).append(value)
        browser.close()
    print(f"medians of {args.runs} runs (ms), fresh browser context each, loopback:")
    for variant, timings in results.items():
        medians = {k: round(statistics.median(v)) for k, v in timings.items()}
        print(f"  {variant:28s} {json.dumps(medians)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
