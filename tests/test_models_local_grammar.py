"""The local model's grammar (``models/local_grammar.py``) over the whole range of tool schemas
(``generators.input_schema``): every value a tool's schema accepts can be written, in the
compact spelling only; the grammar is read by a GBNF reader (``tests/gbnf.py``, what
llama.cpp's parser reads) and never fails to be written. The real engine reads it in
``tests/browser/test_local_model.py``."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import gbnf
import jsonschema
import pytest
from generators import hostile_text, hostile_value, input_schema, json_value
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis_jsonschema import from_schema

from pysite_agent.models.local_grammar import MAX_DEPTH, compact_json, literal, reply_grammar
from pysite_agent.models.local_schema import reply_schema

SHOP = [
    {
        "name": "add_to_cart",
        "inputSchema": {
            "type": "object",
            "properties": {
                "product": {"type": "string"},
                "quantity": {"type": "integer", "minimum": 1},
            },
            "required": ["product", "quantity"],
        },
    },
    {"name": "checkout", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "search",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "colour": {"enum": ["red", "blue"]}},
        },
    },
]


def grammar_for(schema: Any, name: str = "t") -> tuple[str, Any]:
    """The grammar and the arguments' schema as the grammar was written from it."""
    reply = reply_schema([{"name": name, "inputSchema": schema}])
    return reply_grammar(reply), reply["anyOf"][1]["properties"]["arguments"]


def call_text(name: str, arguments: Any) -> str:
    return '{"tool":' + compact_json(name) + ',"arguments":' + compact_json(arguments) + "}"


def key_orders(value: Any) -> Iterator[Any]:
    """``value`` with its objects' keys in every order (up to six per inner object): the
    grammar writes keys in one order, and a JSON object's order carries nothing."""
    if isinstance(value, dict):
        items = list(value.items())
        inner = [list(itertools.islice(key_orders(v), 6)) for _, v in items]
        # every order of this level's keys first (the inner values as they are), then the
        # inner values' other orders: the grammar's order of the top keys comes early
        for combo in itertools.product(*inner):
            for order in itertools.permutations(range(len(items))):
                yield {items[i][0]: combo[i] for i in order}
    elif isinstance(value, list):
        inner = [list(itertools.islice(key_orders(v), 6)) for v in value]
        for combo in itertools.product(*inner):
            yield list(combo)
    else:
        yield value


