"""The bundle command on CPython: offline rebuilds, byte-identical output, a truthful lock."""

from __future__ import annotations

import hashlib
import json
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pysite_agent.bundle import (
    MANIFEST,
    IntegrityError,
    LockError,
    _fetch,
    _pins,
    _wheels,
    build_bundle,
    default_cache_dir,
    rewrite_lock,
)

UPSTREAM_INFO = {
    "abi_version": "2026_0",
    "arch": "wasm32",
    "platform": "emscripten_5_0_3",
    "python": "3.14.2",
}


def _hashes(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the build tried to reach the network")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def _wheel(
    folder: Path, name: str, version: str, *requires: str, files: tuple[str, ...] = ()
) -> Path:
    dist = name.replace("-", "_")
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    entries = [(f, b"") for f in files or (f"{dist}/__init__.py",)]
    entries.append((f"{dist}-{version}.dist-info/METADATA", meta.encode()))
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    _wheels.write_wheel(path, entries, f"{dist}-{version}.dist-info")
    return path


@pytest.fixture(scope="module")
def warm_cache(dist_dir: Path) -> Path:
    """The conftest built the test bundle, so every pinned download is in the cache."""
    return default_cache_dir()


def test_rebuild_is_offline_and_byte_identical(
    warm_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _offline(monkeypatch)
    messages: list[str] = []
    first = build_bundle(tmp_path / "a", include_test_wheels=True, progress=messages.append)
    second = build_bundle(tmp_path / "b", include_test_wheels=True, progress=messages.append)
    assert first.downloaded == second.downloaded == ()
    assert _hashes(tmp_path / "a") == _hashes(tmp_path / "b")
    assert first.files == second.files
    # again in place: nothing changed, so the folder is not touched (a server may be reading it)
    lock = tmp_path / "a" / "pyodide" / "pyodide-lock.json"
    before = lock.stat().st_mtime_ns
    build_bundle(tmp_path / "a", include_test_wheels=True, progress=messages.append)
    assert _hashes(tmp_path / "a") == _hashes(tmp_path / "b")
    assert lock.stat().st_mtime_ns == before
    assert "bundle unchanged: the folder is left as it was" in messages
    # a file changed by hand is put right
    lock.write_text("{}")
    build_bundle(tmp_path / "a", include_test_wheels=True, progress=messages.append)
    assert _hashes(tmp_path / "a") == _hashes(tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no leftovers


def test_bundle_layout_lock_and_manifest(warm_cache: Path, tmp_path: Path) -> None:
    report = build_bundle(tmp_path / "out", progress=lambda _m: None)
    out = report.out_dir
    pyodide = out / "pyodide"
    for name in (*_pins.PYODIDE.files, "pyodide-lock.json"):
        assert (pyodide / name).is_file(), name
    assert (out / "loader.js").is_file()
    assert (out / "web" / "runtime" / "boot.js").is_file()

    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    assert lock["info"]["python"].startswith("3.14")
    wheels = sorted(p.name for p in pyodide.glob("*.whl"))
    assert sorted(e["file_name"] for e in lock["packages"].values()) == wheels
    for entry in lock["packages"].values():
        data = (pyodide / entry["file_name"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["install_dir"] == "site" and entry["package_type"] == "package"
    packages = lock["packages"]
    assert "pytest" not in packages  # test wheels only on request
    assert packages["pysite-agent"]["depends"] == ["jsonschema"]
    assert packages["pysite-agent"]["imports"] == ["pysite_agent"]
    assert packages["jsonschema"]["depends"] == [
        "attrs",
        "jsonschema-specifications",
        "referencing",
        "rpds-py",
    ]
    # typing-extensions is for Python < 3.13 only: not a dependency on Pyodide 3.14
    assert packages["referencing"]["depends"] == ["attrs", "rpds-py"]
    assert packages["rpds-py"]["imports"] == ["rpds"]

    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["pyodide"]["version"] == _pins.PYODIDE.version
    assert manifest["packages"]["jsonschema"] == "4.26.0"
    assert set(manifest["files"]) == {f.path for f in report.files} - {MANIFEST}
    for rel, meta in manifest["files"].items():
        assert (out / rel).stat().st_size == meta["size"]


def test_pysite_agent_wheel_holds_the_working_tree(warm_cache: Path, tmp_path: Path) -> None:
    report = build_bundle(tmp_path / "out", progress=lambda _m: None)
    wheel = next((report.out_dir / "pyodide").glob("pysite_agent-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    root = Path(__file__).resolve().parents[2]
    for path in (root / "pysite_agent").rglob("*.py"):
        if "__pycache__" not in path.parts:
            assert path.relative_to(root).as_posix() in names
    assert "pysite_agent/_assets/loader.js" in names


def test_refuses_to_replace_a_folder_that_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("mine")
    with pytest.raises(FileExistsError, match="refusing"):
        build_bundle(tmp_path / "site", progress=lambda _m: None)
    assert (tmp_path / "site" / "index.html").read_text() == "mine"


def test_rpds_stand_in_is_reproducible(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = _wheels.rpds_stand_in(tmp_path / "a")
    two = _wheels.rpds_stand_in(tmp_path / "b")
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as zf:
        assert zf.testzip() is None
        record = zf.read(f"rpds_py-{_pins.RPDS_STAND_IN_VERSION}.dist-info/RECORD").decode()
        init = zf.read("rpds/__init__.py").decode()
    assert "rpds/__init__.py,sha256=" in record
    assert "from pyrsistent_as_rpds.pure import" in init


def test_cache_refetches_a_corrupt_file_and_rejects_a_wrong_download(tmp_path: Path) -> None:
    good = b"the real bytes"
    sha = hashlib.sha256(good).hexdigest()
    source = tmp_path / "source.bin"
    source.write_bytes(good)
    dest = tmp_path / "cache" / "file.bin"
    dest.parent.mkdir()
    dest.write_bytes(b"tampered")
    messages: list[str] = []
    assert _fetch.cached(dest, sha, lambda: source.as_uri(), messages.append) is True
    assert dest.read_bytes() == good
    assert any("wrong sha256" in m for m in messages)
    assert _fetch.cached(dest, sha, lambda: pytest.fail("no download"), messages.append) is False

    source.write_bytes(b"something else")
    dest.unlink()
    with pytest.raises(IntegrityError):
        _fetch.cached(dest, sha, lambda: source.as_uri(), messages.append)
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []  # no partial file left behind


def test_lock_evaluates_markers_for_emscripten(tmp_path: Path) -> None:
    wheels = [
        _wheel(
            tmp_path,
            "app",
            "1.0",
            "lib>=2",
            'winonly; sys_platform == "win32"',
            'old; python_version < "3.11"',
            'emonly; sys_platform == "emscripten"',
            "extra-thing; extra == 'x'",
        ),
        _wheel(tmp_path, "lib", "2.1", files=("lib.py", "_lib_helper.py")),
        _wheel(tmp_path, "emonly", "1.0"),
    ]
    lock = rewrite_lock({"info": UPSTREAM_INFO, "packages": {"x": {}}}, wheels)
    assert lock["info"] == UPSTREAM_INFO
    assert sorted(lock["packages"]) == ["app", "emonly", "lib"]
    assert lock["packages"]["app"]["depends"] == ["emonly", "lib"]
    assert lock["packages"]["lib"]["imports"] == ["_lib_helper", "lib"]


def test_lock_refuses_a_missing_or_mismatched_dependency(tmp_path: Path) -> None:
    app = _wheel(tmp_path, "app", "1.0", "lib>=3")
    with pytest.raises(LockError, match="no lib"):
        rewrite_lock({"info": UPSTREAM_INFO}, [app])
    lib = _wheel(tmp_path, "lib", "2.1")
    with pytest.raises(LockError, match=r"has lib 2\.1"):
        rewrite_lock({"info": UPSTREAM_INFO}, [app, lib])


# ---- failures are readable, and the summary counts what was fetched (loopback only)


def _cache_copy(warm_cache: Path, dest: Path) -> Path:
    import shutil

    for part in ("npm", "wheels"):
        shutil.copytree(warm_cache / part, dest / part)
    return dest


class _Index:
    """A PEP 691 simple index on 127.0.0.1 serving the wheels of ``folder``."""

    def __init__(self, folder: Path) -> None:
        import http.server
        import threading

        files = {p.name: p for p in folder.glob("*.whl")}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/files/") and self.path[7:] in files:
                    body = files[self.path[7:]].read_bytes()
                    kind = "application/octet-stream"
                elif self.path.startswith("/simple/"):
                    page = {
                        "files": [
                            {
                                "filename": name,
                                "url": f"/files/{name}",
                                "hashes": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()},
                            }
                            for name, p in files.items()
                        ]
                    }
                    body = json.dumps(page).encode()
                    kind = "application/vnd.pypi.simple.v1+json"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_damaged_cache_without_network_gives_a_readable_message(
    warm_cache: Path, tmp_path: Path
) -> None:
    import os
    import socket
    import subprocess
    import sys

    cache = _cache_copy(warm_cache, tmp_path / "cache")
    damaged = next(w for w in _pins.RUNTIME_WHEELS if w.name == "jsonschema")
    (cache / "wheels" / damaged.file_name).write_bytes(b"half a wheel")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**os.environ, "PYSITE_AGENT_INDEX_URL": f"http://127.0.0.1:{port}/simple"}
    out = tmp_path / "site-agent"
    done = subprocess.run(
        [sys.executable, "-m", "pysite_agent", "bundle", str(out), "--cache", str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "URLError" not in done.stderr
    assert f"could not look up {damaged.file_name} at http://127.0.0.1:{port}/simple" in done.stderr
    assert f"the cached {damaged.file_name} is damaged" in done.stderr
    assert f"the download cache is {cache}" in done.stderr
    assert not out.exists()


def test_the_summary_counts_each_file_fetched(
    warm_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache_copy(warm_cache, tmp_path / "cache")
    missing = [
        next(w for w in _pins.RUNTIME_WHEELS if w.name == "attrs").file_name,
        next(w for w in _pins.RUNTIME_WHEELS if w.name == "referencing").file_name,
        *(w.file_name for w in _pins.BUILD_WHEELS),  # the build backend: several files
    ]
    for name in missing:
        (cache / "wheels" / name).unlink()
    index = _Index(warm_cache / "wheels")
    monkeypatch.setenv("PYSITE_AGENT_INDEX_URL", index.url)
    messages: list[str] = []
    try:
        report = build_bundle(tmp_path / "out", cache_dir=cache, progress=messages.append)
    finally:
        index.close()
    assert sorted(report.downloaded) == sorted(missing)
    assert len([m for m in messages if m.startswith("download: ")]) == len(missing)
    assert f"downloaded {len(missing)};" in messages[-1]
