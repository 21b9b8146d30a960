"""Bytecode inside the bundle's wheels: an unchecked ``NAME.pyc`` beside each ``NAME.py``.

A first visit's Python imports its modules straight from the wheels: ``web/runtime/boot.js``
puts the wheel files themselves on ``sys.path`` (as after a snapshot's restore), so
``zipimport`` reads them, and with source-only wheels every first start compiles each module
it imports (``pysite_agent``, jsonschema, referencing, attrs, ...). ``zipimport`` takes a
``NAME.pyc`` beside ``NAME.py`` first, as in the standard library's zip
(:mod:`~pysite_agent.bundle._stdlib`), so each pure-Python wheel of the bundle gets one for
every ``.py`` outside its ``.dist-info`` and ``.data`` folders: an *unchecked* hash-based pyc
(PEP 552), never checked against the source. The sources stay, so tracebacks show their lines.
A wheel unpacked into ``site-packages`` instead (``bootPython({snapshot: false})``, which uses
``loadPackage``, or pip) imports from the sources as before: the file system's finder takes
``NAME.py`` first and looks for bytecode in ``__pycache__`` only.

- Compiled by Pyodide's own CPython under Node 20+ (the bytecode of the browser's Python, not
  the build machine's), in one Node run for all the wheels the cache does not hold.
- ``RECORD`` lists each pyc with its sha256 and size (the wheel format, PEP 427/376); the lock's
  sha256 is computed afterwards from the rewritten file (:mod:`~pysite_agent.bundle._lock`).
- A module this Python cannot compile (a ``SyntaxError``) keeps its source only, as do the
  CPython-only folders of :data:`SOURCE_ONLY`; a wheel that already holds a pyc at that path
  keeps its own.
- Deterministic: entries keep the wheel's order, each pyc right after its source with the
  source's date and attributes; the same inputs give the same bytes (a test builds twice).
- Cached per wheel in ``<cache>/wheel-bytecode/<key>.whl``, ``key`` the sha256 of the wheel,
  Pyodide's ``pyodide.asm.mjs``/``.wasm`` and the script, checked by its own sha256 on reuse:
  a rebuild with unchanged wheels starts no Node.
- Without Node 20+ the cache's copies are used; when a wheel has none, the build says so in one
  line and ships the wheels as they are.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pysite_agent.bundle import _compress, _fetch, _stdlib

CACHE_FOLDER = "wheel-bytecode"
"""The cache's folder for rewritten wheels."""

SOURCE_ONLY = ("pysite_agent/server/", "pysite_agent/bundle/")
"""Folders inside wheels that get no bytecode: CPython-only code the page never imports (the
proxy server, import-linter's "The server is CPython only" contract; this bundle tooling)."""

WHEEL_DIR = "/lib/pysite-agent/wheels"
"""Where ``web/runtime/boot.js`` writes the wheels in the page's file system (its
``WHEEL_DIR``): each module's code is compiled with the file name zipimport gives it there,
``WHEEL_DIR/WHEEL_FILE/NAME.py``, as if compiled in the page, so a traceback names the file the
module came from and ``linecache`` reads its source from the wheel."""

#: Run by Node: argv = [Pyodide's folder with a trailing slash, its lock file, input folder,
#: output folder, JSON [wheel file names, SOURCE_ONLY, WHEEL_DIR]]. Python reads
#: /tmp/in/NAME and writes /tmp/out/NAME (a backslash in the Python code is doubled: it is a
#: JavaScript template).
_SCRIPT = r"""
import { readFileSync, writeFileSync } from "node:fs";
const [base, lockFile, inDir, outDir, namesJSON] = process.argv.slice(2);
const [names] = JSON.parse(namesJSON);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + base).href);
const py = await loadPyodide({ indexURL: base, lockFileURL: lockFile });
py.FS.mkdirTree("/tmp/in");
py.FS.mkdirTree("/tmp/out");
for (const name of names) py.FS.writeFile("/tmp/in/" + name, readFileSync(inDir + "/" + name));
py.globals.set("names_json", namesJSON);
py.runPython(`
import base64, hashlib, importlib.util, json, sys, zipfile
import importlib._bootstrap_external as ext


def digest(data):
    raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=')
    return 'sha256=' + raw.decode('ascii')

def add_bytecode(src, dst, where):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w') as zout:
        infos = zin.infolist()
        names = {i.filename for i in infos}
        records = [i for i in infos
                   if i.filename.count('/') == 1 and i.filename.endswith('.dist-info/RECORD')]
        if len(records) != 1:
            raise ValueError(src + ': expected one .dist-info/RECORD')
        record = records[0]
        rows = []
        for info in infos:
            if info.filename == record.filename:
                continue
            data = zin.read(info)
            zout.writestr(info, data)
            name = info.filename
            if not name.endswith('.py') or name.split('/')[0].endswith(('.dist-info', '.data')):
                continue
            if name.startswith(source_only):
                continue
            path = name + 'c'
            if path in names:
                continue
            try:
                code = compile(data, where + name, 'exec', dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            pyc = bytes(ext._code_to_hash_pyc(code, importlib.util.source_hash(data), False))
            entry = zipfile.ZipInfo(path, info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = info.external_attr
            entry.create_system = info.create_system
            zout.writestr(entry, pyc)
            rows.append(path + ',' + digest(pyc) + ',' + str(len(pyc)))
        kept = [r for r in zin.read(record).decode('utf-8').splitlines()
                if r and not r.startswith(record.filename + ',')]
        text = '\\n'.join(kept + rows + [record.filename + ',,']) + '\\n'
        zout.writestr(record, text.encode('utf-8'))

wheels, source_only, wheel_dir = json.loads(names_json)
source_only = tuple(source_only)
for name in wheels:
    add_bytecode('/tmp/in/' + name, '/tmp/out/' + name, wheel_dir + '/' + name + '/')
`);
for (const name of names) writeFileSync(outDir + "/" + name, py.FS.readFile("/tmp/out/" + name));
"""


