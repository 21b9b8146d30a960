"""The arguments of a call in plain words, for the confirmation card (docs/element.md, "The panel").

Each top-level argument becomes ``ConfirmLine(key, label, value)``: ``label`` is the property's
``title`` from the schema, else the key in words (``productId`` -> "Product id",
``max_price`` -> "Max price"); ``value`` is a string as is, anything else as compact JSON.

Values are never shortened: the visitor must be able to see everything they approve (the card
scrolls long values and keeps their white space). Invisible and text-direction characters in
labels and values are shown as markers (``⟦U+202E⟧``, :func:`pysite_agent.core.display.reveal`),
so ``evil\u202egnp.exe`` cannot read as ``evilexe.png``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pysite_agent.core.display import reveal
from pysite_agent.core.types import ConfirmLine


def label_for_key(key: str) -> str:
    """``productId`` -> "Product id"; ``max_price`` -> "Max price"; ``SKU`` -> "SKU"."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    words = re.sub(r"[_\-.]+", " ", words).strip()
    if not words:
        return key
    parts = words.split()
    out = [parts[0][:1].upper() + parts[0][1:]]
    out += [p if p.isupper() and len(p) > 1 else p.lower() for p in parts[1:]]
    return " ".join(out)


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def confirm_lines(
    arguments: Mapping[str, Any], input_schema: Mapping[str, Any] | None
) -> tuple[ConfirmLine, ...]:
    """The lines for ``arguments`` (in the schema's property order, then any others)."""
    props: Mapping[str, Any] = {}
    if isinstance(input_schema, Mapping) and isinstance(input_schema.get("properties"), Mapping):
        props = input_schema["properties"]
    order = [k for k in props if k in arguments] + [k for k in arguments if k not in props]
    lines = []
    for key in order:
        spec = props.get(key)
        title = spec.get("title") if isinstance(spec, Mapping) else None
        label = title if isinstance(title, str) and title.strip() else label_for_key(key)
        lines.append(ConfirmLine(key, reveal(label), reveal(_value_text(arguments[key]))))
    return tuple(lines)
