"""The static HTTP server fixture that browser tests load pages from (no browser needed)."""

from __future__ import annotations

import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any

import pytest


def fetch(url: str) -> tuple[int, Message, bytes]:
    """Status, headers (case-insensitive) and body of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    for name in ["a.mjs", "a.js", "b.wasm", "c.json", "d.html", "e.whl", "f.zip", "g.py"]:
        (root / name).write_bytes(b"x")
    (root / "sub dir").mkdir()
    (root / "sub dir" / "h.txt").write_text("spaced")
    return root


def test_mime_types(serve_directory: Any, tree: Path) -> None:
    server = serve_directory(tree)
    types = {
        name: fetch(server.url(name))[1]["Content-Type"]
        for name in sorted(p.name for p in tree.iterdir() if p.is_file())
    }
    assert types["a.mjs"].startswith("text/javascript")
    assert types["a.js"].startswith("text/javascript")
    assert types["b.wasm"] == "application/wasm"
    assert types["c.json"] == "application/json"
    assert types["d.html"].startswith("text/html")
    assert types["e.whl"] == "application/zip"
    assert types["f.zip"] == "application/zip"
    assert types["g.py"].startswith("text/x-python")


def test_headers_are_settable_and_requests_recorded(serve_directory: Any, tree: Path) -> None:
    server = serve_directory(tree)
    assert server.base_url.startswith("http://127.0.0.1:")
    assert fetch(server.url("a.js"))[1]["Cache-Control"] == "no-store"
    server.cache_control = "public, max-age=60"
    server.extra_headers["Cross-Origin-Opener-Policy"] = "same-origin"
    _, headers, _ = fetch(server.url("a.js"))
    assert headers["Cache-Control"] == "public, max-age=60"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    server.cache_control = None
    assert "Cache-Control" not in fetch(server.url("a.js"))[1]
    status, _, body = fetch(server.url("sub dir/h.txt"))
    assert (status, body) == (200, b"spaced")
    assert fetch(server.url("missing.js"))[0] == 404
    assert ("GET", "/missing.js", 404) in server.requests
    assert ("GET", "/sub%20dir/h.txt", 200) in server.requests


def test_http_server_serves_the_repository(http_server: Any) -> None:
    status, headers, body = fetch(http_server.url("web/webmcp/shim.js"))
    assert status == 200
    assert headers["Content-Type"].startswith("text/javascript")
    assert b"export function installShim" in body
