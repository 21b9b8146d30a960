"""The reply schema for a model that runs in the page (``local_model()``), as llama.cpp reads it.

Pure Python (no ``js``), checked by mypy in strict mode. The reply format is a short one
(:data:`REPLY_FORMAT`): ``{"tool": NAME, "arguments": {...}}`` to call a tool, or ``{"answer":
TEXT}``. Every reply token is decoded one at a time under the grammar, the forced ones too, so
every key costs time on a CPU: this format has the tool's name first, then only that tool's
arguments, and no ``type`` key (Chrome's format, :func:`pysite_agent.models.chrome.schema.
response_constraint`, writes ``{"type": "tool", "name": ..., "arguments": ...}``; measured in
docs/local-model.md). The schema is an ``anyOf`` with one branch ``{answer: string}`` and one
branch per tool ``{tool: <const NAME>, arguments: <its inputSchema, $ref inlined>}``;
:func:`to_protocol` turns a reply back into protocol v1's shape. The engine hands the schema
to llama.cpp as ``response_format: {type: "json_schema", json_schema: {name, schema}}``, and
llama.cpp turns it into a grammar itself (its ``json-schema-to-grammar``, which writes an
object's keys in the order of its ``properties``) when the grammar written from it
(:mod:`pysite_agent.models.local_grammar`) is refused.

That converter reads a subset of JSON Schema (llama.cpp, ``grammars/README.md``, "JSON Schemas
→ GBNF"). :func:`grammar_schema` keeps what it reads and simplifies the rest, always towards a
*looser* schema, so that every reply the grammar allows that is valid for the tool is still
possible:

- kept: ``type``, ``properties``, ``required``, ``additionalProperties``, ``items``,
  ``prefixItems``, ``minItems``/``maxItems``, ``enum``, ``const``, ``anyOf``, ``allOf``,
  ``minLength``/``maxLength``, ``minimum``/``maximum``/``exclusiveMinimum``/
  ``exclusiveMaximum`` on integers, ``format`` ``date``/``time``/``date-time``/``uuid``,
  and ``pattern`` when it is anchored (``^...$``);
- ``oneOf`` becomes ``anyOf`` (the grammar cannot say "exactly one");
- dropped (:data:`DROPPED_KEYWORDS`): ``not``, ``if``/``then``/``else``, ``dependentRequired``,
  ``dependentSchemas``, ``patternProperties``, ``propertyNames``, ``unevaluatedProperties``,
  ``unevaluatedItems``, ``contains``, ``minContains``/``maxContains``, ``uniqueItems``,
  ``multipleOf``, ``minProperties``/``maxProperties``, ranges on non-integer numbers, other
  ``format`` values, an unanchored ``pattern``, and annotations (``description``, ``title``,
  ``examples``, ``deprecated``, ``readOnly``, ``writeOnly``; ``default`` stays: grounded
  arguments offer it, :mod:`pysite_agent.models.local_grounding`);
- an object schema with ``properties`` and no ``additionalProperties`` (and no ``allOf`` in
  or around it) gets
  ``additionalProperties: false``: the model writes only the declared arguments (a tool's
  schema accepts those), instead of inventing others.

The arguments the model writes are still validated against the tool's real ``inputSchema`` by
the agent's gateway before anything runs (README, "The safety rules"), so a simplification can
let through a reply the gateway refuses (the model sees why), never a call that runs with
invalid arguments.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.text import shortened
from pysite_agent.core.wire import load_reply_text, parse_reply
from pysite_agent.models.chrome.prompt import PromptLayout
from pysite_agent.models.chrome.schema import constraint_schema
from pysite_agent.models.chrome.stream import AnswerStream
from pysite_agent.models.local_grammar import reply_grammar
from pysite_agent.models.local_grounding import said
from pysite_agent.models.local_match import shortlist

__all__ = [
    "DROPPED_KEYWORDS",
    "LAYOUT",
    "PLAIN_ANSWERS",
    "QUOTED_RESULT_CHARS",
    "REPEAT_PENALTY",
    "REPLY_FORMAT",
    "LocalAnswerStream",
    "coarse_reply_schema",
    "grammar_schema",
    "read_reply",
    "reply_constraint",
    "reply_schema",
    "to_protocol",
    "with_words",
]

REPLY_FORMAT = (
    "Reply with exactly one JSON object: "
    '{"tool":"<tool name>","arguments":{...}} to call one tool, or '
    '{"answer":"..."} to answer the visitor.'
)
"""The closing line of the prompt: the two shapes :func:`reply_schema` allows, written out
(measured with SmolLM2-135M, a shorter line made it answer in words) in the compact spelling
the grammar allows (:mod:`pysite_agent.models.local_grammar`)."""

LAYOUT = PromptLayout(REPLY_FORMAT, format_first=True, signatures=False)
"""The prompt's layout: the reply format after the tool list (names and descriptions: the
grammar writes the arguments), so it ends with the conversation's last message and llama.cpp
reuses all before it (docs/local-model.md, "The prompt")."""

REPEAT_PENALTY = 1.1
"""llama.cpp's ``repeat_penalty`` for every step (its long-standing default, over the last 64
tokens): greedy decoding of a small model otherwise repeats itself, an answer's phrase or a
list's item, until the reply's token limit (measured: docs/local-model.md)."""

DROPPED_KEYWORDS = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
        "multipleOf",
        "minProperties",
        "maxProperties",
        "description",
        "title",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
"""Keywords :func:`grammar_schema` removes (the grammar cannot express them, or they are
annotations that only cost tokens)."""

GRAMMAR_FORMATS = frozenset({"date", "time", "date-time", "uuid"})
"""``format`` values llama.cpp's converter turns into a grammar; other formats are dropped."""

