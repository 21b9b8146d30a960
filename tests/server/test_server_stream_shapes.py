"""Streams as OpenAI-compatible servers and Anthropic-compatible gateways actually send them.

Each shape is a recorded one (``stub_upstream.openai_compatible_stream``,
``anthropic_whole_input_stream``), streamed by the loopback stub through the real app under
uvicorn; the reply must be the one tool call the model made, with its own name and arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Proxy, request_body
from stub_upstream import (
    OPENAI_COMPATIBLE_SHAPES,
    Reply,
    StubUpstream,
    _sse,
    anthropic_whole_input_stream,
    openai_compatible_stream,
)
from test_server_stream import STREAM, events_of

from pysite_agent.core.sse import ServerSentEvent
from pysite_agent.server.names import OPENAI_NAMES, NameMap
from pysite_agent.server.providers.openai import OpenAIStream

ARGUMENTS = {"product": "mug", "quantity": 2}


@pytest.mark.parametrize("shape", OPENAI_COMPATIBLE_SHAPES)
def test_a_compatible_servers_tool_call_stream_gives_the_call_as_made(
    proxy: Any, stub: StubUpstream, shape: str
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(
        stream=openai_compatible_stream(shape, "add_to_cart", ARGUMENTS)
    )
    events = events_of(p.post(request_body(), headers=STREAM))
    name, reply = events[-1]
    assert name == "reply", reply
    assert reply["type"] == "tool"
    assert reply["name"] == "add_to_cart"  # never "add_to_cartadd_to_cart..."
    assert reply["arguments"] == ARGUMENTS
    assert reply["id"] in ("chatcmpl-tool-aa62", "call_N1", "call_O1", "call_E1") or reply[
        "id"
    ].startswith("call_")


def _feed(reader: OpenAIStream, chunks: list[bytes]) -> None:
    from pysite_agent.core.sse import SSEParser

    parser = SSEParser()
    for chunk in chunks:
        for event in parser.feed_bytes(chunk):
            reader.feed(event)


def test_a_resent_id_is_kept_once() -> None:
    reader = OpenAIStream()
    _feed(reader, openai_compatible_stream("resent", "find_plan", {"q": "x"}))
    reply = reader.reply(NameMap(OPENAI_NAMES, ["find_plan"]))
    assert reply["id"] == "chatcmpl-tool-aa62"
    assert reply["name"] == "find_plan"


def test_a_name_fragmented_across_chunks_is_still_joined() -> None:
    """OpenAI's own servers may split nothing, but a name in pieces must still join."""
    reader = OpenAIStream()
    pieces = [
        {"index": 0, "id": "call_1", "function": {"name": "find_", "arguments": ""}},
        {"index": 0, "function": {"name": "plan", "arguments": "{}"}},
    ]
    for piece in pieces:
        data = {"choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]}
        reader.feed(ServerSentEvent("message", json.dumps(data)))
    reader.feed(ServerSentEvent("message", "[DONE]"))
    assert reader.reply(NameMap(OPENAI_NAMES, ["find_plan"]))["name"] == "find_plan"


def test_a_second_call_without_index_but_with_its_own_id_does_not_merge_into_the_first() -> None:
    reader = OpenAIStream()
    pieces = [
        {"id": "call_A", "function": {"name": "first_tool", "arguments": '{"a": 1}'}},
        {"id": "call_B", "function": {"name": "second_tool", "arguments": '{"b": 2}'}},
    ]
    for piece in pieces:
        data = {"choices": [{"delta": {"tool_calls": [piece]}}]}
        reader.feed(ServerSentEvent("message", json.dumps(data)))
    reader.feed(ServerSentEvent("message", "[DONE]"))
    reply = reader.reply(NameMap(OPENAI_NAMES, ["first_tool", "second_tool"]))
    assert reply["name"] == "first_tool" and reply["arguments"] == {"a": 1}


def test_choices_null_and_a_chunk_without_delta_are_skipped() -> None:
    reader = OpenAIStream()
    for data in (
        {"choices": None, "usage": {"total_tokens": 1}},
        {"choices": [{"index": 0}]},
        {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]},
    ):
        reader.feed(ServerSentEvent("message", json.dumps(data)))
    assert reader.reply(NameMap(OPENAI_NAMES, [])) == {"type": "answer", "text": "Hi"}


@pytest.mark.parametrize("arguments", [ARGUMENTS, {}])
def test_an_anthropic_tool_use_with_its_whole_input_at_the_start_keeps_it(
    proxy: Any, stub: StubUpstream, arguments: dict[str, Any]
) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(stream=anthropic_whole_input_stream("add_to_cart", arguments))
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events[-1][0] == "reply"
    assert events[-1][1]["arguments"] == arguments


def test_sse_comments_and_keepalive_pings_between_chunks_are_ignored(
    proxy: Any, stub: StubUpstream
) -> None:
    """Gateways send ``: PROCESSING`` comment lines while the model warms up."""
    p: Proxy = proxy("openai")
    chunks = openai_compatible_stream("empty-choices", "add_to_cart", ARGUMENTS)
    stub.responder = lambda r: Reply(
        stream=[b": OPENAI-COMPATIBLE PROCESSING\n\n", b":\n\n", *chunks]
    )
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events[-1][0] == "reply" and events[-1][1]["name"] == "add_to_cart"


def test_an_anthropic_stream_with_only_pings_before_the_text_streams_the_text(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("anthropic")
    from stub_upstream import anthropic_stream

    chunks = anthropic_stream(["Hello"])
    stub.responder = lambda r: Reply(
        stream=[
            chunks[0],
            _sse("ping", {"type": "ping"}),
            _sse("ping", {"type": "ping"}),
            *chunks[1:],
        ]
    )
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events[-1] == ("reply", {"type": "answer", "text": "Hello"})