def enum_spelling(value: Any, schema: Any) -> Any:
    """``value`` with each part that a ``const`` or an ``enum`` of ``schema`` fixes replaced by
    that member itself (equal as JSON, its keys in the member's order, which the grammar
    spells); the other parts as they are."""
    if not isinstance(schema, dict):
        return value
    members = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(members, list):
        for member in members:
            if json.dumps(member, sort_keys=True) == json.dumps(value, sort_keys=True):
                return member
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        value = {k: enum_spelling(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [enum_spelling(v, schema["items"]) for v in value]
    for branch in schema.get("anyOf") or []:
        value = enum_spelling(value, branch)
    return value


def grammar_order(value: Any, schema: Any) -> Any:
    """``value`` with each object's keys in the order the grammar writes them for ``schema``
    (its required properties in the order of ``properties``, then the other required names,
    then the optional properties, then any others as they come); a branch of ``anyOf`` that
    has ``properties`` gives the order when the object has no ``properties`` of its own."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [grammar_order(v, schema["items"]) for v in value]
    if not isinstance(value, dict):
        return value
    shaped = schema if isinstance(schema.get("properties"), dict) else None
    for branch in schema.get("anyOf") or []:
        if (
            shaped is None
            and isinstance(branch, dict)
            and isinstance(branch.get("properties"), dict)
        ):
            shaped = branch
    if shaped is None:
        return value
    props = shaped["properties"]
    required = [r for r in shaped.get("required") or [] if isinstance(r, str)]
    order = [k for k in props if k in required] + [k for k in required if k not in props]
    order += [k for k in props if k not in required]
    keys = [k for k in dict.fromkeys(order) if k in value] + [k for k in value if k not in order]
    extra = shaped.get("additionalProperties")
    return {k: grammar_order(value[k], props.get(k, extra)) for k in keys}


def outside_strings(text: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)


@pytest.mark.parametrize(
    "reply",
    [
        {"answer": "Hello."},
        {"answer": 'quotes " and \\ and \n and é and \ud800 and \U0001f600'},
        {"answer": ""},
        {"tool": "add_to_cart", "arguments": {"product": "mug", "quantity": 2}},
        {"tool": "add_to_cart", "arguments": {"product": "mug", "quantity": 12345678901234567890}},
        {"tool": "checkout", "arguments": {}},
        {"tool": "search", "arguments": {}},
        {"tool": "search", "arguments": {"colour": "red"}},
        {"tool": "search", "arguments": {"query": "mug", "colour": "blue"}},
    ],
)
def test_the_shop_replies_are_allowed_compact_only(reply: dict[str, Any]) -> None:
    grammar = reply_grammar(reply_schema(SHOP))
    assert gbnf.allows(grammar, compact_json(reply))
    assert not gbnf.allows(grammar, json.dumps(reply))  # ", " and ": "
    assert not gbnf.allows(grammar, " " + compact_json(reply))
    assert not gbnf.allows(grammar, json.dumps(reply, indent=1))


@pytest.mark.parametrize(
    "reply",
    [
        {"tool": "add_to_cart", "arguments": {"quantity": 2, "product": "mug"}},  # key order
        {"tool": "add_to_cart", "arguments": {"product": "mug"}},  # a required key missing
        {"tool": "checkout", "arguments": {"extra": 1}},  # no properties but declared ones
        {"tool": "search", "arguments": {"colour": "green"}},  # not in the enum
        {"tool": "refund", "arguments": {}},  # not a listed tool
        {"type": "answer", "text": "protocol v1's own shape"},
    ],
)
def test_what_the_shop_schema_refuses_the_grammar_refuses(reply: dict[str, Any]) -> None:
    assert not gbnf.allows(reply_grammar(reply_schema(SHOP)), compact_json(reply))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(schema=input_schema, data=st.data())
def test_every_value_a_tool_schema_accepts_can_be_written(schema: Any, data: st.DataObject):
    grammar, arguments_schema = grammar_for(schema)
    try:
        strategy = from_schema(arguments_schema)
        value = data.draw(strategy, label="arguments")
    except (InvalidArgument, jsonschema.exceptions.SchemaError, RecursionError):
        assume(False)  # a schema hypothesis-jsonschema cannot draw from
        return
    if isinstance(schema, dict) and "$ref" not in json.dumps(schema):
        assume(jsonschema.Draft202012Validator(schema).is_valid(value))  # the tool's own
    text = call_text("t", value)
    # The spelling is faithful, as JSON reads it: two surrogate code units drawn side by side
    # are one character once written.
    assert json.loads(text) == {"tool": "t", "arguments": json.loads(json.dumps(value))}
    spelled = enum_spelling(value, arguments_schema)
    candidates = itertools.chain(
        [grammar_order(spelled, arguments_schema)], itertools.islice(key_orders(spelled), 200)
    )
    allowed = [call_text("t", v) for v in candidates if gbnf.allows(grammar, call_text("t", v))]
    assert allowed, (text, grammar)
    spaced = json.dumps(json.loads(allowed[0]))
    if outside_strings(spaced) != outside_strings(allowed[0]):
        assert not gbnf.allows(grammar, spaced)


@settings(max_examples=300, deadline=None)
@given(name=hostile_text(20), schema=st.one_of(input_schema, hostile_value))
def test_a_grammar_is_written_for_any_schema_and_is_ascii(name: str, schema: Any) -> None:
    assume(name)
    tools = [{"name": name, "inputSchema": schema}, *SHOP]
    grammar = reply_grammar(reply_schema(tools))
    assert grammar.isascii()
    assert grammar == reply_grammar(reply_schema(tools))  # the same text every time
    rules = gbnf.parse(grammar)
    assert "root" in rules
    assert gbnf.allows(grammar, '{"answer":"hi"}')
    assert gbnf.allows(grammar, call_text("checkout", {}))


@settings(max_examples=200, deadline=None)
@given(value=json_value)
@example(value={"\ud800\udc00": None})
def test_a_const_and_an_enum_allow_exactly_their_values(value: Any) -> None:
    grammar, arguments_schema = grammar_for(
        {"type": "object", "properties": {"v": {"const": value}}, "required": ["v"]}
    )
    # The value as the tools' boundary left it: a surrogate pair held as two code units
    # (``"\ud800\udc00"``) is one astral character there, as in the page's JavaScript.
    value = arguments_schema["properties"]["v"]["const"]
    assert gbnf.allows(grammar, call_text("t", {"v": value}))
    other = {"v": [value]}
    assert not gbnf.allows(grammar, call_text("t", other))
    enum, enum_schema = grammar_for({"enum": [value, "other"]})
    assert enum_schema["enum"][0] == value
    assert gbnf.allows(enum, call_text("t", value)) and gbnf.allows(enum, call_text("t", "other"))


def test_a_surrogate_pair_held_as_two_code_units_is_one_character_in_the_grammar() -> None:
    grammar, arguments_schema = grammar_for(
        {"type": "object", "properties": {"v": {"const": {"\ud800\udc00": "\udbff\udfff"}}}}
    )
    assert arguments_schema["properties"]["v"]["const"] == {"\U00010000": "\U0010ffff"}
    assert gbnf.allows(grammar, call_text("t", {"v": {"\U00010000": "\U0010ffff"}}))
    # A lone surrogate stays (the page's JavaScript may hold one); UTF-8 cannot, so the grammar
    # spells it with JSON's escape, which reads back as the same string.
    lone, lone_schema = grammar_for({"const": "a\ud800b"})
    assert lone_schema["const"] == "a\ud800b"
    assert gbnf.allows(lone, '{"tool":"t","arguments":"a\\ud800b"}')
    assert json.loads('"a\\ud800b"') == "a\ud800b"


@settings(max_examples=200, deadline=None)
@given(text=hostile_text(40))
def test_a_literal_reads_back_as_its_text(text: str) -> None:
    assume(text < "\ud800" or all(not 0xD800 <= ord(c) <= 0xDFFF for c in text))
    grammar = f"root ::= {literal(text)}\n"
    assert grammar.isascii()
    assert gbnf.allows(grammar, text)


def test_deep_schemas_end_in_any_value() -> None:
    schema: Any = {"type": "string"}
    for _ in range(MAX_DEPTH + 20):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    grammar, _ = grammar_for(schema)
    value: Any = "x"
    for _ in range(MAX_DEPTH + 20):
        value = {"a": value}
    assert gbnf.allows(grammar, call_text("t", value))


def test_a_root_any_of_and_type_lists() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"name": {"type": ["string", "null"]}}},
        ]
    }
    grammar, _ = grammar_for(schema)
    for value in ({"id": 3}, {"name": None}, {"name": "ü"}, {}):
        assert gbnf.allows(grammar, call_text("t", value)), value
    assert not gbnf.allows(grammar, call_text("t", {"id": "3"}))


def test_a_whole_float_in_an_enum_allows_its_integer_spelling() -> None:
    # JSON Schema compares numbers by value: {"enum": [0.0]} accepts 0 (found by the property).
    grammar, _ = grammar_for({"enum": [0.0, [2.0, {"a": 1e16}]]})
    for value in (0, 0.0, [2, {"a": 10**16}], [2.0, {"a": 1e16}]):
        assert gbnf.allows(grammar, call_text("t", value)), value
    assert not gbnf.allows(grammar, call_text("t", 1))
