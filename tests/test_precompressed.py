"""Precompressed copies in the bundle (``NAME.br``, ``NAME.gz``) and the demo server sending them.

Real files in a temporary folder, a real :class:`DemoServer` on 127.0.0.1, requests with
``http.client`` so that nothing decodes the body behind the test's back.
"""

from __future__ import annotations

import gzip
import http.client
from collections.abc import Iterator
from pathlib import Path

import brotli
import pytest

from pysite_agent.bundle import _compress
from pysite_agent.bundle._compress import negotiate
from pysite_agent.cli.demo import DemoServer

BOTH = {"br", "gzip"}


@pytest.mark.parametrize(
    ("header", "available", "expected"),
    [
        ("gzip, deflate, br, zstd", BOTH, "br"),  # Chromium's header
        ("gzip, deflate", BOTH, "gzip"),
        ("br;q=0.5, gzip", BOTH, "gzip"),  # a higher q wins over the preferred order
        ("BR", BOTH, "br"),  # tokens are case-insensitive
        ("br;q=0, gzip;q=0", BOTH, None),  # q=0 refuses
        ("*", BOTH, "br"),
        ("*;q=0.1, br;q=0", BOTH, "gzip"),
        ("identity", BOTH, None),
        ("", BOTH, None),
        (None, BOTH, None),
        ("br, gzip", {"gzip"}, "gzip"),  # only what is on disk
        ("br", set(), None),
        ("br;q=x", BOTH, None),  # a broken q counts as a refusal
    ],
)
def test_negotiate(header: str | None, available: set[str], expected: str | None) -> None:
    assert negotiate(header, available) == expected


def _tree(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "web").mkdir(parents=True)
    (site / "web" / "big.js").write_text("console.log('hello');\n" * 400, encoding="utf-8")
    (site / "web" / "small.js").write_text("export {};\n", encoding="utf-8")
    (site / "lib.wasm").write_bytes(b"\0asm" + bytes(range(256)) * 40)
    (site / "already.zip").write_bytes(b"PK" + bytes(4000))
    (site / "random.json").write_bytes(bytes((i * 7919) % 251 for i in range(3000)))
    return site


def test_precompress_writes_decodable_copies_of_big_text_files_only(tmp_path: Path) -> None:
    site = _tree(tmp_path)
    written = _compress.precompress(site, tmp_path / "cache", progress=lambda _m: None)
    names = sorted(p.relative_to(site).as_posix() for p in written)
    assert "web/big.js.br" in names and "web/big.js.gz" in names
    assert "lib.wasm.br" in names and "lib.wasm.gz" in names
    assert not any(n.startswith(("web/small.js", "already.zip")) for n in names)
    original = (site / "web" / "big.js").read_bytes()
    assert brotli.decompress((site / "web" / "big.js.br").read_bytes()) == original
    assert gzip.decompress((site / "web" / "big.js.gz").read_bytes()) == original
    for path in written:  # a copy is only kept when it is smaller
        assert path.stat().st_size < path.with_suffix("").stat().st_size


def test_precompress_is_byte_identical_and_reuses_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _tree(tmp_path / "a")
    _compress.precompress(first, cache, progress=lambda _m: None)
    entries = sorted((cache / "compressed").iterdir())
    assert entries
    # A damaged entry is made again, not used.
    damaged = next(p for p in entries if p.name.endswith(".gz.l9"))
    damaged.write_bytes(b"not gzip")
    second = _tree(tmp_path / "b")
    _compress.precompress(second, cache, progress=lambda _m: None)
    for path in first.rglob("*"):
        if path.suffix in (".br", ".gz"):
            twin = second / path.relative_to(first)
            assert twin.read_bytes() == path.read_bytes(), path.name
    assert damaged.read_bytes() != b"not gzip"


def test_without_brotli_only_gzip_copies_and_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_compress, "_brotli", lambda: None)
    said: list[str] = []
    written = _compress.precompress(_tree(tmp_path), tmp_path / "cache", progress=said.append)
    assert written and all(p.suffix == ".gz" for p in written)
    assert any("brotli is not installed" in m for m in said)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[DemoServer, Path]]:
    site = _tree(tmp_path)
    _compress.precompress(site, tmp_path / "cache", progress=lambda _m: None)
    (site / "web" / "only-gz.js").write_text("x" * 3000, encoding="utf-8")
    (site / "web" / "only-gz.js.gz").write_bytes(gzip.compress(b"x" * 3000, mtime=0))
    server = DemoServer([site], port=0).start()
    yield server, site
    server.stop()


def _get(server: DemoServer, path: str, accept: str | None, method: str = "GET") -> tuple:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=10)
    headers = {} if accept is None else {"Accept-Encoding": accept}
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_demo_server_sends_the_brotli_copy_when_asked(served: tuple[DemoServer, Path]) -> None:
    server, site = served
    status, headers, body = _get(server, "/web/big.js", "gzip, deflate, br, zstd")
    assert status == 200
    assert headers["content-encoding"] == "br"
    assert headers["content-type"].startswith("text/javascript")
    assert headers["vary"] == "Accept-Encoding"
    assert int(headers["content-length"]) == len(body)
    assert brotli.decompress(body) == (site / "web" / "big.js").read_bytes()


def test_demo_server_falls_back_to_gzip_then_to_the_file(served: tuple[DemoServer, Path]) -> None:
    server, site = served
    status, headers, body = _get(server, "/lib.wasm", "gzip")
    assert (status, headers["content-encoding"]) == (200, "gzip")
    assert headers["content-type"] == "application/wasm"
    assert gzip.decompress(body) == (site / "lib.wasm").read_bytes()
    # Only a .gz on disk: a browser asking for br and gzip gets gzip.
    status, headers, body = _get(server, "/web/only-gz.js", "br, gzip")
    assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == b"x" * 3000
    # No Accept-Encoding: the file as it is, still marked as varying.
    status, headers, body = _get(server, "/web/big.js", None)
    assert status == 200 and "content-encoding" not in headers
    assert headers["vary"] == "Accept-Encoding"
    assert body == (site / "web" / "big.js").read_bytes()


def test_demo_server_leaves_files_without_copies_alone(served: tuple[DemoServer, Path]) -> None:
    server, site = served
    status, headers, body = _get(server, "/web/small.js", "br, gzip")
    assert status == 200 and "content-encoding" not in headers and "vary" not in headers
    assert body == (site / "web" / "small.js").read_bytes()
    status, headers, _ = _get(server, "/web/missing.js", "br, gzip")
    assert status == 404 and "content-encoding" not in headers


def test_demo_server_head_and_revalidation_keep_the_encoding(
    served: tuple[DemoServer, Path],
) -> None:
    server, _site = served
    status, headers, body = _get(server, "/web/big.js", "br", method="HEAD")
    assert status == 200 and headers["content-encoding"] == "br" and body == b""
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=10)
    conn.request(
        "GET",
        "/web/big.js",
        headers={"Accept-Encoding": "br", "If-Modified-Since": headers["last-modified"]},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 304
    assert response.getheader("Vary") == "Accept-Encoding"
