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


NO_ANSWER = "No answer came from the model"
"""The start of the sentence for a finished reply with no text and no tool call."""

_WHY_NOTHING: Final[dict[str, str]] = {
    "content_filter": "the provider's content filter stopped it",
    "refusal": "the model refused to answer",
    "SAFETY": "the provider's safety filter stopped it",
    "PROHIBITED_CONTENT": "the provider's content policy stopped it",
    "BLOCKLIST": "the provider's blocklist stopped it",
    "SPII": "the provider stopped it for personal information",
    "RECITATION": "the provider stopped it for reciting a source",
    "IMAGE_SAFETY": "the provider's safety filter stopped it",
    "MALFORMED_FUNCTION_CALL": "the model wrote a tool call that could not be read",
    "UNEXPECTED_TOOL_CALL": "the model called a tool it was not given",
    "length": "it ran out of output tokens",
    "max_tokens": "it ran out of output tokens",
    "MAX_TOKENS": "it ran out of output tokens",
    "thinking": "the model only thought and wrote nothing",
}


def no_answer(reason: Any, detail: str = "") -> Unusable:
    """The error for a finished reply with neither text nor a tool call (a refusal, a content
    filter, a thinking block only, Gemini's ``STOP`` without parts, ``SAFETY``,
    ``MALFORMED_FUNCTION_CALL``): a plain sentence for the visitor saying that no answer came,
    and why when the provider said (``reason``: its finish or stop reason)."""
    why = _WHY_NOTHING.get(reason) if isinstance(reason, str) else None
    if (
        why is None
        and isinstance(reason, str)
        and reason
        and reason.lower()
        not in (
            "stop",
            "end_turn",
            "stop_sequence",
            "finish_reason_unspecified",
        )
    ):
        why = f"the provider stopped it ({reason[:40]})"
    sentence = f"{NO_ANSWER}: {why}." if why else f"{NO_ANSWER}: it returned an empty reply."
    return Unusable(sentence, detail or f"no text and no tool call, reason {reason!r}")


def answer_or_nothing(text: str, reason: Any, detail: str = "") -> dict[str, Any]:
    """``answer_reply(text)``, or :func:`no_answer` when ``text`` is empty or white space."""
    if text.strip():
        return answer_reply(text)
    raise no_answer(reason, detail)


MAX_DESCRIPTION_CHARS: Final = 1024
"""OpenAI's cap on a function's ``description`` (a longer one fails the whole request)."""


def capped_description(text: Any, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` at the cut."""
    if not isinstance(text, str):
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    """A tool's input schema with ``"type": "object"`` at the root and no ``anyOf``/``oneOf``/
    ``allOf`` there, as Anthropic, OpenAI and Gemini require (a root union, which zod and
    pydantic make, fails every request that lists the tool): see :func:`merged_root`. The
    browser validates every call against the page's real schema before anything runs."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    schema = merged_root(schema)
    if schema.get("type", "object") != "object" or any(key in schema for key in _UNIONS):
        return {"type": "object", "properties": {}}
    return {**schema, "type": "object"}


_UNIONS = ("allOf", "anyOf", "oneOf")


def merged_root(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a root ``allOf``/``anyOf``/``oneOf`` of object schemas merged into one
    object schema, as losslessly as one object can say it.

    - ``allOf``: the properties of every part (a property in several parts gets an
      ``allOf`` of its schemas), ``required`` is the union.
    - ``anyOf``/``oneOf``: the properties of every alternative (a property in several gets an
      ``anyOf`` of its different schemas), ``required`` is what every alternative requires, and
      the description lists each alternative's required properties. ``additionalProperties:
      false`` is kept only when every alternative says it.

    Parts given by a local ``$ref`` (``#/$defs/...``) are looked up. Alternatives that are not
    object schemas are dropped (arguments are always an object, so they never match); a union
    with nothing left, or an ``allOf`` with a part that is not an object, stays as it is (and
    :func:`root_object_schema` sends an empty object schema). Never raises.
    """
    out = dict(schema)
    given = schema.get("$defs")
    defs: dict[str, Any] = given if isinstance(given, dict) else {}
    for key in _UNIONS:
        parts = out.get(key)
        if not isinstance(parts, list) or not parts:
            continue
        resolved = [_resolve(part, defs) for part in parts]
        if not all(isinstance(p, dict) for p in resolved):
            continue
        kept = [p for p in resolved if p.get("type", "object") == "object"]
        if not kept or (key == "allOf" and len(kept) < len(resolved)):
            continue  # an allOf with a part that is not an object accepts no arguments
        resolved = kept  # arguments are always an object: other alternatives never match
        del out[key]
        objects = [merged_root(p) for p in resolved]
        merged = _merge_all(objects) if key == "allOf" else _merge_any(objects)
        props = {**_props(out), **merged["properties"]}
        out["properties"] = props
        required = list(dict.fromkeys([*_required(out), *merged["required"]]))
        if required:
            out["required"] = required
        else:
            out.pop("required", None)
        if merged.get("additionalProperties") is False:
            out.setdefault("additionalProperties", False)
        note = merged.get("note")
        if note:
            base = out.get("description")
            out["description"] = f"{base} {note}" if isinstance(base, str) and base else note
        out["type"] = "object"
    return out


def _resolve(part: Any, defs: dict[str, Any]) -> Any:
    ref = part.get("$ref") if isinstance(part, dict) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        target = defs[ref[8:]]
        return {**target, **{k: v for k, v in part.items() if k != "$ref"}}
    return part


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return dict(props) if isinstance(props, dict) else {}


def _required(schema: dict[str, Any]) -> list[str]:
    required = schema.get("required")
    return [r for r in required if isinstance(r, str)] if isinstance(required, list) else []


def _merge_all(parts: list[dict[str, Any]]) -> dict[str, Any]:
    seen: dict[str, list[Any]] = {}
    required: list[str] = []
    for part in parts:
        for name, spec in _props(part).items():
            if spec not in seen.setdefault(name, []):
                seen[name].append(spec)
        required += _required(part)
    props = {n: specs[0] if len(specs) == 1 else {"allOf": specs} for n, specs in seen.items()}
    closed = any(p.get("additionalProperties") is False for p in parts)
    return {
        "properties": props,
        "required": list(dict.fromkeys(required)),
        "additionalProperties": False if closed else None,
    }


def _merge_any(parts: list[dict[str, Any]]) -> dict[str, Any]:
    seen: dict[str, list[Any]] = {}
    for part in parts:
        for name, spec in _props(part).items():
            if spec not in seen.setdefault(name, []):
                seen[name].append(spec)
    props = {n: specs[0] if len(specs) == 1 else {"anyOf": specs} for n, specs in seen.items()}
    sets = [set(_required(p)) for p in parts]
    common = [r for r in _required(parts[0]) if all(r in s for s in sets)]
    shapes = []
    for i, part in enumerate(parts, 1):
        title = part.get("title") if isinstance(part.get("title"), str) else ""
        needs = ", ".join(_required(part)) or "nothing"
        shapes.append(f"({i}){' ' + title if title else ''} requires {needs}")
    note = f"Give exactly one of these {len(parts)} shapes: " + "; ".join(shapes) + "."
    closed = all(p.get("additionalProperties") is False for p in parts)
    return {
        "properties": props,
        "required": common,
        "additionalProperties": False if closed else None,
        "note": note,
    }


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
