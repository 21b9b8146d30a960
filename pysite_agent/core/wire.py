"""The published wire formats: JSON Schemas in ``pysite_agent/schemas/`` and helpers around them.

- ``protocol-v1.schema.json``: the proxy protocol (request ``{version: 1, instructions,
  messages, tools}``, the two reply shapes, the error body) and the ``messages`` shapes.
- ``trace-v1.schema.json``: the trace of one run.

Both the browser's ``proxy()`` adapter and the server validate against these same files.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.validation import NotJsonData, loads_strict

MAX_REPLY_TEXT_DEPTH = 64
"""A model's reply text nesting deeper than this is refused before it is parsed (the agent's
own bound on a reply, ``agent._replies.MAX_REPLY_DEPTH``, is the same)."""

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SchemaName = Literal["protocol-v1", "trace-v1"]


@cache
def load_schema(name: SchemaName) -> dict[str, Any]:
    """The parsed JSON Schema ``pysite_agent/schemas/NAME.schema.json``."""
    text = (
        resources.files("pysite_agent")
        .joinpath(f"schemas/{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def validator(name: SchemaName, definition: str | None = None) -> Validator:
    """A draft 2020-12 validator for a schema, or for one of its ``$defs`` (e.g. ``"request"``).

    Raises:
        KeyError: for an unknown ``definition``.
    """
    schema = load_schema(name)
    if definition is not None:
        if definition not in schema["$defs"]:
            raise KeyError(definition)
        schema = {**schema, "$ref": f"#/$defs/{definition}"}
        schema.pop("oneOf", None)
    import jsonschema  # on first use: see pysite_agent/core/validation.py

    return jsonschema.Draft202012Validator(schema)


def problems(name: SchemaName, value: Any, definition: str | None = None) -> list[str]:
    """Human-readable problems of ``value`` against a schema (``[]`` when it is valid)."""
    errors = sorted(
        validator(name, definition).iter_errors(value), key=lambda e: list(e.absolute_path)
    )
    out = []
    for error in errors[:8]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where or '(root)'}: {error.message[:200]}")
    return out


class ToolReply(TypedDict, total=False):
    type: Literal["tool"]
    name: str
    arguments: Any
    id: str
    meta: dict[str, Any]


class AnswerReply(TypedDict):
    type: Literal["answer"]
    text: str


def parse_reply(reply: Any) -> ToolReply | AnswerReply:
    """Check a model reply's shape (protocol v1) and return it as a plain dict.

    ``arguments`` is not checked here: invalid arguments go back to the model as an invalid
    call (README, rule 1), they do not end the run.

    Raises:
        SiteAgentError: ``bad-reply`` when ``reply`` is not a dict, has an unknown ``type``,
            is a tool reply without a non-empty string ``name`` (or without ``arguments``),
            or an answer without a string ``text``.
    """
    if not isinstance(reply, dict):
        raise SiteAgentError(
            "bad-reply", f"the model replied with {type(reply).__name__}, not an object"
        )
    kind = reply.get("type")
    if kind == "answer":
        text = reply.get("text")
        if not isinstance(text, str):
            raise SiteAgentError("bad-reply", "an answer reply needs a string 'text'")
        return {"type": "answer", "text": text}
    if kind == "tool":
        name = reply.get("name")
        if not isinstance(name, str) or not name:
            raise SiteAgentError("bad-reply", "a tool reply needs a non-empty string 'name'")
        out: ToolReply = {"type": "tool", "name": name, "arguments": reply.get("arguments")}
        call_id = reply.get("id")
        if call_id is not None:
            if not isinstance(call_id, str) or not call_id:
                raise SiteAgentError("bad-reply", "a tool reply's 'id' must be a non-empty string")
            out["id"] = call_id
        meta = reply.get("meta")
        if meta is not None:
            if not isinstance(meta, dict):
                raise SiteAgentError("bad-reply", "a tool reply's 'meta' must be an object")
            out["meta"] = meta
        return out
    raise SiteAgentError("bad-reply", f"unknown reply type {kind!r}; expected 'tool' or 'answer'")


def _any_constant(name: str) -> float:
    return float(name)


def load_reply_text(text: str) -> Any:
    """A model's reply, as JSON text (a proxy's body or ``reply`` event, Chrome's constrained
    output), as Python data.

    Strict JSON (RFC 8259), with one exception so the model can correct itself: a *tool* reply
    (``"type": "tool"``, or the site-hosted model's ``{"tool": NAME, ...}``) whose ``arguments``
    hold ``NaN``/``Infinity`` comes back with ``arguments`` as their JSON text
    (``'{"n": NaN}'``), which the argument check refuses as an invalid call (code
    ``invalid-arguments``, "NaN is not a JSON number") before anything runs.

    Raises:
        NotJsonData: the text is not JSON, nests deeper than :data:`MAX_REPLY_TEXT_DEPTH`, or
            holds ``NaN``/``Infinity`` outside a tool reply's ``arguments``.
    """
    try:
        return loads_strict(text, max_depth=MAX_REPLY_TEXT_DEPTH)
    except NotJsonData as exc:
        if "JSON number" not in str(exc):
            raise
        first = exc
    value = json.loads(text, parse_constant=_any_constant)
    is_call = isinstance(value, dict) and (
        value.get("type") == "tool" or isinstance(value.get("tool"), str)  # the local format
    )
    if is_call and "arguments" in value:
        arguments = json.dumps(value["arguments"], allow_nan=True, ensure_ascii=False)
        rest = {k: v for k, v in value.items() if k != "arguments"}
        try:
            json.dumps(rest, allow_nan=False)
        except ValueError:
            raise first from None
        return {**rest, "arguments": arguments}
    raise first


def not_empty(reply: dict[str, Any], who: str = "the model") -> dict[str, Any]:
    """``reply``, unless it is an answer whose text is empty or only white space: a finished
    reply with no text and no call is not an answer the visitor can read.

    Raises:
        SiteAgentError: ``model-error``, "No answer came from WHO: it returned an empty reply."
    """
    if reply.get("type") == "answer" and not str(reply.get("text", "")).strip():
        raise SiteAgentError(
            "model-error", f"No answer came from {who}: it returned an empty reply."
        )
    return reply


# Message constructors: the only place the conversation's shapes are written.


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def answer_message(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool_call_message(
    call_id: str, name: str, arguments: Any, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"id": call_id, "name": name, "arguments": arguments}
    if meta is not None:
        call["meta"] = meta
    return {"role": "assistant", "toolCall": call}


def tool_result_message(
    call_id: str,
    name: str,
    content: str,
    *,
    is_error: bool = False,
    untrusted: bool = False,
    denied: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": "tool",
        "toolCallId": call_id,
        "name": name,
        "content": content,
        "isError": is_error,
        "untrusted": untrusted,
    }
    if denied:
        out["denied"] = True
    return out
