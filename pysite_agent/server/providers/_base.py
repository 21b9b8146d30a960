"""What every provider module shares."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from pysite_agent.core.sse import ServerSentEvent
from pysite_agent.server._conversation import Item
from pysite_agent.server.names import NameMap, NameRule


@dataclass(frozen=True)
class Prepared:
    """A checked request, ready to translate."""

    model: str
    max_tokens: int
    instructions: str
    items: list[Item]
    tools: list[dict[str, Any]]
    names: NameMap


@dataclass(frozen=True)
class UpstreamRequest:
    url: str
    headers: dict[str, str] = field(repr=False)
    body: dict[str, Any]


class Unusable(Exception):
    """The provider answered 2xx, but the reply cannot be passed on.

    ``str(exc)`` is a fixed, client-safe sentence; ``detail`` says more for the logs.
    """

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


UNREADABLE = "The model provider's reply could not be read."
TRUNCATED_CALL = "The model stopped before finishing its tool call (output token limit)."
NO_REPLY = "The model provider returned no usable reply."


STREAM_CUT = "The model provider's stream ended before the reply was complete."
STREAM_FAILED = "The model provider reported an error during the answer."


BUSY_STATUSES: Final = frozenset({429, 503, 529})
"""Provider statuses that mean "busy, try again": rate limited (429), unavailable (503),
Anthropic's overloaded (529)."""

_BUSY_KINDS: Final[dict[str, int]] = {
    "overloaded_error": 529,  # Anthropic
    "rate_limit_error": 429,  # Anthropic; some OpenAI-compatible servers
    "rate_limit_exceeded": 429,  # OpenAI's error code
    "insufficient_quota": 429,
    "RESOURCE_EXHAUSTED": 429,  # Gemini (google.rpc.Code)
    "UNAVAILABLE": 503,
    "overloaded": 503,
    "server_overloaded": 503,
}


def busy_status(data: Any) -> int | None:
    """The busy status (429, 503 or 529) an in-stream error object stands for, else ``None``.

    Reads ``{"error": {"type" | "code" | "status": ...}}`` as Anthropic (``overloaded_error``,
    ``rate_limit_error``), OpenAI and compatible servers (``rate_limit_exceeded``, a numeric
    ``code``) and Gemini (``code`` 429/503, ``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``) send it.
    """
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("type", "code", "status"):
        value = error.get(key)
        if isinstance(value, str) and value in _BUSY_KINDS:
            return _BUSY_KINDS[value]
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value in BUSY_STATUSES:
            return value
    return None


class StreamFailed(Exception):
    """The provider's stream carried an error event (``detail``: its data, for the logs;
    ``busy``: the busy status it stands for, see :func:`busy_status`)."""

    def __init__(self, detail: str, busy: int | None = None) -> None:
        super().__init__(STREAM_FAILED)
        self.detail = detail
        self.busy = busy


class StreamReader(Protocol):
    """Reads one provider stream: ``feed`` each server-sent event, get the answer text it adds.

    ``feed`` returns new fragments of answer text (never tool-call JSON; may be empty) and
    raises :class:`StreamFailed` for an error event or :class:`Unusable` for unreadable data.
    ``reply(names)`` gives the protocol v1 reply once the stream ended (the same rules as the
    provider's ``parse``, applied to the reply the stream adds up to), or raises
    :class:`Unusable` (``STREAM_CUT`` when the stream stopped before its end marker).
    """

    def feed(self, event: ServerSentEvent) -> list[str]: ...

    def reply(self, names: NameMap) -> dict[str, Any]: ...


class Provider(Protocol):
    name: str
    name_rule: NameRule

    def build(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest: ...

    def parse(self, data: Any, names: NameMap) -> dict[str, Any]: ...

    def build_stream(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        """The provider's streaming request for the same turn (same body, streaming on)."""
        ...

    def stream_reader(self) -> StreamReader: ...


def is_keepalive(event: ServerSentEvent) -> bool:
    """An event that only keeps the connection open: empty data, or data that is itself a
    comment (``data: : keepalive``, which some gateways send instead of a comment line)."""
    data = event.data.strip()
    return (
        not data
        or data.startswith(":")
        or (event.event in ("keepalive", "ping") and not data.startswith("{"))
    )


def event_json(event: ServerSentEvent) -> Any:
    """An event's data as JSON (:class:`Unusable` when it is not)."""
    from pysite_agent.server import _jsonutil

    try:
        return _jsonutil.loads(event.data)
    except ValueError:
        raise Unusable(
            UNREADABLE, f"a stream event that is not JSON: {event.data[:200]!r}"
        ) from None


def new_call_id() -> str:
    return f"call_{secrets.token_hex(8)}"


def as_object(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments as the JSON object providers require in history."""
    if isinstance(arguments, dict):
        return arguments
    return {"value": arguments}


def root_object_schema(schema: Any) -> dict[str, Any]:
    """A tool's input schema with ``"type": "object"`` at the root, as providers require."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return {"type": "object", "properties": {}}
    return {**schema, "type": "object"}


def parse_arguments(text: Any) -> Any:
    """Arguments as a model sent them in a JSON string.

    A JSON object comes back as a dict. No arguments at all (``None``, ``""`` or only white
    space, which some OpenAI-compatible servers send for a tool without parameters) mean ``{}``.
    Anything else (not JSON, not an object, deeply nested, non-finite numbers) comes back as the
    original string, which the browser's argument check refuses as an invalid call: it never
    crashes the proxy.
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}
    if not isinstance(text, str):
        return text if isinstance(text, dict) else json.dumps(text)
    from pysite_agent.server import _jsonutil

    try:
        value = _jsonutil.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and _jsonutil.depth(value, 64):
        return value
    return text


def tool_reply(
    name: str, arguments: Any, call_id: Any, meta: dict[str, Any] | None
) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise Unusable(UNREADABLE, "a tool call without a name")
    reply: dict[str, Any] = {"type": "tool", "name": name, "arguments": arguments}
    reply["id"] = call_id if isinstance(call_id, str) and call_id else new_call_id()
    if meta:
        reply["meta"] = meta
    return reply


def answer_reply(text: str) -> dict[str, Any]:
    return {"type": "answer", "text": text}


def obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Unusable(UNREADABLE, f"{what} is not an object")
    return value