_RANGE = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "prefixItems")


def _integer_only(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "integer" or (isinstance(kind, list) and kind == ["integer"])


def _anchored(pattern: Any) -> bool:
    return isinstance(pattern, str) and pattern.startswith("^") and pattern.endswith("$")


def grammar_schema(schema: Any, *, _part: bool = False) -> Any:
    """``schema`` simplified to what llama.cpp's schema-to-grammar converter reads (see the
    module docstring for the rules). Input is plain JSON data and is not changed; a boolean
    schema stays as it is (``true``: anything, ``false``: nothing). A branch of ``allOf`` gets
    no ``additionalProperties: false`` (its siblings declare the other properties)."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        key = str(key)
        if key in DROPPED_KEYWORDS:
            continue
        if key == "oneOf":
            key = "anyOf"
        if key in _RANGE and not _integer_only(schema):
            continue
        if key == "format" and value not in GRAMMAR_FORMATS:
            continue
        if key == "pattern" and not _anchored(value):
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {str(k): grammar_schema(v) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            merged = [grammar_schema(v, _part=key == "allOf") for v in value]
            out[key] = [*out.get(key, []), *merged] if key == "anyOf" else merged
        elif key in ("items", "additionalProperties"):
            out[key] = grammar_schema(value)
        else:
            out[key] = value
    if (
        not _part
        and "allOf" not in out
        and isinstance(out.get("properties"), Mapping)
        and "additionalProperties" not in out
    ):
        out["additionalProperties"] = False
    return out


def reply_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``response_format`` schema for ``tools`` (definitions ``{name, inputSchema, ...}``):
    ``{"anyOf": [answer branch, one branch per tool]}``, the answer ``{"answer": string}``, a
    tool ``{"tool": {"const": NAME}, "arguments": ...}`` (the name first), its arguments the
    tool's ``inputSchema`` with ``$ref`` inlined and recursion cut
    (:func:`pysite_agent.models.chrome.schema.constraint_schema`) and simplified for the
    grammar (:func:`grammar_schema`). A tool without a name string is left out."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    ]
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        branches.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": name},
                    "arguments": grammar_schema(constraint_schema(tool.get("inputSchema"))),
                },
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


def coarse_reply_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The fallback when llama.cpp refuses :func:`reply_schema`: the same branches, each tool's
    ``arguments`` only ``{"type": "object"}`` (the gateway still validates them)."""
    coarse = [
        {"name": tool.get("name"), "inputSchema": {"type": "object"}}
        for tool in tools
        if isinstance(tool.get("name"), str) and tool.get("name")
    ]
    return reply_schema(coarse)


def reply_constraint(
    tools: Sequence[Mapping[str, Any]],
    level: int = 0,
    messages: Sequence[Mapping[str, Any]] | None = None,
    *,
    match_tools: bool = True,
    ground_arguments: bool = True,
) -> dict[str, Any]:
    """A step's decoding constraint for ``tools``, from the tightest spelling down: level 0,
    ``{"grammar": GBNF}`` (:func:`~pysite_agent.models.local_grammar.reply_grammar`: the
    compact JSON only); 1, ``{"response_format": json_schema}`` (llama.cpp's converter, white
    space allowed); 2, the same with each tool's arguments only an object
    (:func:`coarse_reply_schema`).

    With the conversation's ``messages``, the reply may call only the tools the visitor's
    latest message names (``match_tools``: :func:`~pysite_agent.models.local_match.shortlist`;
    none when it has no content words: an answer; every tool when it names none), and at
    level 0 the arguments are grounded in what the visitor and the tools' results said
    (``ground_arguments``: :mod:`~pysite_agent.models.local_grounding`). Without
    ``messages``, every tool, ungrounded.
    """
    if messages is not None and match_tools:
        names = set(shortlist(messages, tools).names)
        tools = [t for t in tools if t.get("name") in names]
    if level == 0:
        heard = said(messages) if messages is not None and ground_arguments else None
        return {"grammar": reply_grammar(reply_schema(tools), heard)}
    schema = reply_schema(tools) if level == 1 else coarse_reply_schema(tools)
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "reply", "strict": True, "schema": schema},
        }
    }


