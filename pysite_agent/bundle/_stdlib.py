"""Pyodide's standard library with its bytecode: ``pyodide/python_stdlib_pyc.zip``.

Pyodide's ``python_stdlib.zip`` holds only ``.py`` sources, so a start compiles every module
it imports (on a loaded two-core machine ``loadPyodide`` took 11.5 s cold with it, 4.0 s with
this copy: ``benchmarks/precompiled_stdlib.py``, ``docs/performance.md``). The copy is made by
Pyodide itself under Node 20+ (the same CPython 3.14 as in the browser, so the same bytecode):
beside each ``NAME.py`` an unchecked hash-based ``NAME.pyc`` (PEP 552; ``zipimport`` takes
``NAME.pyc`` first and, unchecked, never reads the source to validate it). The sources stay,
so tracebacks show their lines.

- Deterministic: each ``.pyc`` gets its source's zip entry (date, attributes, deflate), entries
  keep the source zip's order, and hash-based pycs hold no timestamp: the same inputs give
  the same bytes (a test builds twice).
- Cached in ``<cache>/stdlib/<key>.zip``, ``key`` the sha256 of the inputs (the source zip,
  Pyodide's ``pyodide.asm.mjs``/``.wasm``, the build script), and checked by its own sha256
  on reuse: a rebuild with unchanged inputs starts no Node.
- Without Node 20+ (``node`` on ``PATH``, or ``$PYSITE_AGENT_NODE``) the build says so in one
  line and the bundle ships the plain zip.

The page learns of the copy from the bundle's lock (:func:`lock_entry`, read by
``web/runtime/boot.js``, which passes it to ``loadPyodide`` as ``stdLibURL``); the lock's text
is part of the snapshot key, so a snapshot is never restored over another standard library.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from pysite_agent.bundle import _compress, _fetch, _pins

FILE_NAME = "python_stdlib_pyc.zip"
"""The copy's name in the bundle's ``pyodide/`` folder."""

LOCK_KEY = "pysite_agent"
"""The lock's top-level key whose ``stdlib`` entry names the copy (Pyodide ignores it)."""

MIN_NODE = 20


class PrecompileError(RuntimeError):
    """Node ran but did not make the copy (the message holds the end of its stderr)."""


_TIMEOUT = 900.0

#: Run by Node: argv = [Pyodide's folder URL-ish path with a trailing slash, output file].
_SCRIPT = r"""
import { writeFileSync } from "node:fs";
const [base, out] = process.argv.slice(2);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + base).href);
const py = await loadPyodide({ indexURL: base });
py.runPython(`
import importlib._bootstrap_external as ext
import importlib.util
import zipfile

src = zipfile.ZipFile('/lib/python314.zip')
out = zipfile.ZipFile('/tmp/out.zip', 'w')
for info in src.infolist():
    data = src.read(info.filename)
    if info.filename.endswith('.py'):
        code = compile(data, '/lib/python314.zip/' + info.filename, 'exec', dont_inherit=True)
        pyc = zipfile.ZipInfo(info.filename + 'c', info.date_time)
        pyc.compress_type = zipfile.ZIP_DEFLATED
        pyc.external_attr = info.external_attr
        pyc.create_system = info.create_system
        pyc_data = ext._code_to_hash_pyc(code, importlib.util.source_hash(data), False)
        out.writestr(pyc, bytes(pyc_data))
    out.writestr(info, data)
out.close()
`);
writeFileSync(out, py.FS.readFile("/tmp/out.zip"));
"""


def node_executable() -> tuple[str | None, str]:
    """``(path, "")`` of a Node 20+ to run, else ``(None, why)`` (one short clause)."""
    node = os.environ.get("PYSITE_AGENT_NODE") or shutil.which("node")
    if not node:
        return None, "Node is not on PATH"
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{node} does not run ({exc})"
    match = re.fullmatch(r"v(\d+)\.\d+\.\d+\S*", done.stdout.strip())
    if done.returncode != 0 or match is None:
        return None, f"{node} --version said {done.stdout.strip() or done.stderr.strip()!r}"
    if int(match.group(1)) < MIN_NODE:
        return None, f"{node} is {done.stdout.strip()}, older than {MIN_NODE}"
    return node, ""


