"""The constraint schema: a tool's ``inputSchema`` made plain for a model.

Pure (no JS): used by any adapter that asks a model for a reply under a JSON Schema constraint
(Chrome's ``responseConstraint``) or declares tools to it (Chrome's native tool use).
:func:`response_constraint` is protocol v1's reply shape as one ``anyOf`` schema;
:func:`inline_refs` inlines local ``$ref`` (recursion cut at :data:`REF_DEPTH`);
:func:`argument_structure` writes a tool's arguments in one line for a prompt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.core.validation import InvalidSchemaError, validator_for

__all__ = [
    "NULL_PLACEHOLDER",
    "REF_DEPTH",
    "argument_structure",
    "constraint_schema",
    "inline_refs",
    "response_constraint",
    "strip_nulls",
]

REF_DEPTH = 3
"""A recursive ``$ref`` is inlined at most this many times along one path of the schema; below
that it becomes ``{}`` (any value). The core still checks the arguments against the tool's real
schema before anything runs (README rule 1)."""

NULL_PLACEHOLDER = "(null)"
"""In a tool result sent as an object (native tool use), a ``null`` array item becomes this
string; keys whose value is ``null`` are removed (Chrome ends the turn on a ``null`` anywhere in
a tool result)."""


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """The local target of ``ref`` (``#`` or ``#/a/b`` with ``~0``/``~1`` escapes), or ``None``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def inline_refs(schema: Mapping[str, Any], *, max_depth: int = REF_DEPTH) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its target, so a model (or Chrome's
    ``responseConstraint``) sees the whole argument structure.

    - ``$ref`` targets are JSON pointers into the schema itself (``#/$defs/x``,
      ``#/definitions/x``, ``#``); keywords next to a ``$ref`` are kept over the target's.
    - A ``$ref`` seen more than ``max_depth`` times on one path (a recursive schema, e.g. a tree)
      becomes ``{}``; a remote or dangling ``$ref`` becomes ``{}`` too.
    - ``$defs``, ``definitions``, ``$schema``, ``$id``, ``$anchor`` and ``$comment`` are dropped.

    The result is plain JSON data; the input is not changed.
    """
    root = schema
    dropped = {"$defs", "definitions", "$schema", "$id", "$anchor", "$comment", "$dynamicAnchor"}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _pointer(root, ref)
            rest = {k: v for k, v in node.items() if k != "$ref" and k not in dropped}
            if not isinstance(target, Mapping) or seen.count(ref) >= max_depth:
                return walk(rest, seen) if rest else {}
            merged = {**walk(target, (*seen, ref)), **walk(rest, seen)}
            return merged
        return {str(k): walk(v, seen) for k, v in node.items() if k not in dropped}

    out = walk(json.loads(json.dumps(schema, default=str)), ())
    return out if isinstance(out, dict) else {}


def constraint_schema(schema: Any) -> dict[str, Any]:
    """A tool's ``inputSchema`` for the constraint or a native declaration: references inlined
    (:func:`inline_refs`); ``{"type": "object"}`` when it is missing, invalid or not an object
    schema (the core still validates the arguments before anything runs)."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    try:
        validator_for(schema)
    except InvalidSchemaError:
        return {"type": "object"}
    plain = inline_refs(schema)
    if plain.get("type") not in (None, "object"):
        return {"type": "object"}
    return plain


def _type_text(schema: Any, depth: int) -> str:
    """A short, readable type for one argument (``string``, ``"S"|"M"``, ``integer[]``,
    ``{a: string, b?: number}``)."""
    if not isinstance(schema, Mapping):
        return "any"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in enum[:12]) + (
            "|…" if len(enum) > 12 else ""
        )
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return " or ".join(_type_text(b, depth) for b in branches[:4])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" or "items" in schema:
        return _type_text(schema.get("items"), depth) + "[]"
    if kind == "object" or "properties" in schema:
        if depth >= 3 or not isinstance(schema.get("properties"), Mapping):
            return "object"
        return "{" + _fields_text(schema, depth + 1) + "}"
    text = str(kind) if isinstance(kind, str) else "any"
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and isinstance(high, int | float):
        text += f" {low}..{high}"
    elif isinstance(low, int | float):
        text += f" >= {low}"
    elif isinstance(high, int | float):
        text += f" <= {high}"
    return text


def _fields_text(schema: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    parts = []
    for name, sub in properties.items():
        mark = "" if name in required_names else "?"
        parts.append(f"{name}{mark}: {_type_text(sub, depth)}")
    return ", ".join(parts)


def argument_structure(schema: Any) -> str:
    """The arguments of a tool in one line, for the prompt: ``(product: string, quantity?:
    integer >= 1)``; ``?`` marks an optional argument, ``[]`` an array, ``a|b`` the allowed
    values. References are inlined first (:func:`inline_refs`)."""
    plain = constraint_schema(schema)
    return "(" + _fields_text(plain, 1) + ")"


def strip_nulls(value: Any) -> Any:
    """``value`` without ``null``: keys whose value is ``None`` are removed, ``None`` items in
    lists become :data:`NULL_PLACEHOLDER` (native tool use: Chrome ends the turn on a ``null``
    anywhere in a tool result)."""
    if isinstance(value, Mapping):
        return {str(k): strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [NULL_PLACEHOLDER if v is None else strip_nulls(v) for v in value]
    return value


def response_constraint(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``responseConstraint`` for ``tools`` (definitions ``{name, inputSchema, ...}``):
    ``{"anyOf": [answer branch, one tool branch per tool]}``; each tool's ``arguments`` is its
    ``inputSchema`` with references inlined (:func:`inline_refs`)."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"type": {"const": "answer"}, "text": {"type": "string"}},
            "required": ["type", "text"],
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
                    "type": {"const": "tool"},
                    "name": {"const": name},
                    "arguments": constraint_schema(tool.get("inputSchema")),
                },
                "required": ["type", "name", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}
