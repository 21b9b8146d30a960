"""Providers as they really answer, over real HTTP on loopback (a row of docs/boundaries.md):
root unions in tool schemas, OpenAI's description cap, tool names, finished replies with no
text and no call, streamed content as typed parts, a 200 whose body is an error, Retry-After
as an HTTP date, and rate limits per IPv6 /64 and for IPv4-mapped clients."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import jsonschema
import pytest
from conftest import Proxy, request_body
from generators import hostile_text
from hypothesis import given, settings
from stub_upstream import Reply, StubUpstream, _sse, anthropic_text, openai_text, text_reply
from test_server_stream import STREAM, events_of

from pysite_agent.server._errors import MAX_RETRY_AFTER_S, retry_after_header
from pysite_agent.server._ratelimit import client_bucket
from pysite_agent.server.providers._base import (
    MAX_DESCRIPTION_CHARS,
    capped_description,
    merged_root,
    root_object_schema,
)
from pysite_agent.server.providers.gemini import reduce_schema

PROVIDERS = ("anthropic", "openai", "gemini")

BY_ID = {
    "type": "object",
    "title": "By id",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}
BY_NAME = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
    "required": ["name"],
    "additionalProperties": False,
}
UNIONS = {
    "anyOf": {"anyOf": [BY_ID, BY_NAME]},
    "oneOf": {"oneOf": [BY_ID, BY_NAME]},
    "allOf": {
        "allOf": [
            {"$ref": "#/$defs/Base"},
            {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
        ],
        "$defs": {"Base": {"type": "object", "properties": {"id": {"type": "string"}}}},
    },
}


def _declared_schema(provider: str, body: dict[str, Any]) -> Any:
    if provider == "anthropic":
        return body["tools"][0]["input_schema"]
    if provider == "openai":
        return body["tools"][0]["function"]["parameters"]
    return body["tools"][0]["functionDeclarations"][0].get("parameters")


def _one_tool(schema: dict[str, Any], description: str = "Find an item.") -> list[Any]:
    return [{"name": "find_item", "description": description, "inputSchema": schema}]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("union", sorted(UNIONS))
def test_a_root_union_reaches_every_provider_as_one_object_schema(
    proxy: Any, stub: StubUpstream, provider: str, union: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, text_reply(provider, "ok"))
    response = p.post(request_body(tools=_one_tool(UNIONS[union])))
    assert response.status_code == 200, response.text
    sent = _declared_schema(provider, stub.requests[-1].json())
    assert sent["type"] in ("object", "OBJECT")
    assert not {"anyOf", "oneOf", "allOf"} & set(sent)
    if union == "allOf":
        assert set(sent["properties"]) == {"id", "note"} and sent["required"] == ["note"]
    else:
        assert set(sent["properties"]) == {"id", "name"}
        assert "Give exactly one of these 2 shapes" in sent["description"]


def test_the_merged_schema_accepts_what_the_union_accepts() -> None:
    for union in UNIONS.values():
        merged = root_object_schema(union)
        jsonschema.Draft202012Validator.check_schema(merged)
        for value in ({"id": "a"}, {"name": "n"}, {"name": "n", "id": 3}, {"id": "a", "note": "x"}):
            if jsonschema.Draft202012Validator(union).is_valid(value):
                assert jsonschema.Draft202012Validator(merged).is_valid(value), (union, value)
    # Gemini's subset keeps the merged properties (a root anyOf used to leave none).
    reduced = reduce_schema(merged_root(UNIONS["anyOf"]))
    assert reduced is not None and set(reduced["properties"]) == {"id", "name"}
    # Alternatives that are not objects never match arguments (always an object): dropped.
    assert root_object_schema({"anyOf": [{"type": "string"}, BY_ID]})["properties"] == {
        "id": {"type": "string"}
    }
    # A union that cannot be merged is sent as an empty object schema, never as a union.
    assert root_object_schema({"allOf": [{"type": "string"}, BY_ID]}) == {
        "type": "object",
        "properties": {},
    }


def test_openai_gets_at_most_1024_characters_of_description(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    long = "Finds things. " * 200
    assert p.post(request_body(tools=_one_tool(BY_ID, long))).status_code == 200
    sent = stub.requests[-1].json()["tools"][0]["function"]["description"]
    assert len(sent) == MAX_DESCRIPTION_CHARS and sent.endswith("…")
    assert capped_description("short") == "short"


@settings(max_examples=50, deadline=None)
@given(hostile_text(40))
def test_tool_names_outside_the_webmcp_charset_are_refused(name: str) -> None:
    from pysite_agent.core.wire import problems

    body = request_body(tools=_one_tool({"type": "object"}))
    body["tools"][0]["name"] = name
    allowed = 1 <= len(name) <= 128 and all(
        c.isascii() and (c.isalnum() or c in "_.-") for c in name
    )
    assert (problems("protocol-v1", body, "request") == []) == allowed


@pytest.mark.parametrize("name", ["a b", "name\n", "é", "x;y"])
def test_the_proxy_refuses_such_a_name_before_the_provider(
    proxy: Any, stub: StubUpstream, name: str
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    body = request_body(tools=_one_tool({"type": "object"}))
    body["tools"][0]["name"] = name
    response = p.post(body)
    assert response.status_code == 400
    assert stub.requests == []


# --- finished replies with no text and no call ------------------------------------------------

NOTHING_CAME = [
    ("openai", openai_text(None, finish_reason="content_filter"), "content filter"),
    ("openai", openai_text("", finish_reason="stop"), "empty reply"),
    ("openai", openai_text(None, finish_reason="length"), "output tokens"),
    ("anthropic", {**anthropic_text(""), "content": [], "stop_reason": "refusal"}, "refused"),
    (
        "anthropic",
        {
            **anthropic_text(""),
            "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
        },
        "only thought",
    ),
    ("gemini", {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP"}]}, "empty"),
    ("gemini", {"candidates": [{"finishReason": "SAFETY", "index": 0}]}, "safety filter"),
    (
        "gemini",
        {"candidates": [{"content": {"parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL"}]},
        "tool call that could not be read",
    ),
    ("gemini", {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}, "content policy"),
]


@pytest.mark.parametrize(("provider", "reply", "why"), NOTHING_CAME)
def test_no_answer_is_said_plainly_with_the_reason(
    proxy: Any, stub: StubUpstream, provider: str, reply: Any, why: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, reply)
    response = p.post(request_body())
    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert message.startswith("No answer came from the model: ") and why in message


def test_a_refusal_with_text_is_the_answer(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, openai_text(None, refusal="I can't help with that."))
    assert p.post(request_body()).json() == {"type": "answer", "text": "I can't help with that."}


def test_streamed_content_as_a_list_of_typed_parts_is_the_answer(
    proxy: Any, stub: StubUpstream
) -> None:
    def chunk(content: Any, finish: str | None = None) -> bytes:
        delta = {"role": "assistant", "content": content}
        return _sse(None, {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    parts = [
        chunk([{"type": "thinking", "thinking": [{"type": "text", "text": "hidden"}]}]),
        chunk([{"type": "text", "text": "Two mugs "}]),
        chunk([{"type": "text", "text": "added."}], "stop"),
        b"data: [DONE]\n\n",
    ]
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(stream=list(parts))
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events[-1] == ("reply", {"type": "answer", "text": "Two mugs added."})
    assert [d["text"] for n, d in events if n == "delta"] == ["Two mugs ", "added."]


# --- busy, said in a 200 body or with a date --------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}},
    ],
)
def test_a_200_whose_body_is_a_rate_limit_is_busy(
    proxy: Any, stub: StubUpstream, body: dict[str, Any]
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, body)
    response = p.post(request_body())
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["upstreamStatus"] in (429, 503, 529)
    assert "busy" in error["message"].lower()


def test_retry_after_as_an_http_date_is_passed_on_as_seconds(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("openai")
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    stub.responder = lambda r: Reply(429, {"error": {"message": "slow"}}, {"retry-after": when})
    response = p.post(request_body())
    assert response.status_code == 502
    assert 28 <= int(response.headers["retry-after"]) <= 31


def test_retry_after_forms_and_bounds() -> None:
    now = 1_800_000_000.0
    assert retry_after_header("120", now=now) == b"120"
    assert retry_after_header("999999", now=now) == str(MAX_RETRY_AFTER_S).encode()
    assert retry_after_header(email.utils.formatdate(now + 61, usegmt=True), now=now) == b"61"
    assert retry_after_header(email.utils.formatdate(now - 600, usegmt=True), now=now) == b"0"
    far = email.utils.formatdate(now + 10 * 86400, usegmt=True)
    assert retry_after_header(far, now=now) == str(MAX_RETRY_AFTER_S).encode()
    for bad in ("", "soon", "-5", "1.5", "Wed, 99 Foo 2026", "٣"):
        assert retry_after_header(bad, now=now) is None


# --- rate limits per client -------------------------------------------------------------------


def test_client_buckets() -> None:
    assert client_bucket("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert client_bucket("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert client_bucket("2001:db8:1:3::1") == "2001:db8:1:3::/64"
    assert client_bucket("::ffff:198.51.100.7") == "198.51.100.7"
    assert client_bucket("[2001:db8::1]") == "2001:db8::/64"
    assert client_bucket("fe80::1%eth0") == "fe80::/64"
    assert client_bucket("198.51.100.7") == "198.51.100.7"
    assert client_bucket("not an address") == "not an address"


def test_rotating_ipv6_host_bits_does_not_pass_the_limit(proxy: Any, stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    p: Proxy = proxy(rate_limit={"window_ms": 60_000, "max": 2})

    def post(ip: str) -> int:
        return p.post(request_body(), headers={"cf-connecting-ip": ip}).status_code

    assert [post(f"2001:db8:5:6::{n}") for n in (1, 2, 3)] == [200, 200, 429]
    assert post("2001:db8:5:7::1") == 200  # another /64 is another client
    assert [post("198.51.100.20"), post("::ffff:198.51.100.20")] == [200, 200]
    assert post("198.51.100.20") == 429  # the mapped address was the same client