def cache_key(pyodide_dir: Path) -> str:
    """sha256 of what the copy is made from (hex); raises ``OSError`` for a missing file."""
    digest = hashlib.sha256(_SCRIPT.encode("utf-8"))
    for name in ("python_stdlib.zip", "pyodide.asm.mjs", "pyodide.asm.wasm"):
        digest.update(f"\0{name}\0{_fetch.sha256_file(pyodide_dir / name)}".encode("ascii"))
    return digest.hexdigest()


def add_precompiled(
    pyodide_dir: Path,
    cache: Path,
    progress: Callable[[str], object],
    *,
    node: str | None = None,
) -> Path | None:
    """Write ``pyodide_dir / FILE_NAME`` from ``pyodide_dir``'s Pyodide; returns it, or None
    when no Node 20+ is found (said in one line through ``progress``; the bundle then ships
    the plain zip only).

    ``pyodide_dir`` must hold Pyodide's core files with the pinned ``python_stdlib.zip``
    (:data:`~pysite_agent.bundle._pins.PYODIDE_STDLIB_SHA256`). Raises
    :class:`~pysite_agent.bundle._fetch.IntegrityError` for another zip,
    :class:`PrecompileError` when Node fails (the end of its stderr in the message),
    ``OSError`` for the disk or a Node that cannot be started.
    """
    plain = pyodide_dir / "python_stdlib.zip"
    have = _fetch.sha256_file(plain)
    if have != _pins.PYODIDE_STDLIB_SHA256:
        raise _fetch.IntegrityError(
            f"{plain}: sha256 {have} differs from the pinned {_pins.PYODIDE_STDLIB_SHA256}"
        )
    entry = cache / "stdlib" / f"{cache_key(pyodide_dir)}.zip"
    target = pyodide_dir / FILE_NAME
    packed = _compress._cached(entry)
    if packed is None:
        if node is None:
            node, why = node_executable()
            if node is None:
                progress(
                    f"standard library: {why}; shipping it without bytecode (a slower first "
                    "start; Node 20+ adds it)"
                )
                return None
        progress("standard library: compiling its bytecode with Pyodide under Node")
        packed = _compile(node, pyodide_dir)
        entry.parent.mkdir(parents=True, exist_ok=True)
        _compress._store(entry, packed)
    target.write_bytes(packed)
    return target


def _compile(node: str, pyodide_dir: Path) -> bytes:
    with tempfile.TemporaryDirectory(prefix="pysite-stdlib-") as tmp:
        out = Path(tmp) / FILE_NAME
        run_script(
            node, _SCRIPT, [str(pyodide_dir.resolve()) + "/", str(out)], "the standard library"
        )
        if not out.is_file():
            raise PrecompileError("compiling the standard library wrote no file")
        return out.read_bytes()


def run_script(node: str, script: str, args: list[str], what: str) -> None:
    """Run the ES module ``script`` under ``node`` with ``args``; ``what`` names the work in
    errors. Raises :class:`PrecompileError` after a non-zero exit (the end of its stderr in the
    message) or :data:`_TIMEOUT` seconds, ``OSError`` for a Node that cannot be started."""
    with tempfile.TemporaryDirectory(prefix="pysite-node-") as tmp:
        path = Path(tmp) / "script.mjs"
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run(
                [node, str(path), *args],
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise PrecompileError(f"compiling {what} took more than {_TIMEOUT:.0f} s") from None
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise PrecompileError(f"compiling {what} failed (Node exit {done.returncode}): {tail}")


def lock_entry(path: Path) -> dict[str, dict[str, str]]:
    """What the bundle's lock gets under :data:`LOCK_KEY` for the copy at ``path``:
    ``{"stdlib": {"file_name", "sha256", "source_sha256"}}`` (file name relative to the lock)."""
    return {
        "stdlib": {
            "file_name": path.name,
            "sha256": _fetch.sha256_file(path),
            "source_sha256": _pins.PYODIDE_STDLIB_SHA256,
        }
    }
