"""The model's reply and the trace's values as strict JSON data, checked without recursion
(``docs/boundaries.md``, "The model's reply"): shared by the bridge's loop (``agent.py``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pysite_agent.core.errors import SiteAgentError

MAX_REPLY_DEPTH = 64
"""Replies nested deeper than this are refused before anything recurses into them."""


def too_deep(value: Any, limit: int = MAX_REPLY_DEPTH) -> bool:
    """Whether ``value`` nests lists/dicts deeper than ``limit`` (checked without recursion:
    in Pyodide a deep recursion overflows the JavaScript stack instead of raising)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return False


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data (for the trace); never raises."""
    if too_deep(value):
        return f"<not JSON: nested deeper than {MAX_REPLY_DEPTH} levels>"
    try:
        return json.loads(json.dumps(value, default=repr, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return f"<not JSON: {type(value).__name__}>"


def strict_reply(raw: Any) -> Any:
    """The model's reply as strict JSON data (no NaN/Infinity, no objects JSON cannot hold).

    Raises:
        SiteAgentError: ``bad-reply`` when the reply is not JSON data, or nests deeper than
            :data:`MAX_REPLY_DEPTH`.
    """
    if too_deep(raw):
        raise SiteAgentError(
            "bad-reply", f"the model's reply is nested deeper than {MAX_REPLY_DEPTH} levels"
        )
    try:
        return json.loads(json.dumps(raw, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        if isinstance(exc, ValueError) and isinstance(raw, dict) and raw.get("type") == "tool":
            # NaN/Infinity only in the arguments: passed on as JSON text, which the argument
            # check refuses as an invalid call the model can correct (core.wire does the same).
            rest = {k: v for k, v in raw.items() if k != "arguments"}
            with contextlib.suppress(TypeError, ValueError):
                text = json.dumps(raw.get("arguments"), allow_nan=True, ensure_ascii=False)
                return {**json.loads(json.dumps(rest, allow_nan=False)), "arguments": text}
        reason = "too deeply nested" if isinstance(exc, RecursionError) else str(exc)
        raise SiteAgentError("bad-reply", f"the model's reply is not JSON data: {reason}") from None
