"""Runs the public web-platform-tests for WebMCP against the shim (and native Chromium).

A measurement, not a test: the WPT files are third-party code and are never committed. Give
the script a directory laid out like a WPT checkout that holds at least ``webmcp/`` and
``resources/testharness.js``; the script serves it on two loopback origins
(``http://127.0.0.1:P`` and ``http://localhost:Q``, both secure contexts, standing in for WPT's
HTTPS origins) and answers the few harness files itself:

- ``/resources/testharnessreport.js`` records each subtest's status in the page;
- ``/common/blank.html`` and ``/common/get-host-info.sub.js`` (the second origin is the
  "remote" one).

Lanes: ``shim`` (no WebMCP in Chromium; ``web/webmcp/shim.js`` is put at the top of every HTML
page as a classic script, since the tests call ``document.modelContext`` at once) and
``native`` (``--enable-features=WebMCP``). Each test file is loaded once per lane; the script
prints every subtest's status and the totals, and writes them to
``benchmarks/results/wpt_webmcp.json``.

Usage: python benchmarks/wpt_webmcp.py --wpt DIR [--lane shim|native|both] [--commit SHA]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from browser_common import REPO, chromium, save

STATUS = {0: "PASS", 1: "FAIL", 2: "TIMEOUT", 3: "NOTRUN", 4: "PRECONDITION_FAILED"}

REPORT_JS = """
add_completion_callback((tests, status) => {
  window.__wpt = {
    harness: status.status, message: status.message,
    tests: tests.map((t) => ({ name: t.name, status: t.status, message: t.message })),
  };
});
"""
BLANK = "<!doctype html><meta charset=utf-8><title>blank</title>"


def shim_script(base: str) -> str:
    """web/webmcp/shim.js as one classic script that installs the shim."""
    source = (REPO / "web" / "webmcp/shim.js").read_text()
    source = re.sub(r"^export ", "", source, flags=re.M)
    source = source.replace("import.meta.url", json.dumps(base + "__shim__/webmcp/shim.js"))
    return f"<script>(() => {{\n{source}\ninstallShim();\n}})();</script>\n"


def make_handler(root: Path, lane: str, origins: dict[str, str]) -> Any:
    host_info = (
        "function get_host_info() { return "
        + json.dumps(
            {
                "ORIGIN": origins["main"],
                "HTTPS_ORIGIN": origins["main"],
                "REMOTE_ORIGIN": origins["remote"],
                "HTTPS_REMOTE_ORIGIN": origins["remote"],
                "HTTPS_NOTSAMESITE_ORIGIN": "https://not-same-site.invalid",
                "HTTPS_OTHER_NOTSAMESITE_ORIGIN": "https://other-not-same-site.invalid",
            }
        )
        + "; }"
    )

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def handle(self) -> None:
            # The browser may close a connection it no longer needs.
            with contextlib.suppress(ConnectionError):
                super().handle()

        def _send(self, body: str, kind: str) -> None:
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            host = self.headers.get("Host", "")
            base = f"http://{host}/"
            if path == "/resources/testharnessreport.js":
                return self._send(REPORT_JS, "text/javascript")
            if path == "/common/blank.html":
                shim = shim_script(base) if lane == "shim" else ""
                return self._send(shim + BLANK, "text/html")
            if path == "/common/get-host-info.sub.js":
                return self._send(host_info, "text/javascript")
            if path.startswith("/__shim__/"):
                file = REPO / "web" / path.removeprefix("/__shim__/")
                return self._send(file.read_text(), "text/javascript")
            if path.endswith(".html") and lane == "shim":
                text = (root / path.lstrip("/")).read_text()
                match = re.match(r"\s*<!doctype html>\s*", text, flags=re.I)
                cut = match.end() if match else 0
                return self._send(text[:cut] + shim_script(base) + text[cut:], "text/html")
            return super().do_GET()

    return partial(Handler, directory=str(root))


def serve(root: Path, lane: str) -> tuple[list[ThreadingHTTPServer], dict[str, str]]:
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler) for _ in range(2)]
    origins = {
        "main": f"http://127.0.0.1:{servers[0].server_address[1]}",
        "remote": f"http://localhost:{servers[1].server_address[1]}",
    }
    for server in servers:
        server.RequestHandlerClass = make_handler(root, lane, origins)  # type: ignore[assignment]
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return servers, origins


def run_lane(root: Path, lane: str, only: str = "") -> list[dict[str, Any]]:
    files = sorted(p.relative_to(root).as_posix() for p in (root / "webmcp").rglob("*.html"))
    files = [f for f in files if "/resources/" not in f and only in f]
    servers, origins = serve(root, lane)
    rows: list[dict[str, Any]] = []
    try:
        with chromium(native=lane == "native") as browser:
            for file in files:
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{origins['main']}/{file}")
                try:
                    page.wait_for_function("window.__wpt !== undefined", timeout=120_000)
                    result = page.evaluate("window.__wpt")
                except Exception as exc:  # noqa: BLE001 - a page that never finished
                    result = {"harness": 2, "message": str(exc)[:200], "tests": []}
                context.close()
                for test in result["tests"]:
                    rows.append(
                        {
                            "file": file,
                            "subtest": test["name"],
                            "status": STATUS.get(test["status"], str(test["status"])),
                            "message": (test.get("message") or "")[:300],
                        }
                    )
                if result["harness"] != 0 or not result["tests"]:
                    rows.append(
                        {
                            "file": file,
                            "subtest": "(harness)",
                            "status": "ERROR",
                            "message": (result.get("message") or "no subtests ran")[:300],
                        }
                    )
    finally:
        for server in servers:
            server.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wpt", type=Path, required=True, help="a directory laid out like WPT")
    parser.add_argument("--lane", choices=["shim", "native", "both"], default="both")
    parser.add_argument("--commit", default="", help="the WPT commit the files come from")
    parser.add_argument("--only", default="", help="run only files whose path contains this")
    args = parser.parse_args()
    lanes = ["shim", "native"] if args.lane == "both" else [args.lane]
    out: dict[str, Any] = {"commit": args.commit, "lanes": {}}
    for lane in lanes:
        rows = [
            r for r in run_lane(args.wpt.resolve(), lane, args.only) if r["subtest"] != "(harness)"
        ]
        passed = sum(r["status"] == "PASS" for r in rows)
        print(f"\n== {lane}: {passed} of {len(rows)} subtests passed")
        for r in rows:
            note = f"  ({r['message']})" if r["status"] != "PASS" and r["message"] else ""
            print(f"{r['status']:8} {r['file']} :: {r['subtest']}{note}")
        out["lanes"][lane] = {"passed": passed, "total": len(rows), "subtests": rows}
    print(f"\nwritten to {save('wpt_webmcp', out)}")


if __name__ == "__main__":
    main()
