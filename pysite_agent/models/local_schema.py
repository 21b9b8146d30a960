"""The reply schema for a model that runs in the page (``local_model()``), as llama.cpp reads it.

Pure Python (no ``js``), checked by mypy in strict mode. The reply format is the one Chrome's
``responseConstraint`` path uses (:func:`pysite_agent.models.chrome.schema.response_constraint`): an
``anyOf`` with one branch ``{type: "answer", text}`` and one branch per tool ``{type: "tool",
name: <const NAME>, arguments: <its inputSchema, $ref inlined>}``. The engine hands it to
llama.cpp as ``response_format: {type: "json_schema", json_schema: {name, schema}}``, and
llama.cpp turns it into a grammar itself (its ``json-schema-to-grammar``); nothing here writes a
grammar.

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
  ``examples``, ``default``, ``deprecated``, ``readOnly``, ``writeOnly``);
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

from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.models.chrome.schema import response_constraint

__all__ = ["DROPPED_KEYWORDS", "grammar_schema", "reply_schema"]

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
        "default",
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
    Chrome's reply constraint (:func:`pysite_agent.models.chrome.schema.response_constraint`: one
    answer branch, one branch per tool, ``$ref`` inlined and recursion cut) simplified for the
    grammar (:func:`grammar_schema`)."""
    simplified = grammar_schema(response_constraint(tools))
    assert isinstance(simplified, dict)
    return simplified


def coarse_reply_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The fallback when llama.cpp refuses :func:`reply_schema`: the same branches, each tool's
    ``arguments`` only ``{"type": "object"}`` (the gateway still validates them)."""
    coarse = [
        {"name": tool.get("name"), "inputSchema": {"type": "object"}}
        for tool in tools
        if isinstance(tool.get("name"), str) and tool.get("name")
    ]
    return reply_schema(coarse)
