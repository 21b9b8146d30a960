"""Build the self-hosted bundle: Pyodide core, pinned wheels, a rewritten lock, loader and web/."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pysite_agent.bundle import (
    _compress,
    _fetch,
    _jscomments,
    _lock,
    _pins,
    _stdlib,
    _wheel_bytecode,
    _wheels,
)

MANIFEST = "bundle-manifest.json"
_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../pysite_agent
_SKIP_NAMES = {"__pycache__", "node_modules", ".DS_Store"}


@dataclass(frozen=True)
class BundleFile:
    """One file of the bundle, relative to its folder (forward slashes)."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class BundleReport:
    """What :func:`build_bundle` wrote."""

    out_dir: Path
    pyodide_version: str
    python_version: str
    #: canonical distribution name -> version, for every wheel in ``pyodide/``
    packages: Mapping[str, str]
    files: tuple[BundleFile, ...]
    #: files fetched from the network during this build (empty when the cache had everything)
    downloaded: tuple[str, ...] = ()
    seconds: float = 0.0
    #: where the pysite_agent wheel came from: "checkout" (built) or "installed" (re-packed)
    source: str = field(default="checkout")

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def size_of(self, prefix: str) -> int:
        """Total size of the files whose path starts with ``prefix``."""
        return sum(f.size for f in self.files if f.path.startswith(prefix))


def checkout_root() -> Path | None:
    """The project checkout this package runs from, or None when it is installed."""
    root = _PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "pysite-agent"' in text else None


def default_cache_dir() -> Path:
    """``$PYSITE_AGENT_CACHE_DIR``, else ``.cache/pysite-agent`` in a checkout, else the
    user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    env = os.environ.get("PYSITE_AGENT_CACHE_DIR")
    if env:
        return Path(env)
    root = checkout_root()
    if root is not None:
        return root / ".cache" / "pysite-agent"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pysite-agent"


def _asset_sources() -> tuple[Path, Path]:
    """``loader.js`` and ``web/``: at the checkout's root, or packaged in ``_assets``."""
    root = checkout_root()
    base = root if root is not None else _PACKAGE_DIR / "_assets"
    return base / "loader.js", base / "web"


def _copy_tree(src: Path, dest: Path) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if any(part in _SKIP_NAMES or part.startswith(".") for part in rel.parts):
            continue
        if path.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_asset(path, target)


def _copy_asset(path: Path, target: Path) -> None:
    """Copy one page-side file; a ``.js`` file goes without its comments (_jscomments.py)."""
    if path.suffix != ".js":
        shutil.copyfile(path, target)
        return
    source = path.read_text(encoding="utf-8")
    try:
        stripped = _jscomments.strip_comments(source)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    target.write_text(stripped, encoding="utf-8")


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _list_files(folder: Path) -> tuple[BundleFile, ...]:
    files = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            files.append(
                BundleFile(
                    path.relative_to(folder).as_posix(),
                    path.stat().st_size,
                    _fetch.sha256_file(path),
                )
            )
    return tuple(files)


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise FileExistsError(f"{out} is not empty and holds no {MANIFEST}: refusing to replace it")


def _same_tree(new: Path, out: Path, files: tuple[BundleFile, ...]) -> bool:
    """True when ``out`` already holds exactly the files of ``new`` (so it need not be touched:
    a server may be reading it)."""
    manifest = out / MANIFEST
    if not manifest.is_file() or manifest.read_bytes() != (new / MANIFEST).read_bytes():
        return False
    return set(_list_files(out)) == {*files, BundleFile(MANIFEST, *_size_and_hash(manifest))}


