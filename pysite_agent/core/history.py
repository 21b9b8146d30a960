"""The history budget: which part of a conversation a model adapter sends (docs/models.md,
"Long conversations").

Every adapter that sends the conversation uses these rules, each in its own unit:

- the proxy adapter in **messages** and **bytes** of the request body (the server's
  ``max_messages`` and ``max_body_bytes``): :func:`fit_messages`;
- Chrome's built-in model in **characters** (code points) of one prompt text, using
  :func:`current_turn_start` and :func:`cut_text` for the same notion of turn and the same cut
  marker.

Words used here (messages in protocol v1's shapes,
``pysite_agent/schemas/protocol-v1.schema.json``):

- a **turn** starts at a visitor (``user``) message and runs until the next one;
- the **current turn** is the latest visitor message and every call and result after it;
- a tool call and its result are never separated: only whole turns are left out, and the
  current turn is always sent.

Trimming works on the copy of the messages that goes to the model. It never changes the
agent's conversation, and never its safety state: "untrusted output was seen" belongs to the
agent (README rule 5), whatever the model is still shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.fencing import FENCE_TAG

__all__ = [
    "MIN_RESULT_CHARS",
    "Trim",
    "TrimReason",
    "current_turn_start",
    "cut_text",
    "fit_messages",
    "json_bytes",
]

MIN_RESULT_CHARS: Final = 200
"""A tool result is never shortened below this many characters (code points)."""

TrimReason = Literal["max-messages", "max-body-bytes", "prompt-chars"]
"""Which budget made the cut: the server's message count, its body size, or Chrome's prompt."""

_FENCE_CLOSE: Final = f"\n</{FENCE_TAG}>"


def current_turn_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """The index of the latest ``user`` message; ``len(messages)`` when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return len(messages)


def cut_text(text: str, limit: int) -> str:
    """``text`` whole if it fits in ``limit`` code points, else its head and the marker
    ``[… cut N characters]`` (the marker counts towards ``limit`` when ``limit`` allows it).

    A fenced untrusted result (``<untrusted-data …>…</untrusted-data>``, README rule 6) keeps
    its opening line and its closing tag: only the fenced content is cut, so the fence still
    closes.
    """
    if len(text) <= limit:
        return text
    if text.startswith(f"<{FENCE_TAG} ") and text.endswith(_FENCE_CLOSE) and "\n" in text:
        head, _, rest = text.partition("\n")
        inner = rest[: -len(_FENCE_CLOSE)]
        room = max(0, limit - len(head) - 1 - len(_FENCE_CLOSE))
        return f"{head}\n{_cut_plain(inner, room)}{_FENCE_CLOSE}"
    return _cut_plain(text, limit)


def _cut_plain(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(f" [… cut {len(text)} characters]"))
    return text[:keep] + f" [… cut {len(text) - keep} characters]"


