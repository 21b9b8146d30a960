"""A constraint reply as it streams, and as a whole.

Pure (no JS): :class:`AnswerStream` passes on the answer text of a reply written as protocol
v1's JSON reply shape while it streams (never tool-call JSON); :func:`parse_constraint_reply`
reads the whole reply text into the reply (:func:`pysite_agent.core.wire.parse_reply`).
"""

from __future__ import annotations

import re
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.validation import NotJsonData
from pysite_agent.core.wire import load_reply_text, not_empty, parse_reply

__all__ = ["AnswerStream", "parse_constraint_reply"]


def parse_constraint_reply(text: object, *, model_name: str) -> dict[str, Any]:
    """The reply in ``text``: JSON in protocol v1's reply shape
    (:func:`pysite_agent.core.wire.parse_reply`).

    Raises:
        SiteAgentError: ``bad-reply`` when ``text`` is not JSON (the message names
            ``model_name``, e.g. ``"Chrome's model"``, and quotes the first 200 characters) or
            not a reply.
    """
    raw = text if isinstance(text, str) else str(text)
    try:
        value = load_reply_text(raw)
    except NotJsonData as exc:
        snippet = raw[:200]
        raise SiteAgentError(
            "bad-reply",
            f"{model_name} replied with text that is not JSON data ({str(exc)[:120]}): {snippet!r}",
        ) from None
    return not_empty(dict(parse_reply(value)), model_name)


_ANSWER_HEAD = re.compile(r'\s*\{\s*"type"\s*:\s*"answer"\s*,\s*"text"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AnswerStream:
    """Answer text out of a ``responseConstraint`` reply while it streams.

    The reply is JSON. Text is passed on only once the reply is known to be an answer: it
    starts ``{"type": "answer", "text": "`` (white space allowed). Then each :meth:`feed`
    returns the newly decoded characters of ``text`` (JSON escapes decoded; an escape cut
    between two chunks waits for the next one), and nothing after the closing quote. A reply
    that starts any other way (a tool call, or the keys in another order) gives no text: its
    answer, if any, arrives whole with the final reply.
    """

    def __init__(self) -> None:
        self._raw = ""
        self._pos = -1  # index in _raw where the undecoded part of the text starts; -1: not yet
        self._closed = False
        self._refused = False

    @property
    def closed(self) -> bool:
        """Whether the answer's closing quote has been read."""
        return self._closed

    def feed(self, chunk: str) -> str:
        if self._refused or self._closed:
            return ""
        self._raw += chunk
        if self._pos < 0:
            match = _ANSWER_HEAD.match(self._raw)
            if match is None:
                if not _could_become_answer(self._raw):
                    self._refused = True
                return ""
            self._pos = match.end()
        out: list[str] = []
        raw, i = self._raw, self._pos
        while i < len(raw):
            char = raw[i]
            if char == '"':
                self._closed = True
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape continues in the next chunk
            code = raw[i + 1]
            if code == "u":
                if i + 6 > len(raw):
                    break
                digits = raw[i + 2 : i + 6]
                try:
                    point = int(digits, 16)
                except ValueError:
                    self._refused = True
                    break
                if 0xD800 <= point < 0xDC00:  # a surrogate pair: wait for its second half
                    if i + 12 > len(raw):
                        break
                    try:
                        low = int(raw[i + 8 : i + 12], 16)
                    except ValueError:
                        self._refused = True
                        break
                    out.append(chr(0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
                out.append(chr(point))
                i += 6
                continue
            out.append(_ESCAPES.get(code, code))
            i += 2
        self._pos = i
        return "".join(out)


def _could_become_answer(raw: str) -> bool:
    """Whether ``raw`` may still grow into the answer head (it is a prefix of one)."""
    probe = raw.lstrip()
    template = '{"type":"answer","text":"'
    squeezed = re.sub(r"\s+", "", probe)
    return template.startswith(squeezed[: len(template)]) or squeezed.startswith(template)