def cache_key(pyodide_dir: Path, wheel: Path) -> str:
    """sha256 (hex) of what ``wheel``'s rewritten copy is made from; ``OSError`` for a missing
    file."""
    digest = hashlib.sha256(_SCRIPT.encode("utf-8"))
    for path in (pyodide_dir / "pyodide.asm.mjs", pyodide_dir / "pyodide.asm.wasm", wheel):
        digest.update(f"\0{path.name}\0{_fetch.sha256_file(path)}".encode())
    return digest.hexdigest()


def add_bytecode(
    pyodide_dir: Path,
    cache: Path,
    progress: Callable[[str], object],
    *,
    lock: Mapping[str, Any] | None = None,
    node: str | None = None,
) -> list[str] | None:
    """Rewrite every ``*.whl`` in ``pyodide_dir`` with its bytecode (see the module's text);
    returns the wheels' file names, or None when no Node 20+ is found and some wheel is not in
    the cache (said in one line through ``progress``; the wheels are then left as they are).

    ``pyodide_dir`` must hold Pyodide's core files, and its ``pyodide-lock.json`` unless
    ``lock`` is given (Pyodide's own lock, as parsed: the bundle's is written afterwards). Raises
    :class:`~pysite_agent.bundle._stdlib.PrecompileError` when Node fails (the end of its
    stderr in the message), ``OSError`` for the disk or a Node that cannot be started.
    """
    wheels = sorted(pyodide_dir.glob("*.whl"))
    entries = {w.name: cache / CACHE_FOLDER / f"{cache_key(pyodide_dir, w)}.whl" for w in wheels}
    done: dict[str, bytes] = {}
    for wheel in wheels:
        packed = _compress._cached(entries[wheel.name])
        if packed is not None:
            done[wheel.name] = packed
    missing = [w.name for w in wheels if w.name not in done]
    if missing:
        if node is None:
            node, why = _stdlib.node_executable()
            if node is None:
                progress(
                    f"wheels: {why}; shipping them without bytecode (a slower first start; "
                    "Node 20+ adds it)"
                )
                return None
        progress(f"wheels: compiling the bytecode of {len(missing)} with Pyodide under Node")
        with tempfile.TemporaryDirectory(prefix="pysite-wheels-") as tmp:
            lock_file = pyodide_dir / "pyodide-lock.json"
            if lock is not None:
                lock_file = Path(tmp) / "pyodide-lock.json"
                lock_file.write_text(json.dumps(lock), encoding="utf-8")
            out_dir = Path(tmp) / "out"
            out_dir.mkdir()
            _stdlib.run_script(
                node,
                _SCRIPT,
                [
                    str(pyodide_dir.resolve()) + "/",
                    str(lock_file.resolve()),
                    str(pyodide_dir.resolve()),
                    str(out_dir),
                    json.dumps([missing, SOURCE_ONLY, WHEEL_DIR]),
                ],
                "the wheels' bytecode",
            )
            for name in missing:
                out = out_dir / name
                if not out.is_file():
                    raise _stdlib.PrecompileError(f"compiling {name}'s bytecode wrote no file")
                packed = out.read_bytes()
                entries[name].parent.mkdir(parents=True, exist_ok=True)
                _compress._store(entries[name], packed)
                done[name] = packed
    for wheel in wheels:
        part = wheel.with_name(f".{wheel.name}.part")
        part.write_bytes(done[wheel.name])
        part.replace(wheel)  # a new file: a hard link into the cache is never written through
    return [w.name for w in wheels]