def to_protocol(value: Any) -> Any:
    """A reply in :data:`REPLY_FORMAT` as protocol v1's reply: ``{"tool": N, "arguments": A}``
    -> ``{"type": "tool", "name": N, "arguments": A}`` and ``{"answer": T}`` -> ``{"type":
    "answer", "text": T}`` (exactly those keys). Anything else is returned as it is, for
    :func:`pysite_agent.core.wire.parse_reply` to accept (a reply in protocol v1's own shape)
    or refuse with its ``bad-reply`` error. The values are not checked here: ``parse_reply``
    checks their types, the gateway the arguments against the tool's real schema."""
    if isinstance(value, Mapping):
        keys = set(value)
        if keys == {"tool", "arguments"}:
            return {"type": "tool", "name": value["tool"], "arguments": value["arguments"]}
        if keys == {"answer"}:
            return {"type": "answer", "text": value["answer"]}
    return value


def read_reply(text: Any, limit: int | None = None) -> dict[str, Any]:
    """The reply ``text`` as protocol v1's reply; ``limit``: the reply took all of its
    ``max_reply_tokens`` (the engine stopped it there), said in the error if it is cut. An
    answer cut there is kept as far as it was written, ending in "…" (it does nothing, and
    the visitor sees what the model wrote); a cut tool call is a ``bad-reply``: it never runs.

    Raises:
        SiteAgentError: ``bad-reply`` for anything else that is not a reply.
    """
    if not isinstance(text, str):
        raise SiteAgentError("bad-reply", "The site's model returned no text.")
    try:
        # Strict and depth-bounded; NaN in a tool's arguments becomes an invalid call.
        value = load_reply_text(text)
    except ValueError as exc:
        what = " replied with text that is not JSON data"
        if limit is not None:
            what = f"'s reply reached its limit of {limit} tokens (max_reply_tokens)"
            stream = LocalAnswerStream()
            written = stream.feed(text)
            if stream.answering and written.strip():
                end = "" if stream.closed else "…"
                return {"type": "answer", "text": written.rstrip() + end}
        raise SiteAgentError(
            "bad-reply", f"The site's model{what} ({exc}): {text[:200]!r}"
        ) from None
    return dict(parse_reply(to_protocol(value)))


