"""Server-sent events: an incremental parser and a formatter (pure: no I/O).

Used on both ends of protocol v1's streaming reply (the browser's ``proxy()`` adapter reads
it, the server writes it) and by the server to read the providers' own streams. The rules are
the HTML standard's "Interpreting an event stream" (section 9.2.6): lines end in CR LF, LF or
CR; a line starting with ``:`` is a comment; ``field: value`` (one leading space dropped); an
empty line dispatches the event; ``data`` lines join with LF; an event with no ``data`` line is
not dispatched; ``event`` defaults to ``"message"``. ``id`` and ``retry`` are kept only as far
as this project needs (``id`` is ignored; there is no reconnection).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Final

__all__ = ["SSEParser", "ServerSentEvent", "format_event"]

_BOM: Final = "\ufeff"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event: its type (``event:`` field, default ``"message"``) and data."""

    event: str
    data: str


class SSEParser:
    """Feed bytes (or text) as they arrive; get the complete events back.

    ``feed_bytes`` decodes UTF-8 incrementally (a character split across chunks is kept until
    it is whole; invalid bytes become U+FFFD, as the standard says). ``feed`` takes text.
    Neither raises on bad input. ``pending`` is ``True`` while a started event has not been
    dispatched (a stream that ends then was cut off).
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._cr_pending = False

    @property
    def pending(self) -> bool:
        """Something of an event (a field line, or a partial line) was read but not dispatched."""
        return bool(self._buffer) or bool(self._data) or bool(self._event)

    def feed_bytes(self, chunk: bytes) -> list[ServerSentEvent]:
        """Events completed by ``chunk`` (bytes of a UTF-8 stream)."""
        return self.feed(self._decoder.decode(bytes(chunk)))

    def feed(self, text: str) -> list[ServerSentEvent]:
        """Events completed by ``text``."""
        if not self._started and text:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._cr_pending and text.startswith("\n"):
            text = text[1:]  # the LF of a CR LF split across chunks
        self._cr_pending = False
        events: list[ServerSentEvent] = []
        buffer = self._buffer + text
        start = 0
        length = len(buffer)
        while True:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr < 0 and lf < 0:
                break
            end = lf if cr < 0 else cr if lf < 0 else min(cr, lf)
            line = buffer[start:end]
            if buffer[end] == "\r":
                if end + 1 < length:
                    start = end + 2 if buffer[end + 1] == "\n" else end + 1
                else:
                    start = end + 1
                    self._cr_pending = True
            else:
                start = end + 1
            event = self._line(line)
            if event is not None:
                events.append(event)
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = ServerSentEvent(self._event or "message", "\n".join(self._data))
            self._event = ""
            self._data = []
            return event
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def format_event(event: str, data: str) -> bytes:
    """One event as UTF-8 bytes: ``event: NAME`` then one ``data:`` line per line of ``data``.

    Raises:
        ValueError: ``event`` contains a line break (it would end the field).
    """
    if "\n" in event or "\r" in event:
        raise ValueError("an event name cannot contain a line break")
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body = "".join(f"data: {line}\n" for line in lines)
    return f"event: {event}\n{body}\n".encode()
