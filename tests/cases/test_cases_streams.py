"""Regression cases: provider streams and server-sent events as servers and gateways send them.

Each test names its case id from ``tests/cases/index.json``, which says where it was reported.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pysite_agent.core.sse import SSEParser
from pysite_agent.server import create_proxy_app
from pysite_agent.server.names import ANTHROPIC_NAMES, GEMINI_NAMES, OPENAI_NAMES, NameMap
from pysite_agent.server.providers.anthropic import AnthropicStream
from pysite_agent.server.providers.gemini import GEMINI, GeminiStream
from pysite_agent.server.providers.openai import OPENAI, OpenAIStream

TOOLS = ["add_to_cart", "get_time"]


def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> str:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"object": "chat.completion.chunk", "choices": [choice], **extra}
    return "data: " + json.dumps(body, ensure_ascii=False)


def feed(reader: Any, raw: str | bytes, pieces: int = 1) -> list[str]:
    """Feed ``raw`` to ``reader`` through the SSE parser, cut into ``pieces`` byte chunks."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    parser = SSEParser()
    size = max(1, len(data) // pieces)
    out: list[str] = []
    for start in range(0, len(data), size):
        for event in parser.feed_bytes(data[start : start + size]):
            out += reader.feed(event)
    return out


def names(rule: Any = OPENAI_NAMES) -> NameMap:
    return NameMap(rule, TOOLS)


# --- OpenAI-compatible streams ------------------------------------------------------------


def test_c01_comment_keepalive_lines_are_ignored() -> None:
    reader = OpenAIStream()
    raw = (
        "\n\n".join(
            [
                ": OPENROUTER PROCESSING",
                chunk({"content": "Hi"}),
                ": OPENROUTER PROCESSING",
                chunk({}, "stop"),
                "data: [DONE]",
            ]
        )
        + "\n\n"
    )
    assert feed(reader, raw) == ["Hi"]
    assert reader.reply(names()) == {"type": "answer", "text": "Hi"}


def test_c02_a_comment_and_blank_line_after_an_id_dispatch_nothing() -> None:
    parser = SSEParser()
    events = parser.feed("id: 7\n" + chunk({"content": "a"}) + "\n\n: ping\n\n\n")
    assert [e.data[:6] for e in events] == ['{"obje']


def test_c03_a_keepalive_sent_as_data_does_not_end_the_stream() -> None:
    reader = OpenAIStream()
    raw = (
        "\n\n".join(
            [
                "data: : keepalive",
                chunk({"content": "Still "}),
                "data: : keepalive",
                chunk({"content": "here"}, "stop"),
                "data: [DONE]",
            ]
        )
        + "\n\n"
    )
    assert feed(reader, raw) == ["Still ", "here"]
    assert reader.reply(names())["text"] == "Still here"


def test_c04_a_bare_keepalive_event_without_data_is_not_dispatched() -> None:
    reader = OpenAIStream()
    raw = "event: keepalive\n\n" + chunk({"content": "ok"}, "stop") + "\n\ndata: [DONE]\n\n"
    assert feed(reader, raw) == ["ok"]


def test_c05_an_empty_chunk_object_mid_stream_is_skipped() -> None:
    reader = OpenAIStream()
    raw = (
        "\n\n".join(
            [chunk({"content": "A"}), "data: {}", chunk({"content": "B"}, "stop"), "data: [DONE]"]
        )
        + "\n\n"
    )
    assert feed(reader, raw) == ["A", "B"]


def test_c06_a_last_chunk_with_an_empty_delta_usage_and_timings_keeps_the_answer() -> None:
    reader = OpenAIStream()
    raw = (
        "\n\n".join(
            [
                chunk({"content": "Done"}),
                chunk({"content": ""}),
                chunk({}, "stop", usage={"completion_tokens": 2}, timings={"predicted_n": 2}),
                "data: [DONE]",
            ]
        )
        + "\n\n"
    )
    feed(reader, raw)
    assert reader.reply(names()) == {"type": "answer", "text": "Done"}


def test_c07_content_in_the_final_chunk_with_finish_reason_is_kept() -> None:
    reader = OpenAIStream()
    raw = chunk({"content": "Hel"}) + "\n\n" + chunk({"content": "lo"}, "stop") + "\n\n"
    assert feed(reader, raw) == ["Hel", "lo"]
    assert reader.reply(names())["text"] == "Hello"


def test_c08_a_tool_call_with_finish_reason_stop_is_still_a_tool_call() -> None:
    reader = OpenAIStream()
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_time", "arguments": "{}"},
    }
    raw = chunk({"tool_calls": [call]}) + "\n\n" + chunk({}, "stop") + "\n\ndata: [DONE]\n\n"
    feed(reader, raw)
    reply = reader.reply(names())
    assert reply["type"] == "tool" and reply["name"] == "get_time" and reply["arguments"] == {}


def test_c09_text_then_two_parallel_calls_gives_the_first_call_whole() -> None:
    reader = OpenAIStream()
    first = {"index": 0, "id": "call_a", "function": {"name": "add_to_cart", "arguments": ""}}
    second = {"index": 1, "id": "call_b", "function": {"name": "get_time", "arguments": "{}"}}
    raw = (
        "\n\n".join(
            [
                chunk({"content": "Sure. "}),
                chunk({"tool_calls": [first]}),
                chunk({"tool_calls": [second]}),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"product": "mug"}'}}]}
                ),
                chunk({}, "tool_calls"),
                "data: [DONE]",
            ]
        )
        + "\n\n"
    )
    assert feed(reader, raw) == ["Sure. "]
    reply = reader.reply(names())
    assert reply["name"] == "add_to_cart" and reply["arguments"] == {"product": "mug"}


