"""web/runtime/boot.js in headless Chromium, against the test bundle served on loopback."""

from __future__ import annotations

import ast
import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytestmark = pytest.mark.browser

PAGE = b"<!doctype html><meta charset='utf-8'><title>boot</title><p>boot test</p>"


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
    }

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/__boot.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _serve(folder: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def bundle_url(dist_dir: Path) -> Iterator[str]:
    with _serve(dist_dir.parent) as url:
        yield url


@pytest.fixture
def page(chromium: Any, bundle_url: str) -> Iterator[Any]:
    context = chromium.new_context()
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{bundle_url}/__boot.html")
    page.requests = requests
    try:
        yield page
    finally:
        context.close()
    outside = [url for url in requests if not url.startswith(bundle_url)]
    assert outside == [], f"requests left the bundle: {outside}"


@pytest.mark.parametrize("snapshot", [False, True])
def test_boot_fresh_runtime_reports_progress_and_imports(page: Any, snapshot: bool) -> None:
    """Both install paths: loadPackage (`snapshot: false`), and wheels kept as zip files on
    sys.path in the runtime that takes a memory snapshot itself (`snapshotMaker: "inline"`,
    what web/runtime/snapshot-worker.js does; tests/browser/test_snapshot.py covers the rest)."""
    result = page.evaluate(
        """async (snapshot) => {
        const { bootPython } = await import("/web/runtime/boot.js");
        const progress = [];
        const infos = [];
        const pyodide = await bootPython({
            snapshot, snapshotMaker: "inline",
            onProgress: (p) => progress.push(p), onSnapshot: (i) => infos.push(i),
        });
        const info = pyodide.runPython(`
import sys, jsonschema, pysite_agent
from importlib.metadata import version
from jsonschema import Draft202012Validator
errors = [e.message for e in Draft202012Validator({"type": "integer"}).iter_errors("x")]
repr((sys.version_info[:2], version("jsonschema"), errors, "pysite_agent" in sys.modules))
`);
        const lock = await (await fetch("/pyodide/pyodide-lock.json")).json();
        const closure = new Set();
        const visit = (name) => {
            if (closure.has(name)) return;
            closure.add(name);
            lock.packages[name].depends.forEach(visit);
        };
        visit("pysite-agent");
        const files = pyodide.runPython(
            "import pysite_agent.core.errors as e; repr((e.__file__, jsonschema.__file__))");
        return { progress, info, files, snapshot: infos[0],
                 loaded: Object.keys(pyodide.loadedPackages).sort(), closure: closure.size };
    }""",
        snapshot,
    )
    assert result["info"] == "((3, 14), '4.26.0', [\"'x' is not of type 'integer'\"], True)"
    phases = [(p["phase"], p["loaded"], p.get("total")) for p in result["progress"]]
    total = result["closure"]
    assert phases == [
        ("runtime", 0, 1),
        ("runtime", 1, 1),
        ("packages", 0, total),
        ("packages", total, total),
        ("import", 0, 1),
        ("import", 1, 1),
    ]
    errors_file, jsonschema_file = ast.literal_eval(result["files"])
    if snapshot:
        # Zip files on sys.path: zipimport takes the bundle's NAME.pyc beside NAME.py
        # (pysite_agent/bundle/_wheel_bytecode.py), ours and the pinned wheels' alike.
        assert errors_file.endswith(".whl/pysite_agent/core/errors.pyc"), errors_file
        assert jsonschema_file.endswith(".whl/jsonschema/__init__.pyc"), jsonschema_file
        assert result["snapshot"]["state"] == "made"  # a fresh browser context: none stored
        assert result["loaded"] == []  # not loadPackage: zip files on sys.path
    else:
        assert result["snapshot"] == {"state": "off", "made": False, "reason": "snapshot: false"}
        assert errors_file.endswith("site-packages/pysite_agent/core/errors.py"), errors_file
        assert "pysite-agent" in result["loaded"]
        assert "micropip" not in result["loaded"]  # installed from the lock, not by micropip
        assert len(result["loaded"]) == total


def test_boot_into_a_running_pyodide_with_another_lock(page: Any) -> None:
    """A page that started Pyodide itself (PyScript) from a lock without pysite-agent."""
    result = page.evaluate(
        """async () => {
        const { loadPyodide } = await import("/pyodide/pyodide.mjs");
        const lock = await (await fetch("/pyodide/pyodide-lock.json")).json();
        delete lock.packages["pysite-agent"];
        const indexURL = new URL("/pyodide/", location.href).href;
        const own = await loadPyodide({
            indexURL, lockFileContents: lock, packageBaseUrl: indexURL,
        });
        const { bootPython } = await import("/web/runtime/boot.js");
        const progress = [];
        const infos = [];
        const pyodide = await bootPython({
            pyodide: own, onProgress: (p) => progress.push(p), onSnapshot: (i) => infos.push(i),
        });
        return {
            same: pyodide === own,
            snapshot: infos.map((i) => i.state),
            phases: progress.map((p) => p.phase),
            ok: pyodide.runPython("import pysite_agent, jsonschema; 'ok'"),
        };
    }"""
    )
    assert result == {
        "same": True,
        "snapshot": ["off"],  # a page's own Pyodide is never snapshotted
        "phases": ["packages", "packages", "import", "import"],
        "ok": "ok",
    }


def test_boot_rejects_when_aborted(page: Any) -> None:
    result = page.evaluate(
        """async () => {
        const { bootPython } = await import("/web/runtime/boot.js");
        const controller = new AbortController();
        controller.abort();
        try {
            await bootPython({ signal: controller.signal });
            return "resolved";
        } catch (error) {
            return error.name;
        }
    }"""
    )
    assert result == "AbortError"
