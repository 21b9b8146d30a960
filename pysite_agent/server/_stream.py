"""Pieces of protocol v1's streaming reply on the server side (pure: no I/O here).

- :func:`wants_stream`: the client asked for it (``Accept`` names ``text/event-stream``).
- :func:`event`: one server-sent event (``delta``, ``reply`` or ``error``) with JSON data.
- :class:`KeyGuard`: keeps the API key out of streamed text even when a provider echoes it
  split across fragments.
"""

from __future__ import annotations

from typing import Any, Final

from pysite_agent.core.sse import format_event
from pysite_agent.server import _jsonutil
from pysite_agent.server._errors import REDACTED
from pysite_agent.server._types import Scope

EVENT_STREAM: Final = b"text/event-stream"


def wants_stream(scope: Scope) -> bool:
    """Whether an ``Accept`` header of the request names ``text/event-stream``.

    Media types are compared case-insensitively and parameters are ignored; ``q=0`` (RFC 9110,
    section 12.4.2: "not acceptable") does not count.
    """
    for name, value in scope.get("headers", ()):
        if name != b"accept":
            continue
        for item in value.lower().split(b","):
            media, *params = (p.strip() for p in item.split(b";"))
            if media != EVENT_STREAM:
                continue
            q = next((p[2:] for p in params if p.startswith(b"q=")), b"1")
            try:
                if float(q) > 0:
                    return True
            except ValueError:
                continue
    return False


def event(name: str, data: Any) -> bytes:
    """``event: NAME`` and ``data: JSON`` (compact, one line), then the blank line."""
    return format_event(name, _jsonutil.dumps(data).decode("utf-8"))


class KeyGuard:
    """Passes streamed text on, except what could be the start of the API key.

    Each :meth:`feed` returns the text that is safe to send now: every whole occurrence of the
    key is replaced by ``[redacted]``, and the longest tail that is a prefix of the key is held
    back until the next fragment shows whether the key follows. Ordinary text is never held:
    keys start with ``sk-``/``AIza``-like prefixes that answers rarely end in. :meth:`flush`
    gives the held tail (at the end of a complete reply; on failure it is dropped).
    """

    __slots__ = ("_held", "_key")

    def __init__(self, key: str) -> None:
        self._key = key
        self._held = ""

    def feed(self, text: str) -> str:
        if not self._key:
            return text
        buffer = self._held + text
        if self._key in buffer:
            buffer = buffer.replace(self._key, REDACTED)
        keep = 0
        for size in range(min(len(self._key) - 1, len(buffer)), 0, -1):
            if self._key.startswith(buffer[-size:]):
                keep = size
                break
        self._held = buffer[len(buffer) - keep :] if keep else ""
        return buffer[: len(buffer) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held
