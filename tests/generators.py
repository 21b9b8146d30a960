"""Shared Hypothesis strategies for the whole range of data at every boundary (docs/boundaries.md).

Pure Python with only ``hypothesis``: the Pyodide lane copies this helper next to the core
suite (tests/pyodide/test_core_suite.py), so the same strategies run on CPython 3.11 and in
Pyodide's 3.14.

Text: lone UTF-16 surrogates (a JavaScript string cut inside an emoji), bidi controls and
isolates, zero-width and other invisible characters, NUL and C0/C1 controls, astral characters,
very long strings. Numbers: NaN, +-Infinity, -0.0, integers beyond 2**53, huge exponents,
numbers as strings. Structure: nesting to 10,000 levels, several-MB values, None / missing,
wrong types in every position, duplicate keys (as raw JSON text, since a dict cannot hold them).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

LONE_SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00")
#: Unicode bidi controls: embeddings, overrides, isolates, marks (UAX #9, section 2).
BIDI_CONTROLS = tuple("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
#: Zero-width and other invisible characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen,
#: invisible operators, Hangul filler, tag characters).
INVISIBLES = (
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\u2062",
    "\u3164",
    "\U000e0041",
)
C0_C1_CONTROLS = tuple(chr(c) for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)])
ASTRAL = ("\U0001f600", "\U0001f469\u200d\U0001f4bb", "\U00010348", "\U0001d54f")

special_char = st.sampled_from(
    LONE_SURROGATES + BIDI_CONTROLS + INVISIBLES + C0_C1_CONTROLS + ASTRAL
)

#: Any Python str, including lone surrogates (category Cs) and every control.
any_char = st.characters(codec=None, categories=None)


def hostile_text(max_size: int = 200) -> st.SearchStrategy[str]:
    """Strings mixing ordinary text with the characters above (lone surrogates included)."""
    piece = st.one_of(special_char, any_char, st.text(max_size=8))
    return st.lists(piece, max_size=max_size).map("".join)


def cut_emoji() -> st.SearchStrategy[str]:
    """A string cut inside a surrogate pair, the way ``"a😀b".slice(0, 2)`` is in JavaScript."""
    return st.tuples(st.text(max_size=20), st.sampled_from(("\ud83d", "\ude00"))).map(
        lambda t: t[0] + t[1]
    )


def very_long_text(megabytes: float = 2.0) -> str:
    """A string of ``megabytes`` MB (UTF-8) with a lone surrogate and a bidi override in it."""
    size = int(megabytes * 1_000_000)
    return "x" * (size // 2) + "\ud83d\u202e" + "y" * (size // 2)


odd_float = st.sampled_from((float("nan"), float("inf"), float("-inf"), -0.0, 1e308, 5e-324))
big_int = st.one_of(
    st.integers(min_value=2**53 + 1, max_value=2**64), st.integers(max_value=-(2**53) - 1)
)
#: Numbers that arrive as JSON text (what a server writes): non-JSON constants and huge exponents.
number_text = st.sampled_from(
    ("NaN", "Infinity", "-Infinity", "-0", "1e999", "-1e999", "9007199254740993", "1e-400")
)
numbers_as_strings = st.sampled_from(("1", "-0", "1e3", "NaN", "Infinity", "0x10", " 2 "))

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    big_int,
    st.floats(),
    odd_float,
    hostile_text(20),
    numbers_as_strings,
)
#: Any JSON-ish value with hostile leaves, wrong types in every position (a value is any type).
hostile_value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text(8), inner, max_size=4)
    ),
    max_leaves=20,
)


def nested_list(depth: int = 10_000) -> Any:
    """``[[[...]]]`` nested ``depth`` levels, built without recursion."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def nested_dict(depth: int = 10_000, key: str = "a") -> Any:
    """``{"a": {"a": ...}}`` nested ``depth`` levels, built without recursion."""
    value: Any = {}
    for _ in range(depth):
        value = {key: value}
    return value