def json_bytes(value: Any) -> int:
    """UTF-8 bytes of ``value`` as compact JSON (``separators=(",", ":")``, non-ASCII kept):
    the form the proxy adapter sends."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Trim:
    """What a budget left out of one request (recorded as a trace ``trim`` step).

    Attributes:
        reason: the budget that made the cut (:data:`TrimReason`).
        dropped_messages: older messages not sent (whole turns); ``None`` when the adapter
            does not count them (Chrome's prompt says it in ``notes``).
        shortened_results: tool results of the current turn sent shortened (or ``None``).
        sent_messages: messages sent (or ``None``).
        limit_messages: the message cap applied, if any.
        limit_bytes: the body-size cap applied (bytes), if any.
        notes: what was cut, in words (Chrome's prompt notes).
    """

    reason: TrimReason
    dropped_messages: int | None = None
    shortened_results: int | None = None
    sent_messages: int | None = None
    limit_messages: int | None = None
    limit_bytes: int | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{reason, droppedMessages?, shortenedResults?, sentMessages?, maxMessages?,
        maxBodyBytes?, notes?}``: the fields of a trace ``trim`` step."""
        out: dict[str, Any] = {"reason": self.reason}
        for key, value in (
            ("droppedMessages", self.dropped_messages),
            ("shortenedResults", self.shortened_results),
            ("sentMessages", self.sent_messages),
        ):
            if value is not None:
                out[key] = value
        if self.limit_messages is not None:
            out["maxMessages"] = self.limit_messages
        if self.limit_bytes is not None:
            out["maxBodyBytes"] = self.limit_bytes
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _too_long(what: str) -> SiteAgentError:
    return SiteAgentError(
        "conversation-too-long",
        f"This conversation is too long for the model endpoint ({what}), even with older "
        "messages left out and long results shortened. Start a new conversation.",
    )


def fit_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_messages: int | None,
    max_bytes: int | None,
    overhead_bytes: int = 0,
) -> tuple[list[dict[str, Any]], Trim | None]:
    """The messages to send so that there are at most ``max_messages`` and the request body
    is at most ``max_bytes`` bytes, and what was cut (``None`` when nothing was).

    ``overhead_bytes`` is the size of the rest of the body (the request with ``messages: []``);
    the body's size is then ``overhead_bytes`` plus each message's :func:`json_bytes` plus one
    comma between messages: exactly the size of the compact JSON.

    In order, each only as far as needed:

    1. whole turns are left out, oldest first (messages before the first visitor message go
       first); the current turn is always kept, so a call is never sent without its result;
    2. the current turn's tool results are shortened (:func:`cut_text`, at least
       :data:`MIN_RESULT_CHARS` kept), the older ones first, then the latest.

    Returns:
        ``(messages, trim)``; the messages are copies (the input is never changed).

    Raises:
        SiteAgentError: ``conversation-too-long`` when the current turn alone has more than
            ``max_messages`` messages, or is still over ``max_bytes`` after step 2.
    """
    sizes = [json_bytes(m) for m in messages]

    def body_size(start: int, extra: int = 0) -> int:
        count = len(messages) - start
        return overhead_bytes + sum(sizes[start:]) + max(0, count - 1) + extra

    def fits(start: int) -> bool:
        count = len(messages) - start
        if max_messages is not None and count > max_messages:
            return False
        return max_bytes is None or body_size(start) <= max_bytes

    if fits(0):
        return [dict(m) for m in messages], None
    current = current_turn_start(messages)
    if current == len(messages):
        current = 0
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user" and i <= current]
    start = next((s for s in starts if fits(s)), current)
    # The cap that made the cut: the one that alone would have left out as much.
    by_count = max_messages is not None and len(messages) - start > max_messages
    if max_messages is not None and not by_count:
        earlier = [s for s in starts if s < start]
        by_count = not earlier or len(messages) - earlier[-1] > max_messages
    reason: TrimReason = "max-messages" if by_count else "max-body-bytes"
    kept = [dict(m) for m in messages[start:]]
    if max_messages is not None and len(kept) > max_messages:
        raise _too_long(
            f"the latest message and its {len(kept) - 1} calls and results are more than the "
            f"{max_messages} messages it takes"
        )
    shortened = 0
    if max_bytes is not None and body_size(start) > max_bytes:
        shortened = _shorten_results(kept, sizes[start:], max_bytes, overhead_bytes)
        total = overhead_bytes + sum(json_bytes(m) for m in kept) + max(0, len(kept) - 1)
        if total > max_bytes:
            raise _too_long(
                f"the latest message with its calls and results takes {total} bytes, more "
                f"than the {max_bytes} bytes it accepts"
            )
    return kept, Trim(
        reason=reason,
        dropped_messages=start,
        shortened_results=shortened,
        sent_messages=len(kept),
        limit_messages=max_messages,
        limit_bytes=max_bytes,
    )


def _shorten_results(
    kept: list[dict[str, Any]], sizes: list[int], max_bytes: int, overhead: int
) -> int:
    """Shorten ``kept``'s tool results in place (older first, then the latest) until the body
    fits in ``max_bytes``; returns how many were shortened."""
    sizes = list(sizes)
    results = [i for i, m in enumerate(kept) if m.get("role") == "tool"]
    order = results[:-1] + results[-1:]
    touched: set[int] = set()
    for i in order:
        original = kept[i].get("content")
        if not isinstance(original, str):
            continue
        for _ in range(4):  # again when escapes or the marker made a cut fall short
            excess = overhead + sum(sizes) + max(0, len(kept) - 1) - max_bytes
            content = kept[i]["content"]
            if excess <= 0 or len(content) <= MIN_RESULT_CHARS:
                break
            # A code point is at least one byte: cutting `excess` more characters is close.
            limit = max(MIN_RESULT_CHARS, len(content) - excess)
            kept[i]["content"] = cut_text(original, limit)
            sizes[i] = json_bytes(kept[i])
            touched.add(i)
        if overhead + sum(sizes) + max(0, len(kept) - 1) <= max_bytes:
            break
    return len(touched)
