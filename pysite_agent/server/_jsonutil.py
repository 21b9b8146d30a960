"""Strict JSON in and out.

- ``loads`` rejects ``NaN``/``Infinity`` (not JSON: a browser's ``JSON.parse`` fails on them),
  and turns every failure, including ``RecursionError`` on deep nesting, into ``ValueError``.
- ``depth`` measures nesting without recursion, so deep input is refused before it reaches
  code that recurses.
- ``dumps`` writes compact UTF-8 and never fails on lone surrogates (they become ``?``).
"""

from __future__ import annotations

import json
from typing import Any


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str) -> Any:
    """Parse JSON text strictly.

    Raises:
        ValueError: for anything that is not strict JSON.
    """
    try:
        return json.loads(data, parse_constant=_no_constants)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not JSON ({type(exc).__name__})") from exc


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON. Raises ``ValueError`` for non-finite floats."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8", errors="replace")


def depth(value: Any, limit: int) -> bool:
    """True when ``value`` nests no deeper than ``limit`` containers."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            if level > limit:
                return False
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            if level > limit:
                return False
            stack.extend((v, level + 1) for v in item)
    return True
