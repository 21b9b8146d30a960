"""Bytecode inside the bundle's wheels (pysite_agent/bundle/_wheel_bytecode.py), with real Node
and the pinned Pyodide from the download cache (no network)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from bundle_support import CACHE, extract_core, fake_node, node

from pysite_agent.bundle import _lock, _wheel_bytecode, build_bundle

ROOT = Path(__file__).resolve().parent.parent

#: A small wheel with what real ones hold: a package, a top-level module, a module this Python
#: cannot compile, a script under .data, and a pyc the wheel brings itself.
FILES = {
    "demo/__init__.py": "from demo.part import VALUE\n",
    "demo/part.py": "VALUE = 42\n\n\ndef fails():\n    raise ValueError('from part')\n",
    "demo/py2.py": "print 'python 2'\n",
    "demo/own.py": "OWN = 1\n",
    "demo/own.pyc": "not really bytecode",
    "top.py": "TOP = 'top'\n",
    "demo_pkg-1.0.data/scripts/run.py": "print('a script')\n",
    "demo_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
    "demo_pkg-1.0.dist-info/WHEEL": (
        "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ),
}


def _pyc_of(source: str) -> str:
    return source + "c"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _demo_wheel(folder: Path) -> Path:
    path = folder / "demo_pkg-1.0-py3-none-any.whl"
    rows = [f"{name},{_digest(text.encode())},{len(text.encode())}" for name, text in FILES.items()]
    record = "\n".join([*rows, "demo_pkg-1.0.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in [*FILES.items(), ("demo_pkg-1.0.dist-info/RECORD", record)]:
            zf.writestr(zipfile.ZipInfo(name, (2020, 2, 2, 0, 0, 0)), text)
    return path


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_core(tmp_path_factory.mktemp("core"))


@pytest.fixture(scope="module")
def demo(core: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes]:
    """(the Pyodide folder, its cache, the original wheel's bytes) after one rewrite."""
    folder = tmp_path_factory.mktemp("pyodide")
    for name in ("pyodide.asm.mjs", "pyodide.asm.wasm"):
        (folder / name).symlink_to(core / name)
    for name in ("pyodide.mjs", "python_stdlib.zip", "pyodide-lock.json"):
        (folder / name).symlink_to(core / name)
    original = _demo_wheel(folder).read_bytes()
    cache = tmp_path_factory.mktemp("cache")
    said: list[str] = []
    names = _wheel_bytecode.add_bytecode(folder, cache, said.append, node=node())
    assert names == ["demo_pkg-1.0-py3-none-any.whl"]
    assert said == ["wheels: compiling the bytecode of 1 with Pyodide under Node"]
    return folder, cache, original


def test_each_module_gets_an_unchecked_pyc_listed_in_record(demo: tuple[Path, Path, bytes]) -> None:
    folder, _cache, _original = demo
    with zipfile.ZipFile(folder / "demo_pkg-1.0-py3-none-any.whl") as zf:
        names = zf.namelist()
        added = set(names) - set(FILES) - {"demo_pkg-1.0.dist-info/RECORD"}
        assert added == {
            "demo/__init__.pyc",
            "demo/part.pyc",
            "top.pyc",
        }  # not py2.py (no Python 3), not own.py (its own pyc stays), not .data's script
        assert zf.read("demo/own.pyc") == b"not really bytecode"
        for name in FILES:
            assert zf.read(name) == FILES[name].encode()  # every source unchanged
        # each pyc right after its source, RECORD last
        assert names.index("demo/part.pyc") == names.index("demo/part.py") + 1
        assert names[-1] == "demo_pkg-1.0.dist-info/RECORD"
        rows = {
            line.split(",")[0]: line.split(",")[1:]
            for line in zf.read("demo_pkg-1.0.dist-info/RECORD").decode().splitlines()
        }
        assert set(rows) == set(names)
        for name in names:
            if name.endswith("RECORD"):
                assert rows[name] == ["", ""]
                continue
            data = zf.read(name)
            assert rows[name] == [_digest(data), str(len(data))], name
        for name in added:
            pyc = zf.read(name)
            # PEP 552: flags 0b01 = hash-based, unchecked (0b10 clear).
            assert int.from_bytes(pyc[4:8], "little") == 0b01, name
    # The lock sees the same importable names.
    entry, _ = _lock.package_entry(folder / "demo_pkg-1.0-py3-none-any.whl")
    assert entry["imports"] == ["demo", "top"]


def test_the_same_wheel_gives_the_same_bytes_and_a_cached_one_needs_no_node(
    demo: tuple[Path, Path, bytes], tmp_path: Path
) -> None:
    folder, cache, original = demo
    rewritten = (folder / "demo_pkg-1.0-py3-none-any.whl").read_bytes()
    assert rewritten != original
    again = tmp_path / "pyodide"
    shutil.copytree(folder, again, symlinks=True)
    (again / "demo_pkg-1.0-py3-none-any.whl").write_bytes(original)
    other = again.parent / "other"
    shutil.copytree(again, other, symlinks=True)
    # Another cache: Node again, the same bytes.
    _wheel_bytecode.add_bytecode(again, tmp_path / "cache-b", print, node=node())
    assert (again / "demo_pkg-1.0-py3-none-any.whl").read_bytes() == rewritten
    # The first cache: a Node that cannot start is never asked.
    said: list[str] = []
    missing = str(tmp_path / "no-node")
    _wheel_bytecode.add_bytecode(other, cache, said.append, node=missing)
    assert said == [] and (other / "demo_pkg-1.0-py3-none-any.whl").read_bytes() == rewritten
    # A damaged cache entry is made again, so the missing Node is then reached.
    (other / "demo_pkg-1.0-py3-none-any.whl").write_bytes(original)
    entry = next((cache / _wheel_bytecode.CACHE_FOLDER).glob("*.whl"))
    entry.write_bytes(b"damaged")
    with pytest.raises(OSError):
        _wheel_bytecode.add_bytecode(other, cache, print, node=missing)
    assert (other / "demo_pkg-1.0-py3-none-any.whl").read_bytes() == original


def _unrewritten(demo: tuple[Path, Path, bytes], tmp_path: Path) -> Path:
    """A copy of the demo's Pyodide folder with the wheel as it was before the rewrite."""
    folder, _cache, original = demo
    plain = tmp_path / "pyodide"
    shutil.copytree(folder, plain, symlinks=True)
    (plain / "demo_pkg-1.0-py3-none-any.whl").write_bytes(original)
    return plain


def test_without_node_the_build_says_so_once_and_leaves_the_wheels(
    demo: tuple[Path, Path, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _unrewritten(demo, tmp_path)
    original = demo[2]
    monkeypatch.setenv("PYSITE_AGENT_NODE", str(fake_node(tmp_path, "echo v18.19.0\n")))
    said: list[str] = []
    assert _wheel_bytecode.add_bytecode(plain, tmp_path / "cache", said.append) is None
    assert len(said) == 1 and "older than 20" in said[0] and "without bytecode" in said[0]
    assert (plain / "demo_pkg-1.0-py3-none-any.whl").read_bytes() == original


def test_a_failing_node_is_a_readable_error_and_the_wheel_is_left(
    demo: tuple[Path, Path, bytes], tmp_path: Path
) -> None:
    plain = _unrewritten(demo, tmp_path)
    original = demo[2]
    broken = fake_node(tmp_path, "echo 'it broke' >&2\nexit 3\n")
    with pytest.raises(_wheel_bytecode._stdlib.PrecompileError, match=r"Node exit 3\): it broke"):
        _wheel_bytecode.add_bytecode(plain, tmp_path / "cache", print, node=str(broken))
    assert (plain / "demo_pkg-1.0-py3-none-any.whl").read_bytes() == original
    assert not list((tmp_path / "cache").rglob("*.whl"))


#: Pyodide under Node on the bundle, its wheels as zip files on sys.path as web/runtime/boot.js
#: places them on a first visit: the modules come from their pyc (zipimport's NAME.pyc first).
_RUN = """
import { readFileSync } from "node:fs";
const [base, namesJSON, wheelDir] = process.argv.slice(2);
const { loadPyodide } = await import(new URL("pyodide.mjs", "file://" + base).href);
const py = await loadPyodide({ indexURL: base });
py.FS.mkdirTree(wheelDir);
const paths = [];
for (const name of JSON.parse(namesJSON)) {
  py.FS.writeFile(wheelDir + "/" + name, readFileSync(base + name));
  paths.push(wheelDir + "/" + name);
}
py.globals.set("paths_json", JSON.stringify(paths));
console.log(py.runPython(`
import json, linecache, sys, traceback, zipimport
sys.path.extend(json.loads(paths_json))
import pysite_agent, pysite_agent.core.errors as errors, jsonschema
try:
    jsonschema.validate("x", {"type": "integer"})
except jsonschema.ValidationError:
    text = traceback.format_exc()
code = errors.SiteAgentError.__init__.__code__
json.dumps([pysite_agent.__file__, errors.__file__, jsonschema.__file__,
            isinstance(errors.__spec__.loader, zipimport.zipimporter), text,
            code.co_filename,
            linecache.getline(code.co_filename, code.co_firstlineno, vars(errors))])
`));
"""


def test_pyodide_imports_pysite_agent_from_the_bundles_pyc(tmp_path: Path) -> None:
    report = build_bundle(tmp_path / "bundle", cache_dir=CACHE, progress=lambda _m: None)
    pyodide = report.out_dir / "pyodide"
    manifest = json.loads((report.out_dir / "bundle-manifest.json").read_text("utf-8"))
    assert manifest["wheel_bytecode"] is True
    lock = json.loads((pyodide / "pyodide-lock.json").read_text("utf-8"))
    for key, entry in lock["packages"].items():
        wheel = pyodide / entry["file_name"]
        assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest(), key
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
        sources = [n for n in names if n.endswith(".py") and ".dist-info/" not in n]
        assert sources, key
        compiled = [n for n in sources if _pyc_of(n) in names]
        skipped = [n for n in sources if n.startswith(_wheel_bytecode.SOURCE_ONLY)]
        assert sorted(set(sources) - set(compiled)) == sorted(skipped), key
        if key == "pysite-agent":
            assert len(skipped) > 10 and not set(skipped) & set(compiled)
    script = tmp_path / "run.mjs"
    script.write_text(_RUN, encoding="utf-8")
    wheels = [entry["file_name"] for entry in lock["packages"].values()]
    done = subprocess.run(
        [node(), str(script), f"{pyodide}/", json.dumps(wheels), _wheel_bytecode.WHEEL_DIR],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    own, errors, schema, zipped, text, code_file, code_line = out
    assert own.endswith(".whl/pysite_agent/__init__.pyc"), own
    assert errors.endswith(".whl/pysite_agent/core/errors.pyc") and zipped, errors
    assert schema.endswith(".whl/jsonschema/__init__.pyc"), schema
    # Tracebacks still show source lines (from the .py beside the .pyc), and name the file
    # the module came from: the code was compiled with the name it has in the page.
    schema_wheel = lock["packages"]["jsonschema"]["file_name"]
    where = f'"{_wheel_bytecode.WHEEL_DIR}/{schema_wheel}/jsonschema/validators.py", line'
    assert where in text and "raise error" in text, text
    assert code_file == errors[:-1], (code_file, errors)  # .../errors.py beside the .pyc
    assert code_line.lstrip().startswith("def __init__"), code_line

    # --no-precompile: the wheels as they are.
    plain = build_bundle(
        tmp_path / "plain", cache_dir=CACHE, precompile=False, progress=lambda _m: None
    )
    manifest = json.loads((plain.out_dir / "bundle-manifest.json").read_text("utf-8"))
    assert manifest["wheel_bytecode"] is False
    wheel = next((plain.out_dir / "pyodide").glob("pysite_agent-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if n.endswith(".pyc")]


def test_the_wheels_folder_is_the_one_boot_js_writes_them_to() -> None:
    boot = (ROOT / "web" / "runtime" / "boot.js").read_text(encoding="utf-8")
    assert f'const WHEEL_DIR = "{_wheel_bytecode.WHEEL_DIR}";' in boot
