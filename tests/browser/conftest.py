"""Shared fixtures for tests that drive headless Chromium with Playwright (sync API).

What a browser test module gets by asking for these fixtures:

``http_server`` (session)
    A :class:`StaticServer` serving the repository root on ``127.0.0.1`` at a free port.
    ``http_server.url("tests/browser/pages/webmcp.html")`` gives an absolute URL.
    ``cache_control`` and ``extra_headers`` are settable; ``requests`` records what was fetched.
``serve_directory`` (session)
    A factory, ``serve_directory(path, cache_control="no-store")``, for serving another
    directory (a built dist, a temporary tree) the same way. Servers close at session end.
``lane`` (module, parametrized)
    ``"shim"``: Chromium without WebMCP, so pages fall back to ``web/webmcp/shim.js``.
    ``"native"``: Chromium with ``--enable-features=WebMCP``, the browser's own
    ``document.modelContext``. Every test that uses ``browser``/``page`` runs once per lane;
    set ``PYSITE_BROWSER_LANES=native`` (or ``shim``) to run one lane only.
``browser`` (module)
    A Playwright ``Browser`` for the lane: ``/usr/bin/chromium`` (or ``$CHROMIUM_BIN``),
    headless, with a fresh temporary profile (Playwright passes a new ``--user-data-dir``).
``page`` (module)
    One ``Page`` per module and lane, in its own context. Navigate it in each test
    (``page.goto(http_server.url(...))``) for a fresh document.
``page_log`` (module)
    Console messages and uncaught page errors of ``page``. Properties ``console_errors`` and
    ``page_errors`` hold what happened during the current test; ``allow_page_error(regex)``
    lets a test expect one. A test whose page threw an uncaught error (or left a promise
    rejection unhandled) FAILS, even when its assertions passed.
``artifacts_dir`` (session)
    ``<repo>/test-artifacts/`` (git-ignored). A failing test that used ``page`` leaves a
    screenshot there, named after the test.

If Chromium or Playwright cannot start, browser tests are skipped with the reason, except
under ``CI=true``, where they fail: CI must not go green without having run them.

Example::

    def test_title(page, http_server, lane):
        page.goto(http_server.url("examples/demo.html"))
        assert page.title() == "Demo"

Caveat: Playwright's sync API marks its asyncio loop as the running loop of the main thread
while it is alive (between calls too). A browser test module must therefore not call
``asyncio.run`` or drive another event loop in-process; async code belongs in the page.
Playwright is started per module and stopped at its end, so other modules are unaffected.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, NoReturn
from urllib.parse import quote

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"
CHROMIUM_BIN = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")

#: Flags that keep Chromium headless and quiet on a closed network (see platform notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Extra flags per lane.
LANES: dict[str, list[str]] = {
    "shim": [],
    "native": ["--enable-features=WebMCP"],
}


def _selected_lanes() -> list[str]:
    wanted = os.environ.get("PYSITE_BROWSER_LANES", "")
    names = [n.strip() for n in wanted.split(",") if n.strip()] or list(LANES)
    unknown = [n for n in names if n not in LANES]
    if unknown:
        raise pytest.UsageError(
            f"PYSITE_BROWSER_LANES: unknown lane(s) {unknown}; use {list(LANES)}"
        )
    return names


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> NoReturn:
    """Skip outside CI, fail under CI: a browser that cannot start must not pass silently."""
    if in_ci():
        pytest.fail(f"browser tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


# --------------------------------------------------------------------------- HTTP server

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".py": "text/x-python; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".tar": "application/x-tar",
    ".gz": "application/gzip",
    ".data": "application/octet-stream",
}


class StaticServer:
    """Serves one directory over HTTP on 127.0.0.1 from a background thread.

    ``cache_control`` (default ``"no-store"``) and ``extra_headers`` (for example
    ``{"Cross-Origin-Opener-Policy": "same-origin"}``) apply to every later response and may be
    changed at any time. ``requests`` lists ``(method, path, status)`` for every request.
    """

    def __init__(self, root: Path | str, cache_control: str | None = "no-store") -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(self.root)
        self.cache_control = cache_control
        self.extra_headers: dict[str, str] = {}
        self.requests: list[tuple[str, str, int]] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            extensions_map: ClassVar[dict[str, str]] = {
                **SimpleHTTPRequestHandler.extensions_map,
                **MIME_TYPES,
            }

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(server.root), **kwargs)

            def end_headers(self) -> None:
                if server.cache_control is not None:
                    self.send_header("Cache-Control", server.cache_control)
                for name, value in server.extra_headers.items():
                    self.send_header(name, value)
                super().end_headers()

            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                status = code if isinstance(code, int) else int(code) if str(code).isdigit() else 0
                server.requests.append((self.command, self.path, status))

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean; see `requests`

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # The browser dropping a connection mid-response is normal.
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name=f"static-server-{self.port}", daemon=True
        )
        self._thread.start()

    def url(self, path: str = "") -> str:
        """Absolute URL of ``path`` (relative to the served root; may carry ?query/#hash)."""
        return self.base_url + quote(path.lstrip("/"), safe="/?&=#%:+,;@")

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StaticServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(scope="session")
def serve_directory() -> Iterator[Callable[..., StaticServer]]:
    """Factory: ``serve_directory(path, cache_control="no-store") -> StaticServer``."""
    servers: list[StaticServer] = []

    def start(root: Path | str, cache_control: str | None = "no-store") -> StaticServer:
        server = StaticServer(root, cache_control)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def http_server(serve_directory: Callable[..., StaticServer]) -> StaticServer:
    """The repository root over HTTP (``http_server.url("web/webmcp/shim.js")``)."""
    return serve_directory(REPO_ROOT)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``<repo>/test-artifacts/`` (git-ignored), for screenshots and other outputs."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    return ARTIFACTS_DIR


# --------------------------------------------------------------------------- page log


@dataclass
class ConsoleEntry:
    type: str  # "log", "error", "warning", ...
    text: str
    url: str = ""


@dataclass(eq=False)
class PageLog:
    """What a page printed and threw. Lists cover the current test only."""

    console: list[ConsoleEntry] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    _allowed: list[re.Pattern[str]] = field(default_factory=list)

    @property
    def console_errors(self) -> list[str]:
        return [e.text for e in self.console if e.type == "error"]

    def allow_page_error(self, pattern: str) -> None:
        """Expect an uncaught error matching ``pattern`` (re.search) in this test."""
        self._allowed.append(re.compile(pattern))

    def unexpected_page_errors(self) -> list[str]:
        return [e for e in self.page_errors if not any(p.search(e) for p in self._allowed)]

    def begin_test(self) -> None:
        self.console.clear()
        self.page_errors.clear()
        self._allowed.clear()

    def attach(self, page: Any) -> None:
        def on_console(msg: Any) -> None:
            location = msg.location or {}
            self.console.append(ConsoleEntry(msg.type, msg.text, location.get("url", "")))

        def on_page_error(error: Any) -> None:
            stack = getattr(error, "stack", None)
            self.page_errors.append(stack or f"{getattr(error, 'name', 'Error')}: {error}")

        page.on("console", on_console)
        page.on("pageerror", on_page_error)


_live_logs: weakref.WeakSet[PageLog] = weakref.WeakSet()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for log in list(_live_logs):
        log.begin_test()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    result = yield
    log = getattr(item, "funcargs", {}).get("page_log")
    if isinstance(log, PageLog):
        errors = log.unexpected_page_errors()
        if errors:
            pytest.fail("uncaught error(s) in the page:\n" + "\n---\n".join(errors), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        page = getattr(item, "funcargs", {}).get("page")
        if page is not None:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)[-150:]
            with contextlib.suppress(Exception):
                ARTIFACTS_DIR.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS_DIR / f"{name}.png"), timeout=5000)
    return report