def dismantle(value: Any) -> None:
    """Empty a deeply nested value from the top, without recursion.

    Freeing ``nested_list(10_000)`` by dropping its last reference recurses in the interpreter's
    deallocator: in Pyodide that overflows the JavaScript stack and kills the interpreter
    ("Pyodide has suffered a fatal error ... Maximum call stack size exceeded", seen on
    Pyodide 314.0.7). Call this on every deep value a test made, before it goes out of scope.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            item.clear()
        elif isinstance(item, dict):
            stack.extend(item.values())
            item.clear()


def nested_json_text(depth: int = 10_000) -> str:
    """The JSON text of an object nested ``depth`` levels (what a server may send)."""
    return '{"a":' * depth + "1" + "}" * depth


def duplicate_keys_json(key: str = "a", first: Any = 1, second: Any = 2) -> str:
    """An object with ``key`` twice; ``json.loads`` keeps the last."""
    k = json.dumps(key)
    return f"{{{k}: {json.dumps(first)}, {k}: {json.dumps(second)}}}"


#: "Nothing" as it arrives: Python None, JSON null, JS undefined (as the FFI names it), missing.
NOTHING = (None, "null", "undefined", "<missing>")


#: JSON values a schema's ``enum`` or ``const`` can hold: hostile strings (lone surrogates
#: included), numbers of every size, and small containers.
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    big_int,
    st.floats(allow_nan=False, allow_infinity=False),  # JSON has neither
    hostile_text(12),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(hostile_text(6), inner, max_size=3)
    ),
    max_leaves=8,
)
_TYPE_NAMES = ("object", "array", "string", "number", "integer", "boolean", "null")
_annotations = st.fixed_dictionaries(
    {},
    optional={
        "description": hostile_text(20),
        "title": hostile_text(10),
        "default": json_value,
        "examples": st.lists(json_value, max_size=2),
    },
)
_leaf_schema = st.one_of(
    st.booleans(),  # true: anything; false: nothing
    st.just({}),
    st.builds(
        lambda t, extra: {"type": t, **extra},
        st.sampled_from(_TYPE_NAMES[2:]),
        st.fixed_dictionaries(
            {},
            optional={
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(3, 40),
                "pattern": st.sampled_from(("^[a-z]+$", "[0-9]", "^(a|b)*$", "\\d{2}")),
                "format": st.sampled_from(("date", "email", "uuid", "uri", "date-time")),
                "minimum": st.integers(-5, 5),
                "maximum": st.integers(5, 10**6),
                "exclusiveMinimum": st.floats(-1, 0),
                "multipleOf": st.sampled_from((1, 2, 0.5)),
            },
        ),
    ),
    st.lists(st.sampled_from(_TYPE_NAMES), min_size=1, max_size=3, unique=True).map(
        lambda types: {"type": types}
    ),
    st.lists(json_value, min_size=1, max_size=4).map(lambda values: {"enum": values}),
    json_value.map(lambda value: {"const": value}),
)


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(hostile_text(8), st.sampled_from(("", "a", 'q"uote', "back\\slash", "ü")))
    properties = st.dictionaries(keys, inner, max_size=4)

    def object_schema(props: dict[str, Any], required: list[int], extra: Any, typed: bool) -> Any:
        names = list(props)
        schema: dict[str, Any] = {"properties": props}
        if typed:
            schema["type"] = "object"
        picked = sorted({names[i % len(names)] for i in required}) if names else []
        if picked or required:
            schema["required"] = picked or ["not-declared"]
        if extra is not None:
            schema["additionalProperties"] = extra
        return schema

    return st.one_of(
        st.builds(
            object_schema,
            properties,
            st.lists(st.integers(0, 9), max_size=3),
            st.one_of(st.none(), st.booleans(), inner),
            st.booleans(),
        ),
        st.builds(
            lambda items, extra: {"type": "array", "items": items, **extra},
            inner,
            st.fixed_dictionaries(
                {}, optional={"minItems": st.integers(0, 2), "maxItems": st.integers(2, 5)}
            ),
        ),
        st.lists(inner, min_size=1, max_size=3).map(lambda items: {"prefixItems": items}),
        st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
        st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"oneOf": branches}),
        st.lists(inner, min_size=1, max_size=2).map(lambda parts: {"allOf": parts}),
        st.tuples(inner, inner).map(lambda pair: {"type": "object", "anyOf": list(pair)}),
        inner.map(lambda branch: {"not": branch}),
        st.tuples(inner, _annotations).map(
            lambda pair: {**pair[1], **pair[0]} if isinstance(pair[0], dict) else pair[0]
        ),
    )


#: JSON Schemas (draft 2020-12) of every shape a tool's ``inputSchema`` takes on real pages:
#: boolean schemas, every type and type lists, ``enum``/``const`` with hostile values, objects
#: with hostile property names, required names that are declared or not, every kind of
#: ``additionalProperties``, arrays, ``prefixItems``, ``anyOf``/``oneOf``/``allOf`` at the root
#: or beside ``type``, ``not``, string and number keywords, annotations.
json_schema = st.recursive(_leaf_schema, _compound, max_leaves=12)
#: A tool's ``inputSchema``: mostly an object at the root, sometimes anything.
input_schema = st.one_of(
    st.builds(
        lambda props: {"type": "object", "properties": props},
        st.dictionaries(
            st.sampled_from(("query", "product", "quantity", "größe", 'a"b', "")),
            json_schema,
            max_size=4,
        ),
    ),
    json_schema,
)
