"""``python -m pysite_agent demo``: build the self-hosted bundle (cached) and serve the demo shop.

CPython only; nothing here runs in the browser. The site it serves is an overlay of two
folders, first match wins:

1. the bundle (``loader.js``, ``web/``, ``pyodide/``), built by
   :func:`pysite_agent.bundle.build_bundle` into ``<cache>/demo-bundle``;
2. ``examples/`` of the checkout (``demo-shop.html`` and its files).

``/`` is ``examples/demo-shop.html``, so the page's relative URLs (``demo-shop.js``,
``../loader.js``) land on the overlay's root. The first run reaches PyPI and the npm registry
(through ``build_bundle``); later runs need no network. The server binds to loopback by default
and sends ``Cache-Control: no-cache`` (browsers revalidate, and get ``304 Not Modified``).
A file with a precompressed copy beside it (``NAME.br``, ``NAME.gz``: the bundle writes them)
is sent as that copy with ``Content-Encoding`` when ``Accept-Encoding`` allows, and with
``Vary: Accept-Encoding`` either way.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

DEFAULT_PORT = 5180
DEFAULT_HOST = "127.0.0.1"
INDEX_PAGE = "demo-shop.html"

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".py": "text/x-python; charset=utf-8",
    ".svg": "image/svg+xml",
}

PostHandler = Callable[[bytes, Mapping[str, str]], tuple[int, Any]]
"""``handler(body, headers) -> (status, json_value)`` for a POST route (tests use it)."""


class DemoError(RuntimeError):
    """The demo cannot start (no examples folder, port in use); the message says what to do."""


def examples_dir() -> Path:
    """The checkout's ``examples/`` folder.

    Raises:
        DemoError: the package runs from an installed wheel, which has no examples.
    """
    from pysite_agent.bundle import checkout_root

    root = checkout_root()
    folder = root / "examples" if root is not None else None
    if folder is None or not (folder / INDEX_PAGE).is_file():
        raise DemoError(
            "the demo needs a checkout of pysite-agent (examples/demo-shop.html was not found); "
            "clone the repository and run `bash .ci/demo` there"
        )
    return folder


def build_demo_bundle(
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], object] = print,
    *,
    include_local_model: bool = False,
) -> Path:
    """Build (or refresh from the cache) the bundle the demo serves; returns its folder.
    ``include_local_model`` adds the in-page model (engine and SmolLM2-135M as Q8_0, 145 MB;
    made from the pinned Q4_1 file with the ``local-model`` extra, then cached)."""
    from pysite_agent.bundle import build_bundle, default_cache_dir

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    report = build_bundle(
        cache / "demo-bundle",
        cache_dir=cache,
        progress=progress,
        include_local_model=include_local_model,
    )
    return report.out_dir


class DemoServer(ThreadingHTTPServer):
    """Serves an overlay of folders (first match wins); ``/`` is :data:`INDEX_PAGE`.

    Attributes:
        roots: the folders, in lookup order.
        post_routes: extra ``POST`` endpoints, ``{path: handler}`` (see :data:`PostHandler`).
        requests: ``(method, path, status)`` of every request, in order.
        cache_control: the ``Cache-Control`` header of every response (default ``no-cache``:
            browsers revalidate and get ``304 Not Modified``).
        cross_origin_isolated: also send ``Cross-Origin-Opener-Policy: same-origin`` and
            ``Cross-Origin-Embedder-Policy: require-corp``, so the page is cross-origin
            isolated and the in-page model runs on several threads (docs/local-model.md).
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        roots: Iterable[str | os.PathLike[str]],
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        post_routes: Mapping[str, PostHandler] | None = None,
        cache_control: str = "no-cache",
        cross_origin_isolated: bool = False,
    ) -> None:
        self.roots = [Path(r).resolve() for r in roots]
        self.cache_control = cache_control
        self.cross_origin_isolated = cross_origin_isolated
        self.post_routes = dict(post_routes or {})
        self.requests: list[tuple[str, str, int]] = []
        self._thread: threading.Thread | None = None
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise DemoError(f"{port!r} is not a TCP port: use a whole number from 0 to 65535")
        try:
            super().__init__((host, port), _Handler)
        except OSError as exc:
            raise DemoError(_listen_problem(host, port, exc)) from None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        return f"http://{shown}:{port}/"

    def find(self, url_path: str) -> Path | None:
        """The file for ``url_path`` in the first root that has it (never outside a root)."""
        rel = unquote(urlsplit(url_path).path).lstrip("/")
        if rel in ("", "index.html"):
            rel = INDEX_PAGE
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            return None
        for root in self.roots:
            candidate = root.joinpath(*parts)
            try:
                candidate.resolve().relative_to(root)
            except ValueError:
                continue
            if candidate.is_file():
                return candidate
        return None

    def start(self) -> DemoServer:
        """Serve from a background thread (tests); returns ``self``."""
        self._thread = threading.Thread(target=self.serve_forever, name="demo-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a dropped connection is normal
            super().handle_error(request, client_address)


class _Handler(SimpleHTTPRequestHandler):
    server: DemoServer
    _encoding: str | None = None  # the Content-Encoding of the copy being sent
    _variants = False  # the file has precompressed copies: the answer varies

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}
        super().__init__(*args, **kwargs)

    def send_head(self) -> Any:
        from pysite_agent.bundle import ENCODINGS, negotiate

        self._encoding, self._variants = None, False
        found = self.server.find(self.path)
        if found is not None:
            on_disk = {
                token
                for token, suffix in ENCODINGS.items()
                if found.with_name(found.name + suffix).is_file()
            }
            self._variants = bool(on_disk)
            self._encoding = negotiate(self.headers.get("Accept-Encoding"), on_disk)
        return super().send_head()

    def translate_path(self, path: str) -> str:
        found = self.server.find(path)
        if found is None:
            return str(self.server.roots[0] / ".missing" / "404")
        if self._encoding is not None:
            from pysite_agent.bundle import ENCODINGS

            return str(found.with_name(found.name + ENCODINGS[self._encoding]))
        return str(found)

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        if self._encoding is not None:  # the type of the file it stands for
            path = os.fspath(path).rsplit(".", 1)[0]
        return super().guess_type(path)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", self.server.cache_control)
        if self.server.cross_origin_isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        if self._variants:
            self.send_header("Vary", "Accept-Encoding")
        if self._encoding is not None:
            self.send_header("Content-Encoding", self._encoding)
        super().end_headers()

    def do_POST(self) -> None:
        handler = self.server.post_routes.get(urlsplit(self.path).path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if handler is None:
            status, value = 404, {"error": {"code": "not-found", "message": "no such endpoint"}}
        else:
            status, value = handler(body, dict(self.headers.items()))
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = code if isinstance(code, int) else int(code) if str(code).isdigit() else 0
        self.server.requests.append((self.command, self.path, status))
        if os.environ.get("PYSITE_DEMO_LOG"):
            super().log_request(code, size)

    def log_message(self, format: str, *args: Any) -> None:
        if os.environ.get("PYSITE_DEMO_LOG"):
            super().log_message(format, *args)


def _listen_problem(host: str, port: int, exc: OSError) -> str:
    """What to do when the demo cannot listen: a host problem or a port problem."""
    if isinstance(exc, socket.gaierror):
        return (
            f"cannot resolve the host {host!r} ({exc.strerror}): pass --host with a name or "
            "address of this machine, such as 127.0.0.1"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"the host {host!r} is not an address of this machine: pass --host with one of its "
            "addresses, such as 127.0.0.1"
        )
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use on {host}: pass another --port"
    if exc.errno == errno.EACCES:
        return f"port {port} needs privileges on this machine: pass a --port above 1023"
    return f"cannot listen on {host}:{port} ({exc.strerror or exc})"


def main(
    *,
    port: int = DEFAULT_PORT,
    host: str = DEFAULT_HOST,
    cache_dir: str | None = None,
    build: bool = True,
    local_model: bool = False,
) -> int:
    """Build the bundle, then serve the demo until Ctrl-C. Returns the exit status.

    Errors are printed (no traceback) with what to do: no checkout, a port in use, or a
    failed download on the first run.
    """
    from pysite_agent.bundle import BUILD_ERRORS

    try:
        examples = examples_dir()
        if build:
            bundle = build_demo_bundle(
                cache_dir,
                progress=lambda msg: print(f"demo: {msg}"),
                include_local_model=local_model,
            )
        else:
            from pysite_agent.bundle import default_cache_dir

            base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            bundle = base / "demo-bundle"
        server = DemoServer(
            [bundle, examples], host=host, port=port, cross_origin_isolated=local_model
        )
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    except BUILD_ERRORS as exc:  # a download or build failure on the first run
        print(f"demo: could not build the bundle: {exc}", file=sys.stderr)
        return 1
    print(f"demo: serving the demo shop at {server.url}  (Ctrl-C stops)", flush=True)
    print(
        "demo: open it in a browser, click 'Ask the shop' and type 'add two mugs to my cart' "
        "(it uses demo rules, not AI, unless you pick another model under Assistant settings).",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\ndemo: stopped")
    finally:
        server.server_close()
    return 0


def port_number(text: str) -> int:
    """An ``argparse`` type: a TCP port from 0 to 65535 (0: the system picks a free one)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a TCP port: use a whole number from 0 to 65535"
        )
    return value


def add_command(sub: Any) -> None:
    """Register ``demo`` on ``sub`` (an ``argparse`` sub-parsers action)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="build the bundle (cached) and serve the demo shop on http://localhost:5180/",
        description=(
            "Build the self-hosted bundle (the first run downloads Pyodide and the wheels from "
            "the npm registry and PyPI into the cache; later runs are offline) and serve the "
            "demo shop with <site-agent> at http://localhost:PORT/. Ctrl-C stops it."
        ),
    )
    p.add_argument(
        "--port", type=port_number, default=5180, help="TCP port, 0 to 65535 (default 5180)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="download and bundle cache (default as for `bundle`)",
    )
    p.add_argument(
        "--no-build",
        action="store_true",
        help="serve the bundle built by an earlier run as it is",
    )
    p.add_argument(
        "--with-local-model",
        action="store_true",
        help="also bundle SmolLM2-135M (Q8_0, 145 MB, made once; needs "
        "pysite-agent[local-model]) and serve the page cross-origin isolated, so 'The site's "
        "own model' runs in the browser on two threads",
    )
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return main(
        port=args.port,
        host=args.host,
        cache_dir=args.cache,
        build=not args.no_build,
        local_model=args.with_local_model,
    )