_LOCAL_HEAD = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_LOCAL_TEMPLATE = '{"answer":"'


def _has_words(text: Any) -> bool:
    """Whether ``text`` has a letter, a digit or a symbol (Unicode categories L*, N* and S*:
    "8", "€", "👍") rather than only punctuation, white space and invisible characters."""
    return isinstance(text, str) and any(unicodedata.category(ch)[0] in "LNS" for ch in text)


def with_words(reply: dict[str, Any], messages: Any) -> dict[str, Any]:
    """``reply``, or, when it is an answer with no word in it (only punctuation and white
    space: SmolLM2-135M writes ``"..."`` after a denied call), the plain answer of
    :data:`PLAIN_ANSWERS` for the conversation's last message (protocol v1 messages, any
    values)."""
    if reply.get("type") != "answer" or _has_words(reply.get("text")):
        return reply
    return {"type": "answer", "text": _plain_answer(messages)}


PLAIN_ANSWERS: Mapping[str, str] = {
    "denied": "OK, I did not do that.",
    "failed": "Sorry, that did not work.",
    "ran": "Done.",
    "none": "Sorry, I have no answer to that.",
}
"""What :func:`with_words` answers, by the conversation's last message: a call the visitor
denied, a call that failed, a call that ran (its result instead when it is text the page
vouches for: not marked untrusted, up to :data:`QUOTED_RESULT_CHARS`), anything else. Short,
and not the panel's own line for the call ("Not done: Add to cart was not allowed.", "Add
to cart: done."), which the visitor already reads above the answer."""

QUOTED_RESULT_CHARS = 600
"""The most characters of a tool's result a plain answer quotes (longer ones end in "…")."""


def _plain_answer(messages: Any) -> str:
    listed = isinstance(messages, Sequence) and not isinstance(messages, str)
    last = messages[-1] if listed and messages else None
    if not isinstance(last, Mapping) or last.get("role") != "tool":
        return PLAIN_ANSWERS["none"]
    if last.get("denied"):  # as the prompt reads it (chrome.prompt): any true value
        return PLAIN_ANSWERS["denied"]
    if last.get("isError"):
        return PLAIN_ANSWERS["failed"]
    result = last.get("content")
    if last.get("untrusted") or not isinstance(result, str) or not _has_words(result):
        return PLAIN_ANSWERS["ran"]  # untrusted text never becomes the assistant's words
    return shortened(result, QUOTED_RESULT_CHARS)


class LocalAnswerStream:
    """Answer text out of a :data:`REPLY_FORMAT` reply while it streams: once the reply is
    known to start ``{"answer": "`` (white space allowed), the rest goes to an
    :class:`~pysite_agent.models.chrome.AnswerStream` (JSON escapes decoded, nothing after
    the closing quote); a reply that starts any other way (a tool call) gives no text."""

    def __init__(self) -> None:
        self._raw = ""
        self._inner: AnswerStream | None = None
        self._refused = False

    @property
    def answering(self) -> bool:
        """Whether the reply so far is known to be an answer."""
        return self._inner is not None

    @property
    def closed(self) -> bool:
        """Whether the answer's text is complete (its closing quote was read)."""
        return self._inner is not None and self._inner.closed

    def feed(self, chunk: str) -> str:
        """The newly decoded answer characters in ``chunk`` ("" when there are none)."""
        if self._refused:
            return ""
        if self._inner is not None:
            return self._inner.feed(chunk)
        self._raw += chunk
        match = _LOCAL_HEAD.match(self._raw)
        if match is None:
            squeezed = re.sub(r"\s+", "", self._raw)
            if not _LOCAL_TEMPLATE.startswith(squeezed):
                self._refused = True
            return ""
        self._inner = AnswerStream()
        self._inner.feed('{"type": "answer", "text": "')
        return self._inner.feed(self._raw[match.end() :])
