"""Strict JSON in and out.

- ``loads`` rejects ``NaN``/``Infinity`` (not JSON: a browser's ``JSON.parse`` fails on them),
  and turns every failure into ``ValueError``: nesting too deep for the parser (its
  ``RecursionError``) into ``NestingError``, a number too long for ``int`` (CPython's
  4,300-digit limit, CVE-2020-10735) into a message saying so.
- ``depth`` measures nesting without recursion, so deep input is refused before it reaches
  code that recurses.
- ``dumps`` writes compact UTF-8 and never fails on lone surrogates (they become ``?``).
"""

from __future__ import annotations

import json
from typing import Any


class NestingError(ValueError):
    """The text nests containers deeper than the parser can follow (thousands of levels)."""


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str) -> Any:
    """Parse JSON text strictly.

    Raises:
        NestingError: the nesting is too deep to parse; a depth the parser can follow is
            measured by ``depth`` afterwards.
        ValueError: for anything else that is not strict JSON, or a number of more than
            4,300 digits.
    """
    try:
        return json.loads(data, parse_constant=_no_constants)
    except RecursionError as exc:
        raise NestingError("JSON nested too deeply") from exc
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise ValueError("a number in the JSON has too many digits") from exc
        raise ValueError(f"not JSON ({type(exc).__name__})") from exc
    except TypeError as exc:
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


def read_body(body: bytes, max_depth: int) -> Any:
    """A request body as JSON nesting at most ``max_depth`` containers.

    Raises:
        ValueError: one sentence for the client: the body is not JSON, is nested deeper than
            ``max_depth`` (however deep: past what the parser follows too), or holds a number
            of more than 4,300 digits.
    """
    too_deep = f"The JSON is nested deeper than {max_depth} levels."
    try:
        data = loads(body)
    except NestingError:
        raise ValueError(too_deep) from None
    except ValueError as exc:
        digits = "too many digits" in str(exc)
        why = "A number in the body has too many digits." if digits else "The body is not JSON."
        raise ValueError(why) from None
    if not depth(data, max_depth):
        raise ValueError(too_deep)
    return data
