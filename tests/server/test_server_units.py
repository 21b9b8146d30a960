"""The proxy's pure parts, with properties: name mapping, conversation repair, schema reduction,
reply parsing and strict JSON. Small example counts: CI has two cores."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pysite_agent.core import wire
from pysite_agent.server import _conversation, _jsonutil, _validate
from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server._options import canonical_origin
from pysite_agent.server.names import ANTHROPIC_NAMES, GEMINI_NAMES, OPENAI_NAMES, NameMap
from pysite_agent.server.providers import PROVIDERS, Prepared, Unusable
from pysite_agent.server.providers._base import parse_arguments
from pysite_agent.server.providers.gemini import reduce_schema

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RULES = [ANTHROPIC_NAMES, OPENAI_NAMES, GEMINI_NAMES]

# WebMCP names: up to 128 characters of [A-Za-z0-9_.-]; some odd ones too.
webmcp_names = st.text(alphabet=st.sampled_from("ab_-.:1Z é"), min_size=0, max_size=130)


# Names.


@FAST
@given(st.lists(webmcp_names, max_size=12))
def test_name_map_is_one_to_one_and_accepted(names: list[str]) -> None:
    for rule in RULES:
        mapping = NameMap(rule, names)
        provided = {n: mapping.provider(n) for n in names}
        assert len(set(provided.values())) == len(set(names))
        for original, name in provided.items():
            assert rule.accepts(name), (original, name)
            assert mapping.original(name) == original
            if rule.accepts(original):
                assert name == original


def test_name_map_collisions_and_long_names() -> None:
    names = ["a.b", "a_b", "a-b", "a b", "a:b", "a_b_" + "0" * 8]
    mapping = NameMap(OPENAI_NAMES, names)
    assert mapping.provider("a_b") == "a_b"
    assert mapping.provider("a-b") == "a-b"
    assert len({mapping.provider(n) for n in names}) == len(names)
    prefix = "p" * 100
    mapping = NameMap(GEMINI_NAMES, [prefix + "1", prefix + "2", "9lives"])
    assert mapping.provider(prefix + "1") != mapping.provider(prefix + "2")
    assert mapping.provider("9lives").startswith("_9lives")
    # A tool whose real name equals the hashed form of another keeps it.
    hashed = NameMap(OPENAI_NAMES, ["x.y"]).provider("x.y")
    mapping = NameMap(OPENAI_NAMES, ["x.y", hashed, "x_y"])
    assert mapping.provider(hashed) == hashed
    assert mapping.provider("x_y") == "x_y"
    assert mapping.provider("x.y") not in (hashed, "x_y")
    assert mapping.original(mapping.provider("x.y")) == "x.y"
    assert mapping.original("never-given") == "never-given"


# Conversation repair.

ids = st.sampled_from(["c1", "c2", "c 3", "c/4", "x" * 50])
tool_names = st.sampled_from(["add", "cart.add", "checkout"])
texts = st.sampled_from(["", "  ", "hello", "add two mugs", "\n"])
messages = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(
        lambda i, n, a: {"role": "assistant", "toolCall": {"id": i, "name": n, "arguments": a}},
        ids,
        tool_names,
        st.one_of(st.just({}), st.just({"q": 1}), st.just("raw"), st.none()),
    ),
    st.builds(
        lambda i, n, c, e: {
            "role": "tool",
            "toolCallId": i,
            "name": n,
            "content": c,
            "isError": e,
            "untrusted": False,
        },
        ids,
        tool_names,
        texts,
        st.booleans(),
    ),
)


@FAST
@given(st.lists(messages, min_size=1, max_size=14), st.booleans())
def test_normalized_conversations_keep_every_provider_rule(
    conversation: list[dict[str, Any]], with_tools: bool
) -> None:
    assert (
        wire.problems(
            "protocol-v1",
            {"version": 1, "instructions": "", "messages": conversation, "tools": []},
            "request",
        )
        == []
    )
    try:
        items = _conversation.normalize(conversation, with_tools=with_tools)
    except _conversation.NoUserMessage:
        assert not any(m["role"] == "user" and m["content"].strip() for m in conversation)
        return
    assert isinstance(items[0], UserText)
    seen: set[str] = set()
    for index, item in enumerate(items):
        if isinstance(item, UserText | AssistantText):
            assert item.text.strip()
        if isinstance(item, Call):
            assert with_tools
            following = items[index + 1]
            assert isinstance(following, Result) and following.id == item.id
            assert item.id not in seen
            seen.add(item.id)
            assert len(item.id) <= 40 and all(c.isalnum() or c in "_-" for c in item.id)
        if isinstance(item, Result):
            assert isinstance(items[index - 1], Call)
    names = [i.name for i in items if isinstance(i, Call | Result)]
    tools = [{"name": "add", "description": "", "inputSchema": {"type": "object"}}]
    for provider in PROVIDERS.values():
        prepared = Prepared(
            model="m",
            max_tokens=10,
            instructions="",
            items=items,
            tools=tools if with_tools else [],
            names=NameMap(provider.name_rule, ["add", *names]),
        )
        body = provider.build(prepared, "http://127.0.0.1:9", "k").body
        json.dumps(body, allow_nan=False)
        check_no_empty_content(provider.name, body)
        if provider.name == "anthropic":
            check_anthropic(body)


def _filled(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_no_empty_content(provider: str, body: dict[str, Any]) -> None:
    """No provider ever gets an empty content block, text or tool result."""
    if provider == "anthropic":
        for turn in body["messages"]:
            assert turn["content"]
            for block in turn["content"]:
                if block["type"] in ("text", "tool_result"):
                    key = "text" if block["type"] == "text" else "content"
                    assert _filled(block.get(key)), block
    elif provider == "openai":
        for message in body["messages"]:
            if message["role"] == "assistant" and message.get("tool_calls"):
                assert message["content"] is None
            else:
                assert _filled(message["content"]), message
    else:
        for content in body["contents"]:
            assert content["parts"]
            for part in content["parts"]:
                if "text" in part:
                    assert _filled(part["text"]), part
                if "functionResponse" in part:
                    (value,) = part["functionResponse"]["response"].values()
                    assert _filled(value), part
                if "functionCall" in part:
                    assert _filled(part["thoughtSignature"]), part


def check_anthropic(body: dict[str, Any]) -> None:
    turns = body["messages"]
    assert turns[0]["role"] == "user"
    for i, turn in enumerate(turns):
        if i:
            assert turn["role"] != turns[i - 1]["role"]
        for block in turn["content"]:
            if block["type"] == "text":
                assert block["text"].strip()
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        if uses:
            nxt = turns[i + 1]["content"]
            assert nxt[0]["type"] == "tool_result"
            assert [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"] == uses
        results = [b["tool_use_id"] for b in turn["content"] if b["type"] == "tool_result"]
        if results:
            before = [b["id"] for b in turns[i - 1]["content"] if b["type"] == "tool_use"]
            assert results == before


# Gemini schema reduction.

ALLOWED = {
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "minProperties",
    "maxProperties",
}
keywords = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "additionalProperties",
        "enum",
        "const",
        "default",
        "title",
        "description",
        "format",
        "nullable",
        "minimum",
        "$schema",
        "examples",
        "not",
        "patternProperties",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from(
        [
            "string",
            "object",
            "array",
            "integer",
            "null",
            "#/$defs/a",
            "#",
            "#/nope",
            "date-time",
            "x",
        ]
    ),
)
schemas = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(keywords, st.sampled_from(["a", "b", "c"])), inner, max_size=5),
    ),
    max_leaves=25,
)


def walk(node: Any, top: bool = True) -> None:
    assert isinstance(node, dict)
    assert set(node) <= ALLOWED, set(node) - ALLOWED
    if node.get("type") == "object":
        assert node.get("properties"), node
    for sub in node.get("properties", {}).values():
        walk(sub, False)
    if "items" in node:
        assert node.get("type") == "array"
        walk(node["items"], False)
    for sub in node.get("anyOf", []):
        walk(sub, False)
    if "required" in node:
        assert set(node["required"]) <= set(node.get("properties", {}))
    if "enum" in node:
        assert all(isinstance(v, str) for v in node["enum"])


@FAST
@given(schemas)
@example({"type": {}})  # found by hypothesis: a non-string type crashed the reduction
@example({"allOf": [], "properties": "string"})  # found by hypothesis: allOf with bad properties
def test_reduced_schemas_only_use_what_gemini_accepts(schema: Any) -> None:
    reduced = reduce_schema(schema)
    if reduced is None:
        return
    assert reduced["type"] == "object"
    walk(reduced)
    json.dumps(reduced, allow_nan=False)


@FAST
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.just({"type": "string"}), min_size=1),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=5),
)
def test_reduction_keeps_every_required_property(
    properties: dict[str, Any], required: list[str]
) -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": required,
    }
    reduced = reduce_schema(schema)
    assert reduced is not None
    expected = [r for r in dict.fromkeys(required) if r in properties]
    assert reduced.get("required", []) == expected


def test_reduction_examples() -> None:
    recursive = {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}},
                "required": ["v"],
            }
        },
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "required": ["tree"],
    }
    reduced = reduce_schema(recursive)
    assert reduced is not None
    assert reduced["required"] == ["tree"]
    assert reduced["properties"]["tree"]["required"] == ["v"]
    walk(reduced)
    combined = {
        "type": "object",
        "properties": {
            "size": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
            "mode": {"const": "fast"},
            "level": {"enum": [1, 2, 3], "description": "How much."},
            "both": {
                "allOf": [
                    {"properties": {"x": {"type": "string"}}, "required": ["x"]},
                    {"properties": {"y": {"type": "number"}}},
                ]
            },
            "date": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
    }
    reduced = reduce_schema(combined)
    assert reduced is not None
    props = reduced["properties"]
    assert props["size"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["when"] == {"type": "string", "format": "date-time", "nullable": True}
    assert props["mode"] == {"type": "string", "enum": ["fast"]}
    assert props["level"] == {"description": "How much. (Allowed values: 1, 2, 3)"}
    assert props["both"] == {
        "type": "object",
        "properties": {"x": {"type": "string"}, "y": {"type": "number"}},
        "required": ["x"],
    }
    assert props["date"] == {"type": "string"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert reduce_schema({"type": "object", "properties": {}}) is None
    assert reduce_schema("nonsense") is None


# Reply parsing never crashes and gives only protocol v1 replies.

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(max_size=8),
        st.floats(allow_nan=False, allow_infinity=False),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "content",
                    "type",
                    "text",
                    "tool_use",
                    "name",
                    "input",
                    "id",
                    "stop_reason",
                    "choices",
                    "message",
                    "tool_calls",
                    "function",
                    "arguments",
                    "finish_reason",
                    "candidates",
                    "parts",
                    "functionCall",
                    "args",
                    "thoughtSignature",
                    "finishReason",
                    "refusal",
                    "thought",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=30,
)


@FAST
@given(json_values)
def test_parse_gives_a_reply_or_unusable(data: Any) -> None:
    names = NameMap(OPENAI_NAMES, ["add", "cart.add"])
    for provider in PROVIDERS.values():
        try:
            reply = provider.parse(data, names)
        except Unusable as exc:
            assert str(exc)
            continue
        assert wire.problems("protocol-v1", reply, "reply") == [], reply
        _jsonutil.dumps(reply)


@FAST
@given(st.text(max_size=60))
def test_arguments_strings_never_crash(text: str) -> None:
    value = parse_arguments(text)
    assert isinstance(value, dict) or value == text
    if not text.strip():
        assert value == {}
    _jsonutil.dumps({"arguments": value})


def test_arguments_non_strings() -> None:
    assert parse_arguments(None) == {}
    assert parse_arguments("") == {}
    assert parse_arguments(" \n\t") == {}
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments(5) == "5"


# The request check: the published schema with its references inlined, same verdicts.

_message_values = st.one_of(
    st.sampled_from(["user", "assistant", "tool", "system", "", "c1"]),
    st.booleans(),
    st.integers(-1, 2),
    st.none(),
    st.fixed_dictionaries(
        {"id": st.sampled_from(["c1", ""]), "name": st.just("t"), "arguments": st.just({})},
        optional={"meta": st.sampled_from([{}, 1]), "x": st.just(1)},
    ),
)
_odd_messages = st.dictionaries(
    st.sampled_from(
        ["role", "content", "toolCall", "toolCallId", "name", "isError", "untrusted", "denied", "x"]
    ),
    _message_values,
    max_size=7,
)
_odd_tools = st.dictionaries(
    st.sampled_from(["name", "title", "description", "inputSchema", "annotations", "x"]),
    st.one_of(
        st.text(alphabet="ab", max_size=3), st.just("x" * 129), st.just({}), st.integers(0, 1)
    ),
    max_size=6,
)
_VALID_MESSAGES = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "assistant", "toolCall": {"id": "c1", "name": "t", "arguments": {}}},
    {
        "role": "tool",
        "toolCallId": "c1",
        "name": "t",
        "content": "ok",
        "isError": False,
        "untrusted": True,
    },
]
_messages = st.one_of(st.sampled_from(_VALID_MESSAGES), _odd_messages)
_tool = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
_tools = st.one_of(st.just(_tool), st.just(_tool), _odd_tools)
_valid_requests = st.fixed_dictionaries(
    {
        "version": st.just(1),
        "instructions": st.text(max_size=3),
        "messages": st.lists(st.sampled_from(_VALID_MESSAGES), min_size=1, max_size=3),
        "tools": st.lists(st.just(_tool), max_size=2),
    }
)
_odd_requests = st.fixed_dictionaries(
    {
        "version": st.sampled_from([1, 2, "1", True]),
        "instructions": st.one_of(st.text(max_size=3), st.none()),
        "messages": st.one_of(st.lists(_messages, max_size=3), st.just({})),
        "tools": st.lists(_tools, max_size=3),
    },
    optional={"extra": st.just(True)},
)


near_requests = st.one_of(_valid_requests, _odd_requests)


@FAST
@given(near_requests)
@example(
    {
        "version": 1,
        "instructions": "",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "t", "description": "", "inputSchema": {}}],
    }
)
@example([])
def test_inlined_request_check_matches_the_published_schema(value: Any) -> None:
    assert _validate.request_problems(value) == wire.problems("protocol-v1", value, "request")


def test_inline_refs() -> None:
    defs = {
        "a": {"type": "string"},
        "b": {"items": {"$ref": "#/$defs/a"}},
        "r": {"$ref": "#/$defs/r"},
    }
    assert _validate.inline_refs({"$ref": "#/$defs/b"}, defs) == {"items": {"type": "string"}}
    assert _validate.inline_refs({"$ref": "#/$defs/a", "minLength": 1}, defs) == {
        "allOf": [{"type": "string"}],
        "minLength": 1,
    }
    for bad in ("#/$defs/r", "#/$defs/missing", "other.json#/$defs/a", "#/$defs/a/type"):
        with pytest.raises(ValueError, match="reference"):
            _validate.inline_refs({"$ref": bad}, defs)
    assert "$ref" not in json.dumps(_validate.request_validator().schema)


# The fast check (msgspec types built from the same schema): the same verdicts.


@FAST
@given(near_requests)
@example({"version": 1, "instructions": "", "messages": [{"role": "assistant"}], "tools": []})
@example(
    {
        "version": 1,
        "instructions": "",
        "messages": [
            {
                "role": "assistant",
                "content": "a",
                "toolCall": {"id": "c", "name": "t", "arguments": 1},
            }
        ],
        "tools": [],
    }
)
@example(
    {"version": 1, "instructions": "", "messages": [{"role": "user", "content": None}], "tools": []}
)
@example(
    {
        "version": 1,
        "instructions": "",
        "messages": [
            {
                "role": "tool",
                "toolCallId": "c",
                "name": "t",
                "content": "",
                "isError": 0,
                "untrusted": False,
            }
        ],
        "tools": [],
    }
)
def test_fast_check_gives_the_published_schemas_verdict(value: Any) -> None:
    valid = wire.problems("protocol-v1", value, "request") == []
    assert _validate.fast_check()(value) is valid


@FAST
@given(
    name=st.text(max_size=130),
    call_id=st.text(max_size=3),
    extra=st.dictionaries(
        st.sampled_from(["title", "annotations", "x"]), st.sampled_from(["", {}, None, 1])
    ),
)
def test_fast_check_counts_characters_like_the_schema(
    name: str, call_id: str, extra: dict[str, Any]
) -> None:
    value = {
        "version": 1,
        "instructions": name,
        "messages": [
            {"role": "user", "content": name},
            {"role": "assistant", "toolCall": {"id": call_id, "name": name, "arguments": None}},
        ],
        "tools": [{"name": name, "description": "", "inputSchema": {}, **extra}],
    }
    valid = wire.problems("protocol-v1", value, "request") == []
    assert _validate.fast_check()(value) is valid


def test_fast_check_is_never_looser_where_it_is_stricter() -> None:
    # "version": 1.0 is the const 1 for JSON Schema; the fast check refuses it, and the request
    # then goes to jsonschema, which accepts it: the verdict is the schema's.
    value = {
        "version": 1.0,
        "instructions": "",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
    }
    assert _validate.fast_check()(value) is False
    assert _validate.request_problems(value) == []
    assert wire.problems("protocol-v1", value, "request") == []


def test_compile_type_translates_a_pattern_with_pythons_re() -> None:
    decoder = msgspec.json.Decoder(
        _validate.compile_type({"type": "string", "pattern": "^a+(?![\\s\\S])"})
    )
    assert decoder.decode(b'"aa"') == "aa"
    for bad in (b'"ab"', b'"a\\n"'):
        with pytest.raises(msgspec.ValidationError):
            decoder.decode(bad)


def test_compile_type_refuses_what_it_cannot_translate() -> None:
    for schema in (
        {"type": "string", "format": "date"},
        {"enum": ["a"]},
        {"anyOf": [{"type": "string"}]},
        {"$ref": "#/$defs/a"},
        {"type": "integer"},
        {"type": "object", "properties": {"a": True}},  # additional properties allowed
        {"type": "object", "properties": {}, "required": ["a"], "additionalProperties": False},
        {"type": "object", "properties": {"class": True}, "additionalProperties": False},
        {"const": True},
        {"oneOf": [{"type": "string"}]},
        {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"k": {"const": "a"}},
                    "additionalProperties": False,
                }
            ]
        },
        {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["k", "v"],
                    "additionalProperties": False,
                    "properties": {"k": {"const": "a"}, "v": {"type": "string"}},
                },
                {
                    "type": "object",
                    "required": ["k", "v"],
                    "additionalProperties": False,
                    "properties": {"k": {"const": "a"}, "v": {"type": "boolean"}},
                },
            ]
        },
        False,
    ):
        with pytest.raises(_validate.Unsupported):
            _validate.compile_type(schema)


def test_compile_type_branches_sharing_a_tag() -> None:
    import jsonschema
    import msgspec

    def branch(*names: str, required: tuple[str, ...]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["k", *required],
            "additionalProperties": False,
            "properties": {"k": {"const": "a"}, **{n: {"type": "string"} for n in names}},
        }

    schema = {
        "oneOf": [
            branch("x", required=("x",)),
            branch("y", required=("y",)),
            branch("x", "z", required=("z",)),
        ]
    }
    kind = _validate.compile_type(schema)
    for value, valid in [
        ({"k": "a", "x": ""}, True),
        ({"k": "a", "y": ""}, True),
        ({"k": "a", "z": ""}, True),
        ({"k": "a", "x": "", "z": ""}, True),
        ({"k": "a"}, False),
        ({"k": "a", "x": "", "y": ""}, False),
        ({"k": "a", "y": "", "z": ""}, False),
        ({"k": "b", "x": ""}, False),
        ({"k": "a", "x": 1}, False),
    ]:
        try:
            msgspec.convert(value, kind)
            accepted = True
        except msgspec.ValidationError:
            accepted = False
        assert accepted is valid, value
        assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid, value
    # Two branches that both fit: oneOf refuses.
    overlapping = {"oneOf": [branch("x", required=()), branch("x", "z", required=("x",))]}
    kind = _validate.compile_type(overlapping)
    msgspec.convert({"k": "a"}, kind)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"k": "a", "x": ""}, kind)


# Strict JSON.


def test_strict_json() -> None:
    with pytest.raises(ValueError):
        _jsonutil.loads(b"NaN")
    with pytest.raises(ValueError):
        _jsonutil.loads(b"[" * 100_000)
    with pytest.raises(ValueError):
        _jsonutil.loads(b'{"n": 1' + b"0" * 5000 + b"}")
    assert _jsonutil.dumps({"s": "\ud800x"}) == b'{"s":"?x"}'
    with pytest.raises(ValueError):
        _jsonutil.dumps({"x": float("inf")})
    assert _jsonutil.depth({"a": [1, {"b": 2}]}, 3)
    assert not _jsonutil.depth({"a": [1, {"b": 2}]}, 2)


@FAST
@given(st.text(max_size=20))
def test_lone_surrogates_in_requests_become_valid_json(text: str) -> None:
    body = _jsonutil.dumps({"t": text + "\udc80"})
    assert json.loads(body)["t"].startswith(text.encode("utf-8", "replace").decode("utf-8"))


# Origins.


@pytest.mark.parametrize(
    ("entry", "canonical"),
    [
        ("https://example.com", "https://example.com"),
        ("HTTPS://Example.COM", "https://example.com"),
        ("https://example.com:443", "https://example.com"),
        ("http://example.com:80", "http://example.com"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://127.0.0.1:5500", "http://127.0.0.1:5500"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("http://[0:0::1]", "http://[::1]"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
    ],
)
def test_canonical_origins(entry: str, canonical: str) -> None:
    assert canonical_origin(entry) == canonical