def test_c10_a_plain_reply_with_arguments_as_an_object_is_read() -> None:
    data = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "add_to_cart", "arguments": {"product": "mug"}}}
                    ],
                },
            }
        ]
    }
    reply = OPENAI.parse(data, names())
    assert reply["arguments"] == {"product": "mug"} and reply["id"]


def test_c11_history_sent_to_a_compatible_server_has_arguments_as_a_json_string() -> None:
    app = create_proxy_app(
        provider="openai",
        model="m",
        api_key="sk-x-1234567890abcdefgh",
        allowed_origins=["https://shop.example"],
        rate_limit=False,
    )
    body = {
        "version": 1,
        "instructions": "",
        "tools": [
            {"name": "add_to_cart", "description": "Add.", "inputSchema": {"type": "object"}}
        ],
        "messages": [
            {"role": "user", "content": "add a mug"},
            {
                "role": "assistant",
                "toolCall": {"id": "c1", "name": "add_to_cart", "arguments": {"product": "mug"}},
            },
            {
                "role": "tool",
                "toolCallId": "c1",
                "name": "add_to_cart",
                "content": "ok",
                "isError": False,
                "untrusted": False,
            },
        ],
    }
    prepared = app._prepare(json.dumps(body).encode())
    sent = OPENAI.build(prepared, "http://127.0.0.1:9/v1", "k").body
    [call] = sent["messages"][-2]["tool_calls"]
    assert isinstance(call["function"]["arguments"], str)
    assert json.loads(call["function"]["arguments"]) == {"product": "mug"}


# --- Anthropic streams ------------------------------------------------------------------------


def _anthropic(partials: list[str], start_input: Any = None) -> AnthropicStream:
    reader = AnthropicStream()
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "add_to_cart",
        "input": {} if start_input is None else start_input,
    }
    events = [
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            },
        )
        for p in partials
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    feed(reader, "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events))
    return reader


def test_c12_input_json_fragments_are_joined_before_they_are_parsed() -> None:
    reply = _anthropic(['{"prod', 'uct": "m', 'ug", "quantity": 2}']).reply(names(ANTHROPIC_NAMES))
    assert reply["arguments"] == {"product": "mug", "quantity": 2}


def test_c13_an_empty_first_fragment_is_harmless() -> None:
    reply = _anthropic(["", '{"product": "mug"}']).reply(names(ANTHROPIC_NAMES))
    assert reply["arguments"] == {"product": "mug"}


def test_c14_an_input_given_whole_at_the_block_start_is_kept() -> None:
    reply = _anthropic([], start_input={"product": "mug"}).reply(names(ANTHROPIC_NAMES))
    assert reply["arguments"] == {"product": "mug"}


# --- Gemini -----------------------------------------------------------------------------------


def test_c15_a_function_call_without_args_means_no_arguments() -> None:
    data = {
        "candidates": [
            {
                "finishReason": "STOP",
                "content": {"role": "model", "parts": [{"functionCall": {"name": "get_time"}}]},
            }
        ]
    }
    assert GEMINI.parse(data, names(GEMINI_NAMES))["arguments"] == {}
    reader = GeminiStream()
    feed(reader, "data: " + json.dumps(data) + "\r\n\r\n")
    assert reader.reply(names(GEMINI_NAMES))["arguments"] == {}


@pytest.mark.parametrize("schema", [{"type": "object", "properties": {}}, {"type": "object"}])
def test_c16_a_tool_without_parameters_is_declared_without_empty_properties(schema: Any) -> None:
    app = create_proxy_app(
        provider="gemini",
        model="m",
        api_key="AIza" + "x" * 35,
        allowed_origins=["https://shop.example"],
        rate_limit=False,
    )
    body = {
        "version": 1,
        "instructions": "",
        "messages": [{"role": "user", "content": "time?"}],
        "tools": [{"name": "get_time", "description": "Now.", "inputSchema": schema}],
    }
    sent = GEMINI.build(app._prepare(json.dumps(body).encode()), "http://127.0.0.1:9/v1beta", "k")
    [declaration] = sent.body["tools"][0]["functionDeclarations"]
    parameters = declaration.get("parameters")
    assert parameters is None or parameters.get("properties")


# --- server-sent events on the wire -----------------------------------------------------------


def test_c17_a_multibyte_character_split_across_network_chunks_arrives_whole() -> None:
    reader = OpenAIStream()
    raw = (chunk({"content": "你好，世界 ☕"}, "stop") + "\n\ndata: [DONE]\n\n").encode("utf-8")
    cut = raw.index("好".encode()) + 1  # inside the 3-byte sequence
    parser = SSEParser()
    texts: list[str] = []
    for part in (raw[:cut], raw[cut:]):
        for event in parser.feed_bytes(part):
            texts += reader.feed(event)
    assert "".join(texts) == "你好，世界 ☕" and "\ufffd" not in "".join(texts)


def test_c18_crlf_split_between_chunks_and_data_without_a_space() -> None:
    parser = SSEParser()
    events = (
        parser.feed('data:{"a": 1}\r') + parser.feed("\n\r\n") + parser.feed("data:[DONE]\r\n\r\n")
    )
    assert [e.data for e in events] == ['{"a": 1}', "[DONE]"]


def test_c19_a_data_line_split_across_chunks_is_reassembled() -> None:
    reader = OpenAIStream()
    raw = chunk({"content": "joined"}, "stop") + "\n\ndata: [DONE]\n\n"
    assert feed(reader, raw, pieces=17) == ["joined"]