def _swap_into_place(tmp: Path, out: Path) -> None:
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def build_bundle(
    out_dir: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    include_test_wheels: bool = False,
    extra_wheels: Sequence[_pins.Wheel] = (),
    include_local_model: bool = False,
    local_model_type: str = _pins.DEFAULT_LOCAL_MODEL_TYPE,
    precompile: bool = True,
    progress: Callable[[str], object] = print,
) -> BundleReport:
    """Write a folder a site can host as-is, with no request to any third party.

    Layout::

        OUT/loader.js, OUT/web/...     the element (copied as they are)
        OUT/pyodide/                   Pyodide core, the wheels, pyodide-lock.json for them
        OUT/**/NAME.br, NAME.gz        precompressed copies of the big text and wasm files
        OUT/bundle-manifest.json       versions, and size and sha256 of every file

    Downloads (the Pyodide tarball from the npm registry, pinned wheels from PyPI) go to
    ``cache_dir`` (see :func:`default_cache_dir`) and are checked against their pinned sha256
    after each download and on each reuse, so a second build needs no network. Equal inputs
    give byte-identical output. ``OUT`` is replaced as a whole; a non-empty folder that is not
    a previous bundle is refused. ``include_test_wheels`` adds pytest, hypothesis and their
    dependencies, for running tests inside Pyodide; ``extra_wheels`` adds more pinned wheels
    (e.g. :data:`~pysite_agent.bundle._pins.JUPYTERLITE_WHEELS`; one listed twice is copied once).
    ``include_local_model`` adds the in-page model engine (``wllama/``) and SmolLM2-135M
    (``models/``) as ``local_model_type``: ``Q8_0`` (145 MB, made from the pinned Q4_1 file with
    the ``local-model`` extra, cached) or ``Q4_1`` (98 MB, the pinned file); see
    :mod:`pysite_agent.bundle._local_model`. Without that extra a Q8_0 build stops before it
    starts (:class:`~pysite_agent.bundle._requantize.MissingExtraError`), unless the cache
    already holds the file.
    ``precompile`` adds ``pyodide/python_stdlib_pyc.zip``, the standard library with its
    bytecode, made with Pyodide under Node 20+ and named in the lock (without Node the build
    says so and ships the plain zip; see :mod:`pysite_agent.bundle._stdlib`), and the same
    for every wheel: an unchecked ``NAME.pyc`` beside each ``NAME.py``
    (:mod:`pysite_agent.bundle._wheel_bytecode`).
    """
    started = time.monotonic()
    out = Path(out_dir).resolve()
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir().resolve()
    _check_out_dir(out)
    if include_local_model:
        from pysite_agent.bundle import _local_model

        _local_model.check_type(cache, local_model_type)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.build-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    pyodide_dir = tmp / "pyodide"
    pyodide_dir.mkdir(parents=True)
    downloaded: list[str] = []
    try:
        # 1. Pyodide core from the npm tarball.
        core = _pins.PYODIDE
        tarball = cache / "npm" / f"pyodide-{core.version}.tgz"
        if _fetch.cached(tarball, core.sha256, lambda: core.url, progress):
            downloaded.append(tarball.name)
        with tarfile.open(tarball, "r:gz") as tf:
            for name in (*core.files, "pyodide-lock.json"):
                member = tf.extractfile(f"package/{name}")
                if member is None:
                    raise FileNotFoundError(f"{tarball.name} has no package/{name}")
                with member:
                    data = member.read()
                if name == "pyodide-lock.json":
                    upstream_lock = json.loads(data)
                else:
                    (pyodide_dir / name).write_bytes(data)
        progress(f"pyodide {core.version} (Python {upstream_lock['info']['python']})")

        # 2. Pinned wheels.
        wheels = list(_pins.RUNTIME_WHEELS)
        if include_test_wheels:
            wheels += _pins.TEST_WHEELS
        wheels += extra_wheels
        for wheel in dict.fromkeys(wheels):
            cached_path = cache / "wheels" / wheel.file_name
            if _fetch.cached(
                cached_path, wheel.sha256, functools.partial(_fetch.pypi_url, wheel), progress
            ):
                downloaded.append(wheel.file_name)
            shutil.copyfile(cached_path, pyodide_dir / wheel.file_name)

        # 3. Wheels made here: the rpds-py stand-in and pysite_agent itself.
        _wheels.rpds_stand_in(pyodide_dir)
        root = checkout_root()
        if root is not None:
            own, fetched = _wheels.build_from_checkout(root, pyodide_dir, cache, progress)
            downloaded.extend(fetched)  # each file of the build backend, as counted
            source = "checkout"
            progress(f"built {own.name} from the checkout {root}")
        else:
            own = _wheels.repack_installed(pyodide_dir)
            source = "installed"
            progress(f"packed {own.name} from the installed package")

        # 3b. Bytecode inside each wheel (Pyodide under Node), before the lock takes their sha256.
        bytecode = (
            _wheel_bytecode.add_bytecode(pyodide_dir, cache, progress, lock=upstream_lock)
            if precompile
            else None
        )

        # 4. The lock, listing exactly these wheels (and the precompiled standard library).
        lock = _lock.rewrite_lock(upstream_lock, sorted(pyodide_dir.glob("*.whl")))
        _write_json(pyodide_dir / "pyodide-lock.json", lock)
        stdlib = _stdlib.add_precompiled(pyodide_dir, cache, progress) if precompile else None
        if stdlib is not None:
            lock[_stdlib.LOCK_KEY] = _stdlib.lock_entry(stdlib)
            _write_json(pyodide_dir / "pyodide-lock.json", lock)

        # 5. The page-side files.
        loader, web = _asset_sources()
        if loader.is_file():
            _copy_asset(loader, tmp / "loader.js")
        if web.is_dir():
            _copy_tree(web, tmp / "web")

        # 5b. The in-page model, when asked for.
        local_model: dict[str, Any] | None = None
        if include_local_model:
            downloaded.extend(_local_model.add_engine(tmp, cache, progress))
            fetched_model, local_model = _local_model.add_model(
                tmp, cache, progress, local_model_type=local_model_type
            )
            downloaded.extend(fetched_model)

        # 5c. Precompressed copies (NAME.br, NAME.gz) for hosts that serve them.
        _compress.precompress(tmp, cache, progress)

        # 6. The manifest.
        files = _list_files(tmp)
        packages = {key: entry["version"] for key, entry in lock["packages"].items()}
        _write_json(
            tmp / MANIFEST,
            {
                "format": 1,
                "pyodide": {
                    "version": core.version,
                    "sha256": core.sha256,
                    "python": upstream_lock["info"]["python"],
                    "abi_version": upstream_lock["info"].get("abi_version"),
                },
                "packages": packages,
                "test_wheels": include_test_wheels,
                "stdlib_bytecode": _stdlib.LOCK_KEY in lock,
                "wheel_bytecode": bytecode is not None,
                **({"local_model": local_model} if local_model is not None else {}),
                "files": {f.path: {"sha256": f.sha256, "size": f.size} for f in files},
            },
        )
        if _same_tree(tmp, out, files):
            progress("bundle unchanged: the folder is left as it was")
        else:
            _swap_into_place(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    report = BundleReport(
        out_dir=out,
        pyodide_version=core.version,
        python_version=str(upstream_lock["info"]["python"]),
        packages=packages,
        files=(*files, BundleFile(MANIFEST, *_size_and_hash(out / MANIFEST))),
        downloaded=tuple(downloaded),
        seconds=time.monotonic() - started,
        source=source,
    )
    progress(
        f"bundle: {out} ({len(report.files)} files, {report.total_size / 1e6:.1f} MB; "
        f"wheels {_wheel_bytes(report) / 1e3:.0f} kB; "
        f"{'downloaded ' + str(len(downloaded)) if downloaded else 'nothing downloaded'}; "
        f"{report.seconds:.1f} s)"
    )
    return report


def _size_and_hash(path: Path) -> tuple[int, str]:
    return path.stat().st_size, _fetch.sha256_file(path)


def _wheel_bytes(report: BundleReport) -> int:
    return sum(f.size for f in report.files if f.path.endswith(".whl"))
