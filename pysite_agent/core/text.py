"""Text that crosses a boundary: lone UTF-16 surrogates replaced by U+FFFD, at one place.

A JavaScript string may hold a lone surrogate (a string cut inside an emoji, e.g.
``"\\ud83d\\ude00".slice(0, 1)``); JSON's ``\\ud83d`` escape decodes to one in Python. Such
text cannot be encoded as UTF-8 (``'utf-8' codec can't encode``), so every JSON request body,
file write and terminal print would fail. The rule, from the Unicode Standard (section 3.9,
U+FFFD substitution) and the WHATWG Encoding Standard's UTF-8 encoder, which does the same for
``TextEncoder``: each lone surrogate code point becomes U+FFFD REPLACEMENT CHARACTER; a valid
pair is joined into its astral character.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REPLACEMENT = "\ufffd"


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate (U+D800..U+DFFF) replaced by U+FFFD.

    A high surrogate followed by a low one (as ``json.loads`` leaves them only when they were
    escaped separately and ``surrogatepass`` decoding kept them) is joined into one astral
    character. Never raises; the result always encodes as UTF-8.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        code = ord(c)
        if 0xD800 <= code <= 0xDBFF and i + 1 < n and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            low = ord(text[i + 1])
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
            i += 2
            continue
        out.append(REPLACEMENT if 0xD800 <= code <= 0xDFFF else c)
        i += 1
    return "".join(out)


def well_formed_json(value: Any) -> Any:
    """``value`` (JSON data: dict, list, str, number, bool, None) with every string, keys too,
    passed through :func:`well_formed`. Iterative (no recursion, so any depth); values of
    other types are kept as they are. Returns a new value when anything changed."""
    return map_strings(value, well_formed)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (JSON data) with every string, keys too, replaced by ``change(string)``: a
    new value of the same shape (dicts and lists are copied; other values kept as they are).
    Iterative, so any nesting depth is safe. ``change`` is e.g. :func:`well_formed`, or
    :func:`pysite_agent.core.display.reveal` for text shown to people."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = change(item)
        elif isinstance(item, dict):
            copy = {change(k) if isinstance(k, str) else k: v for k, v in item.items()}
            parent[key] = copy
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, list):
            copy_list = list(item)
            parent[key] = copy_list
            stack.extend((copy_list, i) for i in range(len(copy_list)))
    return root[0]


def shortened(text: str, limit: int) -> str:
    """``text`` stripped, and when longer than ``limit`` characters (``limit`` >= 1) cut to
    ``limit`` ending in "…": how the run quotes a tool's result as an answer."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"
