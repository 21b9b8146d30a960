"""Precompressed copies (``.gz``, ``.br``) beside the bundle's big text and wasm files.

A static host that knows them (nginx ``gzip_static``/``brotli_static``, Caddy
``file_server { precompressed }``, ``python -m pysite_agent demo``) sends ``NAME.br`` or
``NAME.gz`` with ``Content-Encoding`` when the browser's ``Accept-Encoding`` allows it, so a
first visit downloads about 3.5 MB for ``pyodide.asm.wasm`` instead of 9.6 MB, with no
compression work per request. ``docs/bundle.md`` lists how common hosts serve them.

- gzip: Python's :mod:`gzip` at level 9 with ``mtime=0`` (byte-identical on every build).
- brotli: PyPI ``brotli`` (the ``bundle`` extra, pinned) at quality 11; without it only
  ``.gz`` files are written, and the build says so once.
- Which files: :data:`COMPRESSIBLE` suffixes of at least :data:`MIN_SIZE` bytes whose
  compressed copy is smaller; wheels and ``python_stdlib.zip`` are compressed already.
- Compressing the 9.6 MB wasm at brotli's quality 11 takes tens of seconds, so every result
  is kept in the cache (``<cache>/compressed/<sha256 of the input>.<br|gz>``) and checked by
  its own sha256 on reuse: a rebuild with unchanged inputs does no compression work.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

COMPRESSIBLE = (".js", ".mjs", ".wasm", ".json", ".html", ".css", ".svg", ".txt", ".map")
"""File name endings that get precompressed copies."""

MIN_SIZE = 1024
"""Smaller files are left alone: a header costs more than compression saves."""

ENCODINGS = {"br": ".br", "gzip": ".gz"}
"""``Content-Encoding`` token -> file name suffix, in the order a server should prefer them."""

_GZIP_LEVEL = 9
_BROTLI_QUALITY = 11


def _brotli() -> Any:
    try:
        import brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    return brotli


def brotli_available() -> bool:
    """True when PyPI ``brotli`` is importable (``pip install 'pysite-agent[bundle]'``)."""
    return _brotli() is not None


def _compressors() -> dict[str, Callable[[bytes], bytes]]:
    found: dict[str, Callable[[bytes], bytes]] = {}
    module = _brotli()
    if module is not None:
        version = getattr(module, "__version__", "0")
        found[f".br.{version}.q{_BROTLI_QUALITY}"] = lambda data: bytes(
            module.compress(data, quality=_BROTLI_QUALITY)
        )
    found[f".gz.l{_GZIP_LEVEL}"] = lambda data: gzip.compress(data, _GZIP_LEVEL, mtime=0)
    return found


def _candidates(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in COMPRESSIBLE and path.stat().st_size >= MIN_SIZE:
            yield path


def precompress(folder: Path, cache: Path, progress: Callable[[str], object]) -> list[Path]:
    """Write ``NAME.br`` (when brotli is installed) and ``NAME.gz`` beside each candidate file
    under ``folder``; returns the files written.

    Results come from ``cache / "compressed"`` when an earlier build made them for the same
    bytes (checked by sha256); a damaged cache entry is made again. Raises ``OSError`` when
    the folder or the cache cannot be written.
    """
    store = cache / "compressed"
    store.mkdir(parents=True, exist_ok=True)
    compressors = _compressors()
    if not any(key.startswith(".br") for key in compressors):
        progress("brotli is not installed: writing .gz copies only (pip install 'brotli')")
    written: list[Path] = []
    for path in _candidates(folder):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        for key, compress in compressors.items():
            suffix = key[:3]
            entry = store / f"{digest}{key}"
            packed = _cached(entry)
            if packed is None:
                packed = compress(data)
                _store(entry, packed)
            if len(packed) < len(data):
                target = path.with_name(path.name + suffix)
                target.write_bytes(packed)
                written.append(target)
    return written


def _cached(entry: Path) -> bytes | None:
    """The cached result, or None when absent or damaged (its sha256 file disagrees)."""
    check = entry.with_name(entry.name + ".sha256")
    try:
        packed = entry.read_bytes()
        expected = check.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return packed if hashlib.sha256(packed).hexdigest() == expected else None


def _store(entry: Path, packed: bytes) -> None:
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.part")
    tmp.write_bytes(packed)
    tmp.replace(entry)
    entry.with_name(entry.name + ".sha256").write_text(
        hashlib.sha256(packed).hexdigest() + "\n", encoding="ascii"
    )


def negotiate(accept_encoding: str | None, available: set[str]) -> str | None:
    """The ``Content-Encoding`` to send, given the request's ``Accept-Encoding`` and the
    encodings on disk (tokens of :data:`ENCODINGS`); None for the file as it is.

    HTTP's rules for ``Accept-Encoding``: tokens are case-insensitive, ``q=0`` refuses one, ``*``
    stands for any not named; among acceptable ones the highest q wins, ties going to
    :data:`ENCODINGS`' order (brotli first).
    """
    if not accept_encoding:
        return None
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        token, _, params = item.strip().partition(";")
        token = token.strip().lower()
        if not token:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        weights[token] = q
    best: tuple[float, int] | None = None
    chosen: str | None = None
    for rank, token in enumerate(ENCODINGS):
        if token not in available:
            continue
        q = weights.get(token, weights.get("*", 0.0))
        if q <= 0:
            continue
        key = (q, -rank)
        if best is None or key > best:
            best, chosen = key, token
    return chosen
