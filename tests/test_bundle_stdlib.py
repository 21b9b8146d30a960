"""The standard library with its bytecode (pysite_agent/bundle/_stdlib.py), with real Node and
the pinned Pyodide from the download cache (no network)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from bundle_support import CACHE, extract_core, fake_node, node

from pysite_agent.bundle import IntegrityError, _pins, _stdlib, build_bundle
from pysite_agent.cli import main


@pytest.fixture(scope="module")
def pyodide_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_core(tmp_path_factory.mktemp("pyodide"))


@pytest.fixture(scope="module")
def built(pyodide_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("cache-a")
    path = _stdlib.add_precompiled(pyodide_dir, cache, lambda _m: None, node=node())
    assert path is not None
    return path


def _run_pyodide(pyodide_dir: Path, stdlib: Path, code: str) -> str:
    script = pyodide_dir.parent / "run.mjs"
    script.write_text(
        """
const [base, stdlib, code] = process.argv.slice(2);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + base).href);
const py = await loadPyodide({ indexURL: base, stdLibURL: stdlib });
console.log(py.runPython(code));
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [node(), str(script), f"{pyodide_dir}/", str(stdlib), code],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_two_builds_are_byte_identical_and_hold_a_pyc_beside_each_source(
    built: Path, pyodide_dir: Path, tmp_path: Path
) -> None:
    import zipfile

    again = _stdlib.add_precompiled(pyodide_dir, tmp_path / "cache-b", print, node=node())
    assert again is not None
    assert again.read_bytes() == built.read_bytes()
    with zipfile.ZipFile(built) as zf, zipfile.ZipFile(pyodide_dir / "python_stdlib.zip") as src:
        names = zf.namelist()
        sources = [n for n in src.namelist() if n.endswith(".py")]
        assert len(sources) > 500
        assert set(names) == set(src.namelist()) | {n + "c" for n in sources}
        for name in sources:
            assert zf.read(name) == src.read(name)
            pyc = zf.read(name + "c")
            # PEP 552: flags 0b01 = hash-based, unchecked (0b10 clear).
            assert int.from_bytes(pyc[4:8], "little") == 0b01, name


def test_a_cached_rebuild_starts_no_node(built: Path, pyodide_dir: Path, tmp_path: Path) -> None:
    cache = built.parent.parent / "cache-c"
    first = _stdlib.add_precompiled(pyodide_dir, cache, print, node=node())
    assert first is not None
    first_bytes = first.read_bytes()
    first.unlink()
    # A node that cannot run: the copy must come from the cache.
    again = _stdlib.add_precompiled(pyodide_dir, cache, print, node=str(tmp_path / "no-node"))
    assert again is not None and again.read_bytes() == first_bytes
    # A damaged cache entry is made again (and a missing node is then reported).
    entry = next((cache / "stdlib").glob("*.zip"))
    entry.write_bytes(b"damaged")
    with pytest.raises(OSError):
        _stdlib.add_precompiled(pyodide_dir, cache, print, node=str(tmp_path / "no-node"))


def test_modules_load_from_the_bytecode_and_tracebacks_show_source_lines(
    built: Path, pyodide_dir: Path
) -> None:
    out = _run_pyodide(
        pyodide_dir,
        built,
        """
import json, json.decoder, traceback
try:
    json.loads('{')
except ValueError:
    text = traceback.format_exc()
import zipimport
loader = json.decoder.__spec__.loader
'|'.join([json.decoder.__file__, str(isinstance(loader, zipimport.zipimporter)), text])
""",
    )
    file, is_zip, text = out.strip().split("|", 2)
    # zipimport names the module after the file it loaded: the .pyc, not the source.
    assert is_zip == "True" and file == "/lib/python314.zip/json/decoder.pyc", out
    assert "obj, end = self.scan_once(s, idx)" in text, text  # a source line, from the .py
    assert 'File "/lib/python314.zip/json/decoder.py"' in text, text


def test_without_node_the_build_says_so_once_and_ships_the_plain_zip(
    pyodide_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYSITE_AGENT_NODE", str(fake_node(tmp_path, "echo v18.19.0\n")))
    said: list[str] = []
    assert _stdlib.add_precompiled(pyodide_dir, tmp_path / "cache", said.append) is None
    assert len(said) == 1 and "older than 20" in said[0] and "without bytecode" in said[0]
    monkeypatch.setenv("PYSITE_AGENT_NODE", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _stdlib.node_executable() == (None, "Node is not on PATH")


def test_another_stdlib_zip_is_refused(pyodide_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "pyodide"
    other.mkdir()
    for name in ("pyodide.asm.mjs", "pyodide.asm.wasm"):
        (other / name).symlink_to(pyodide_dir / name)
    (other / "python_stdlib.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    with pytest.raises(IntegrityError, match="pinned"):
        _stdlib.add_precompiled(other, tmp_path / "cache", print, node=node())


def test_the_bundle_names_it_in_the_lock_and_the_manifest(tmp_path: Path) -> None:
    report = build_bundle(tmp_path / "with", cache_dir=CACHE, progress=lambda _m: None)
    lock = json.loads((report.out_dir / "pyodide" / "pyodide-lock.json").read_text("utf-8"))
    entry = lock[_stdlib.LOCK_KEY]["stdlib"]
    copy = report.out_dir / "pyodide" / entry["file_name"]
    assert entry["file_name"] == "python_stdlib_pyc.zip"
    assert entry["source_sha256"] == _pins.PYODIDE_STDLIB_SHA256
    manifest = json.loads((report.out_dir / "bundle-manifest.json").read_text("utf-8"))
    assert manifest["stdlib_bytecode"] is True
    assert manifest["files"]["pyodide/python_stdlib_pyc.zip"]["sha256"] == entry["sha256"]
    assert entry["sha256"] == _stdlib.lock_entry(copy)["stdlib"]["sha256"]

    # The command line's --no-precompile leaves it out.
    plain = tmp_path / "without"
    assert main(["bundle", str(plain), "--cache", str(CACHE), "--no-precompile"]) == 0
    lock = json.loads((plain / "pyodide" / "pyodide-lock.json").read_text("utf-8"))
    assert _stdlib.LOCK_KEY not in lock
    assert not (plain / "pyodide" / "python_stdlib_pyc.zip").exists()
    manifest = json.loads((plain / "bundle-manifest.json").read_text("utf-8"))
    assert manifest["stdlib_bytecode"] is False
    assert "pyodide/python_stdlib.zip" in manifest["files"]


def test_a_failing_node_is_a_readable_error_and_nothing_is_cached(
    pyodide_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "node"
    broken.write_text("#!/bin/sh\necho 'first line' >&2\necho 'it broke' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(_stdlib.PrecompileError, match=r"Node exit 3\): first line\nit broke"):
        _stdlib.add_precompiled(pyodide_dir, tmp_path / "cache", print, node=str(broken))
    assert not list((tmp_path / "cache").rglob("*.zip"))
