"""Gemini ``generateContent`` (``POST {base_url}/models/{model}:generateContent``).

- The key goes in the ``x-goog-api-key`` header, never in the URL (URLs end up in error
  messages and logs).
- Gemini has no switch for one call per step: only the reply's first ``functionCall`` is used.
- A call's ``thoughtSignature`` goes to the browser in ``meta`` and is put back on the same
  ``functionCall`` part when the browser sends the conversation again. A call in the history
  without one (made by another model, e.g. Chrome's on-device model earlier in the conversation,
  or a conversation trimmed or rebuilt by the page) gets :data:`FALLBACK_SIGNATURE`, the dummy
  value Google documents for function calls whose signature is not available ("Thought
  signatures", FAQ, https://ai.google.dev/gemini-api/docs/thought-signatures): Gemini 3 models
  answer 400 for a function call without a signature, and skip validation for this value.
- Tool schemas are reduced to the OpenAPI subset Gemini accepts (:func:`reduce_schema`).
- Results go back as ``functionResponse`` parts: ``{"output": text}`` or ``{"error": text}``.
- Streaming: ``:streamGenerateContent?alt=sse`` answers server-sent events whose ``data`` is
  each a ``GenerateContentResponse`` holding the next parts (text in fragments, a
  ``functionCall`` whole); the last one has ``finishReason``. :class:`GeminiStream` joins the
  parts into the response ``parse`` reads; text parts (not ``thought``) are passed on as they
  come. An ``{"error": ...}`` object in the stream is a failure.
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import quote

from pysite_agent.core.sse import ServerSentEvent
from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server.names import GEMINI_NAMES, NameMap, NameRule
from pysite_agent.server.providers._base import (
    NO_REPLY,
    STREAM_CUT,
    TRUNCATED_CALL,
    Prepared,
    StreamFailed,
    Unusable,
    UpstreamRequest,
    answer_or_nothing,
    as_object,
    busy_status,
    event_json,
    is_keepalive,
    merged_root,
    no_answer,
    obj,
    tool_reply,
)

MAX_SCHEMA_DEPTH: Final = 24
FALLBACK_SIGNATURE: Final = "skip_thought_signature_validator"
"""Google's documented ``thoughtSignature`` for a function call that has none (see above)."""

_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_COPIED: Final = (
    "description",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
)
_FORMATS: Final = {
    "string": {"enum", "date-time"},
    "integer": {"int32", "int64"},
    "number": {"float", "double"},
}


