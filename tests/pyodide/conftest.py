"""Tests inside Pyodide (pytest-pyodide), on Node and in headless Chromium.

Wiring, all in this folder:

- Unless ``--dist-dir`` is given, the test bundle (runtime + test wheels) is built once per
  session into ``dist/test-bundle/`` (downloads cached in ``.cache/pysite-agent/``; a cached
  rebuild takes well under a second and picks up the current working tree) and pytest-pyodide's
  dist dir points at its ``pyodide/`` folder.
- ``--runner`` defaults to playwright here, and the playwright browser is the system Chromium
  (``$PYSITE_CHROMIUM``, default ``/usr/bin/chromium``) with the flags below, one browser per
  session.
- ``--rt`` picks the runtimes (``node``, ``chrome``, ``node,chrome``); pytest-pyodide runs the
  host tests of this folder too unless a runtime is written ``...-no-host``.

- The dist dir is served by a threaded HTTP server (pytest-pyodide's own is single-threaded:
  one idle connection, such as a speculative preconnect from Chromium, stalls every other
  request; on a busy machine pages then failed with ERR_EMPTY_RESPONSE).

``.ci/pyodide-tests`` runs both runtimes.
"""

from __future__ import annotations

import functools
import http.server
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_pyodide import get_global_config

ROOT = Path(__file__).resolve().parents[2]
TEST_BUNDLE = ROOT / "dist" / "test-bundle"
CHROMIUM = os.environ.get("PYSITE_CHROMIUM", "/usr/bin/chromium")
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-features=WebMCP",
    "--js-flags=--expose-gc",
]

#: Summary lines reported by tests (e.g. the in-Pyodide run of the core suite), printed at the
#: end of the session.
SUMMARY: list[str] = []


def _given(config: pytest.Config, option: str) -> bool:
    args = list(config.invocation_params.args) + os.environ.get("PYTEST_ADDOPTS", "").split()
    return any(a == option or a.startswith(option + "=") for a in args)


def pytest_configure(config: pytest.Config) -> None:
    get_global_config().set_flags("chrome", list(CHROME_FLAGS))
    if not _given(config, "--runner"):
        config.option.runner = "playwright"
    if not _given(config, "--dist-dir"):
        from pysite_agent.bundle import build_bundle

        report = build_bundle(TEST_BUNDLE, include_test_wheels=True, progress=lambda _msg: None)
        dist = report.out_dir / "pyodide"
        config.option.dist_dir = dist
        pytest.pyodide_dist_dir = dist  # type: ignore[attr-defined]
        SUMMARY.append(
            f"test bundle: {report.out_dir} ({len(report.packages)} wheels, "
            f"{report.total_size / 1e6:.1f} MB, built in {report.seconds:.1f} s)"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.runtimes("chrome")``: the test applies only to those runtimes, so its
    items for the others are deselected (not skipped: a skip would hide a test that could not
    run where it should)."""
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker("runtimes")
        callspec = getattr(item, "callspec", None)
        runtime = callspec.params.get("runtime") if callspec is not None else None
        if marker is not None and runtime is not None and runtime not in marker.args:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SUMMARY:
        terminalreporter.section("pyodide")
        for line in SUMMARY:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def pyodide_summary() -> list[str]:
    """Lines for the session's "pyodide" section (e.g. pytest's summary from inside Pyodide)."""
    return SUMMARY


@pytest.fixture(scope="session")
def dist_dir(pytestconfig: pytest.Config) -> Path:
    """The Pyodide folder under test (``pyodide/`` of the test bundle)."""
    return Path(pytestconfig.option.dist_dir)


@pytest.fixture(scope="session")
def web_server_main(pytestconfig: pytest.Config) -> Iterator[tuple[str, int, Path]]:
    """pytest-pyodide's server of the dist dir and its test pages, but threaded."""
    from pytest_pyodide.server import DefaultHandler

    log_dir = Path(tempfile.mkdtemp(prefix="pyodide-server-"))
    log_path = log_dir / "http-server.log"
    log = log_path.open("w", buffering=1)

    class Handler(DefaultHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.write(f"{self.log_date_time_string()} {format % args}\n")

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    handler = functools.partial(Handler, directory=str(pytestconfig.option.dist_dir))
    server = Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="pyodide-dist", daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", int(server.server_address[1]), log_path
    finally:
        server.shutdown()
        server.server_close()
        log.close()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """The system Chromium driven by Playwright, launched once per session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=get_global_config().get_flags("chrome")
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def playwright_browsers(request: pytest.FixtureRequest) -> dict[str, Any]:
    """pytest-pyodide's browser map, with Chromium from :func:`chromium` (no download)."""
    runtimes = getattr(pytest, "pyodide_runtimes", set())
    if request.config.option.runner.lower() != "playwright" or "chrome" not in runtimes:
        return {}
    return {"chrome": request.getfixturevalue("chromium")}
