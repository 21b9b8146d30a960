"""Wheels the bundle makes itself, all byte-for-byte reproducible.

- the rpds-py stand-in (module ``rpds`` on top of ``pyrsistent_as_rpds.pure``);
- the pysite_agent wheel from a checkout, built by the project's backend (hatchling) with a
  fixed ``SOURCE_DATE_EPOCH``;
- the pysite_agent wheel re-packed from an installed distribution (when there is no checkout).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from pysite_agent.bundle import _fetch, _pins

#: The fixed time stamp of every file in the wheels written here (and SOURCE_DATE_EPOCH for
#: hatchling): 2020-02-02 00:00:00 UTC, hatchling's own default for reproducible builds.
SOURCE_DATE_EPOCH = 1580601600
_ZIP_DATE = (2020, 2, 2, 0, 0, 0)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def write_wheel(path: Path, files: Iterable[tuple[str, bytes]], dist_info: str) -> None:
    """Write a wheel with ``files`` (archive name, content) plus a fresh ``RECORD``.

    Entries are sorted, dated :data:`_ZIP_DATE` and get mode 0644, so equal input gives equal
    bytes. ``dist_info`` is the ``NAME-VERSION.dist-info`` folder name.
    """
    record_name = f"{dist_info}/RECORD"
    entries = sorted((name, data) for name, data in files if name != record_name)
    # dist-info last, as the wheel spec recommends; RECORD at the very end.
    entries.sort(key=lambda item: (item[0].startswith(f"{dist_info}/"), item[0]))
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in entries)
    record += f"{record_name},,\n"
    entries.append((record_name, record.encode("utf-8")))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with zipfile.ZipFile(tmp, "w") as zf:
            for name, data in entries:
                info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.create_system = 3
                info.external_attr = (0o100644 & 0xFFFF) << 16
                zf.writestr(info, data, compresslevel=9)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


_WHEEL_FILE = (
    "Wheel-Version: 1.0\nGenerator: pysite-agent bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)

_RPDS_INIT = '''\
"""Stand-in for rpds-py in Pyodide: the rpds API implemented on pyrsistent.

rpds-py has no WebAssembly wheel on PyPI. This module re-exports the pure-Python
implementation from pyrsistent-as-rpds-py, which covers what referencing and jsonschema use.
"""

from pyrsistent_as_rpds.pure import (
    HashTrieMap,
    HashTrieSet,
    List,
    Queue,
    is_pure_pyrsistent_as_rpds,
)

__all__ = ["HashTrieMap", "HashTrieSet", "List", "Queue", "is_pure_pyrsistent_as_rpds"]
'''


def rpds_stand_in(dest_dir: Path) -> Path:
    """Write the ``rpds-py`` stand-in wheel into ``dest_dir`` and return its path."""
    version = _pins.RPDS_STAND_IN_VERSION
    as_rpds = next(w for w in _pins.RUNTIME_WHEELS if w.name == "pyrsistent-as-rpds-py")
    pyrsistent = next(w for w in _pins.RUNTIME_WHEELS if w.name == "pyrsistent")
    dist_info = f"rpds_py-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: rpds-py\n"
        f"Version: {version}\n"
        "Summary: Stand-in for rpds-py: module rpds re-exporting pyrsistent_as_rpds.pure "
        "(written by the pysite-agent bundle)\n"
        "License: MIT\n"
        f"Requires-Dist: pyrsistent-as-rpds-py=={as_rpds.version}\n"
        f"Requires-Dist: pyrsistent>={pyrsistent.version}\n"
    )
    path = dest_dir / f"rpds_py-{version}-py3-none-any.whl"
    write_wheel(
        path,
        [
            ("rpds/__init__.py", _RPDS_INIT.encode("utf-8")),
            (f"{dist_info}/METADATA", metadata.encode("utf-8")),
            (f"{dist_info}/WHEEL", _WHEEL_FILE.encode("utf-8")),
            (f"{dist_info}/top_level.txt", b"rpds\n"),
        ],
        dist_info,
    )
    return path


def _build_env(cache_dir: Path, progress: Callable[[str], object]) -> tuple[Path, list[str]]:
    """Unpack the pinned build backend into a folder under the cache; returns (folder, the
    names of the files downloaded for it)."""
    key = hashlib.sha256(
        "\n".join(w.sha256 for w in _pins.BUILD_WHEELS).encode("ascii")
    ).hexdigest()[:12]
    env_dir = cache_dir / "build-env" / key
    if (env_dir / ".complete").is_file():
        return env_dir, []
    fetched: list[str] = []
    wheel_dir = cache_dir / "wheels"
    for wheel in _pins.BUILD_WHEELS:
        if _fetch.cached(
            wheel_dir / wheel.file_name,
            wheel.sha256,
            functools.partial(_fetch.pypi_url, wheel),
            progress,
        ):
            fetched.append(wheel.file_name)
    tmp = env_dir.with_name(f".{key}.{os.getpid()}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for wheel in _pins.BUILD_WHEELS:
        with zipfile.ZipFile(wheel_dir / wheel.file_name) as zf:
            zf.extractall(tmp)
    (tmp / ".complete").write_text("ok\n")
    try:
        tmp.rename(env_dir)
    except OSError:  # another build finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return env_dir, fetched


_BUILD_SCRIPT = """\
import sys
sys.path[:0] = [sys.argv[1]]
from hatchling.build import build_wheel
print(build_wheel(sys.argv[2]))
"""


def build_from_checkout(
    root: Path, dest_dir: Path, cache_dir: Path, progress: Callable[[str], object]
) -> tuple[Path, list[str]]:
    """Build the project's wheel from the working tree at ``root`` with the pinned hatchling.

    Returns (wheel path, the names of the backend's files that had to be downloaded).
    """
    env_dir, fetched = _build_env(cache_dir, progress)
    out = dest_dir / f".wheel-build-{os.getpid()}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "HATCH"))
    }
    env["SOURCE_DATE_EPOCH"] = str(SOURCE_DATE_EPOCH)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _BUILD_SCRIPT, str(env_dir), str(out)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"building the pysite_agent wheel failed:\n{proc.stderr}")
        name = proc.stdout.strip().splitlines()[-1]
        wheel = dest_dir / name
        os.replace(out / name, wheel)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return wheel, fetched


def repack_installed(dest_dir: Path, dist_name: str = "pysite-agent") -> Path:
    """Write a wheel of the installed distribution ``dist_name`` (its files as recorded)."""
    dist = importlib.metadata.distribution(dist_name)
    name = dist.metadata["Name"].replace("-", "_")
    version = dist.version
    dist_info = f"{name}-{version}.dist-info"
    skip = {f"{dist_info}/{n}" for n in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")}
    files: list[tuple[str, bytes]] = []
    for item in dist.files or ():
        arcname = item.as_posix()
        if arcname.startswith("../") or "__pycache__" in item.parts or arcname in skip:
            continue
        if arcname.endswith(".pyc"):
            continue
        files.append((arcname, Path(str(item.locate())).read_bytes()))
    if not any(n.endswith(".py") and not n.startswith(dist_info) for n, _ in files):
        raise RuntimeError(
            f"{dist_name} is installed without its files (an editable install?): "
            "run the bundle command from the project's checkout"
        )
    wheel = dest_dir / f"{name}-{version}-py3-none-any.whl"
    write_wheel(wheel, files, dist_info)
    return wheel