def _resolve(ref: Any, root: dict[str, Any]) -> dict[str, Any] | None:
    """A local ``$ref`` (``#``, ``#/$defs/X``, ``#/definitions/X``, JSON-pointer paths)."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return None
    return node if isinstance(node, dict) else None


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    parts = [p for p in node.get("allOf", []) if isinstance(p, dict)]
    merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    own_properties = merged.get("properties")
    own_required = merged.get("required")
    properties: dict[str, Any] = dict(own_properties) if isinstance(own_properties, dict) else {}
    required: list[Any] = list(own_required) if isinstance(own_required, list) else []
    for part in parts:
        for key, value in part.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    properties.setdefault(name, sub)
            elif key == "required" and isinstance(value, list):
                required.extend(value)
            else:
                merged.setdefault(key, value)
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def _reduce(node: Any, root: dict[str, Any], depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, dict) or depth > MAX_SCHEMA_DEPTH:
        return {}
    ref = node.get("$ref")
    if ref is not None:
        target = _resolve(ref, root) if ref not in refs else None
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if target is None:  # remote, unknown or recursive: keep what is said beside it
            return _reduce(rest, root, depth + 1, refs)
        return _reduce({**target, **rest}, root, depth + 1, (*refs, ref))
    if isinstance(node.get("allOf"), list):
        node = _merge_all_of(node)

    out: dict[str, Any] = {}
    nullable = node.get("nullable") is True
    kind = node.get("type")
    any_of_types: list[str] = []
    if isinstance(kind, list):
        names = [t for t in kind if isinstance(t, str)]
        nullable = nullable or "null" in names
        names = [t for t in names if t in _TYPES]
        if len(names) == 1:
            kind = names[0]
        else:
            any_of_types, kind = names, None
    elif kind == "null":
        kind, nullable = None, True
    if not isinstance(kind, str) or kind not in _TYPES:
        kind = None

    for key in _COPIED:
        value = node.get(key)
        if key == "description":
            if isinstance(value, str) and value:
                out[key] = value
        elif key == "pattern":
            if isinstance(value, str):
                out[key] = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value

    values = node.get("enum")
    if "const" in node:
        values = [node["const"]]
    if isinstance(values, list) and values:
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) == len(values):
            out["enum"] = strings
            kind = kind or "string"
        else:
            note = "Allowed values: " + ", ".join(repr(v) for v in values[:20])
            out["description"] = f"{out['description']} ({note})" if "description" in out else note

    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        reduced = {
            str(name): _reduce(sub, root, depth + 1, refs) for name, sub in properties.items()
        }
        out["properties"] = reduced
        kind = kind or "object"
        required = node.get("required")
        if isinstance(required, list):
            kept = [r for r in dict.fromkeys(required) if isinstance(r, str) and r in reduced]
            if kept:
                out["required"] = kept
    items = node.get("items")
    if isinstance(items, list):  # tuple form (old drafts): keep the first item's schema
        items = items[0] if items else None
    if isinstance(items, dict):
        out["items"] = _reduce(items, root, depth + 1, refs)
        kind = kind or "array"

    alternatives = node.get("anyOf", node.get("oneOf"))
    branches: list[dict[str, Any]] = []
    if isinstance(alternatives, list):
        for alt in alternatives:
            if isinstance(alt, dict) and alt.get("type") == "null":
                nullable = True
                continue
            reduced_alt = _reduce(alt, root, depth + 1, refs)
            if reduced_alt:
                branches.append(reduced_alt)
    branches.extend({"type": t} for t in any_of_types)
    if len(branches) == 1 and kind is None:
        single = branches[0]
        out = {**single, **{k: v for k, v in out.items() if k != "type"}}
        kind = single.get("type")
    elif branches:
        out["anyOf"] = branches

    if kind == "object" and not out.get("properties"):
        # Gemini refuses an OBJECT without properties ("should be non-empty for OBJECT
        # type"): leave such a free-form object untyped.
        kind = None
    if kind is not None:
        out["type"] = kind
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS.get(kind, set()):
            out["format"] = fmt
    if kind != "array":
        out.pop("items", None)
        out.pop("minItems", None)
        out.pop("maxItems", None)
    if nullable and out:
        out["nullable"] = True
    return out


def reduce_schema(schema: Any) -> dict[str, Any] | None:
    """A tool's input schema in the subset Gemini's ``parameters`` accepts.

    Drops ``$schema``, ``$id``, ``$defs``, ``additionalProperties``, ``default``, ``examples``,
    ``title`` and other keywords Gemini refuses; inlines local ``$ref`` (a recursive one is
    cut); merges ``allOf``; turns ``oneOf`` into ``anyOf``, ``const`` into ``enum``, type lists
    and ``null`` branches into ``nullable``; keeps ``required`` (only names that are
    properties). Returns ``None`` for a tool without parameters (Gemini wants them left out).
    """
    if not isinstance(schema, dict):
        return None
    reduced = _reduce(schema, schema, 0, ())
    if not reduced.get("properties"):
        return None
    reduced["type"] = "object"
    reduced.pop("nullable", None)
    reduced.pop("anyOf", None)
    return reduced


def _contents(prepared: Prepared) -> list[dict[str, Any]]:
    names = prepared.names
    contents: list[dict[str, Any]] = []
    for item in prepared.items:
        part: dict[str, Any]
        if isinstance(item, UserText):
            role, part = "user", {"text": item.text}
        elif isinstance(item, AssistantText):
            role, part = "model", {"text": item.text}
        elif isinstance(item, Call):
            role = "model"
            call = {"name": names.provider(item.name), "args": as_object(item.arguments)}
            part = {"functionCall": call}
            signature = (item.meta or {}).get("thoughtSignature")
            valid = isinstance(signature, str) and signature
            part["thoughtSignature"] = signature if valid else FALLBACK_SIGNATURE
        else:
            assert isinstance(item, Result)
            role = "user"
            key = "error" if item.is_error else "output"
            part = {
                "functionResponse": {
                    "name": names.provider(item.name),
                    "response": {key: item.content},
                }
            }
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].append(part)
        else:
            contents.append({"role": role, "parts": [part]})
    return contents


class Gemini:
    name = "gemini"
    name_rule: NameRule = GEMINI_NAMES

    def build(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        body: dict[str, Any] = {
            "contents": _contents(prepared),
            "generationConfig": {"maxOutputTokens": prepared.max_tokens},
        }
        if prepared.instructions:
            body["systemInstruction"] = {"parts": [{"text": prepared.instructions}]}
        if prepared.tools:
            declarations = []
            for tool in prepared.tools:
                declaration: dict[str, Any] = {
                    "name": prepared.names.provider(tool["name"]),
                    "description": tool["description"],
                }
                schema = tool["inputSchema"]
                parameters = reduce_schema(
                    merged_root(schema) if isinstance(schema, dict) else schema
                )
                if parameters is not None:
                    declaration["parameters"] = parameters
                declarations.append(declaration)
            body["tools"] = [{"functionDeclarations": declarations}]
            body["toolConfig"] = {"functionCallingConfig": {"mode": "AUTO"}}
        model = prepared.model.removeprefix("models/")
        url = f"{base_url}/models/{quote(model, safe='')}:generateContent"
        headers = {"x-goog-api-key": api_key, "content-type": "application/json"}
        return UpstreamRequest(url, headers, body)

    def parse(self, data: Any, names: NameMap) -> dict[str, Any]:
        data = obj(data, "the reply")
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = data.get("promptFeedback")
            block = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if isinstance(block, str):
                raise no_answer(block, f"no candidates, promptFeedback.blockReason {block!r}")
            raise Unusable(NO_REPLY, "no candidates (blocked prompt?)")
        candidate = obj(candidates[0], "a candidate")
        finish = candidate.get("finishReason")
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            raise no_answer(finish, f"no parts, finishReason {finish!r}")
        texts: list[str] = []
        thought = False
        for part in parts:
            part = obj(part, "a part")
            call = part.get("functionCall")
            if call is not None:
                call = obj(call, "a functionCall")
                if finish == "MAX_TOKENS":
                    raise Unusable(TRUNCATED_CALL, "functionCall with finishReason MAX_TOKENS")
                arguments = call.get("args")
                if arguments is None:
                    arguments = {}
                signature = part.get("thoughtSignature")
                meta = {"thoughtSignature": signature} if isinstance(signature, str) else None
                name = call.get("name")
                return tool_reply(
                    names.original(name) if isinstance(name, str) else "",
                    arguments,
                    call.get("id"),
                    meta,
                )
            thought = thought or part.get("thought") is True
            if isinstance(part.get("text"), str) and part.get("thought") is not True:
                texts.append(part["text"])
        text = "".join(texts)
        if finish == "MALFORMED_FUNCTION_CALL" or (
            not text.strip() and finish not in (None, "STOP")
        ):
            raise no_answer(finish, f"no text, finishReason {finish!r}")
        return answer_or_nothing(text, "thinking" if thought else finish)

    def build_stream(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        request = self.build(prepared, base_url, api_key)
        url = request.url.removesuffix(":generateContent") + ":streamGenerateContent?alt=sse"
        return UpstreamRequest(url, request.headers, request.body)

    def stream_reader(self) -> GeminiStream:
        return GeminiStream()


class GeminiStream:
    """Joins a ``streamGenerateContent`` stream into one response (see the module docstring)."""

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._finish: Any = None
        self._candidates = False
        self._blocked: Any = None

    def feed(self, event: ServerSentEvent) -> list[str]:
        if is_keepalive(event):
            return []
        data = obj(event_json(event), "a stream chunk")
        if "error" in data:
            raise StreamFailed(json.dumps(data)[:2000], busy_status(data))
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._blocked = feedback["blockReason"]
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return []
        self._candidates = True
        candidate = obj(candidates[0], "a candidate")
        if candidate.get("finishReason") is not None:
            self._finish = candidate["finishReason"]
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        out: list[str] = []
        for part in parts if isinstance(parts, list) else []:
            self._parts.append(part)
            if isinstance(part, dict) and part.get("thought") is not True:
                text = part.get("text")
                if isinstance(text, str) and text and "functionCall" not in part:
                    out.append(text)
        return out

    def reply(self, names: NameMap) -> dict[str, Any]:
        if self._blocked is not None and not self._candidates:
            raise Unusable(NO_REPLY, f"prompt blocked: {self._blocked!r}")
        if self._finish is None:
            raise Unusable(STREAM_CUT, "no finishReason")
        candidate: dict[str, Any] = {"finishReason": self._finish, "index": 0}
        if self._parts:
            candidate["content"] = {"parts": self._parts, "role": "model"}
        return GEMINI.parse({"candidates": [candidate]}, names)


GEMINI = Gemini()