# --------------------------------------------------------------------------- Playwright


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """Playwright's sync API, started for one module (see the asyncio caveat above)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - dev dependency missing
        unavailable(f"the playwright package is not installed ({exc})")
    try:
        pw = sync_playwright().start()
    except Exception as exc:  # noqa: BLE001 - any failure to start means "unavailable"
        unavailable(f"Playwright did not start: {exc}")
    try:
        yield pw
    finally:
        pw.stop()


@pytest.fixture(scope="module", params=_selected_lanes())
def lane(request: pytest.FixtureRequest) -> str:
    """``"shim"`` or ``"native"``: which WebMCP the browser has (see module docstring)."""
    return str(request.param)


@pytest.fixture(scope="module")
def browser(playwright: Any, lane: str) -> Iterator[Any]:
    """Headless Chromium for ``lane``, one per module."""
    if not (os.path.isfile(CHROMIUM_BIN) or shutil.which(CHROMIUM_BIN)):
        unavailable(f"no Chromium at {CHROMIUM_BIN} (set CHROMIUM_BIN)")
    try:
        instance = playwright.chromium.launch(
            executable_path=CHROMIUM_BIN,
            headless=True,
            args=CHROMIUM_ARGS + LANES[lane],
            timeout=30_000,
        )
    except Exception as exc:  # noqa: BLE001 - any failure to launch means "unavailable"
        unavailable(f"Chromium did not start ({CHROMIUM_BIN}, lane {lane}): {exc}")
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture(scope="module")
def page_log() -> PageLog:
    log = PageLog()
    _live_logs.add(log)
    return log


@pytest.fixture(scope="module")
def page(browser: Any, page_log: PageLog) -> Iterator[Any]:
    """One page per module and lane; its console and errors go to ``page_log``."""
    context = browser.new_context()
    context.set_default_timeout(10_000)
    the_page = context.new_page()
    page_log.attach(the_page)
    try:
        yield the_page
    finally:
        context.close()
