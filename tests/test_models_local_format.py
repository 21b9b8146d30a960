"""The local model's short reply format (``local_schema.REPLY_FORMAT``): the reply back in
protocol v1's shape, answer text out of it while it streams, and nothing else accepted."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from generators import hostile_text, hostile_value
from hypothesis import given, settings
from hypothesis import strategies as st

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.wire import parse_reply, user_message
from pysite_agent.models.chrome import REPLY_FORMAT as CHROME_REPLY_FORMAT
from pysite_agent.models.chrome.prompt import build_prompt
from pysite_agent.models.local import LAYOUT, _parse
from pysite_agent.models.local_schema import (
    REPLY_FORMAT,
    LocalAnswerStream,
    reply_schema,
    to_protocol,
)

TOOLS = [
    {
        "name": "add_to_cart",
        "inputSchema": {
            "type": "object",
            "properties": {"product": {"type": "string"}, "quantity": {"type": "integer"}},
            "required": ["product", "quantity"],
        },
    }
]


def test_a_call_and_an_answer_become_protocol_replies() -> None:
    call = _parse('{"tool": "add_to_cart", "arguments": {"product": "mug", "quantity": 2}}')
    assert call == {
        "type": "tool",
        "name": "add_to_cart",
        "arguments": {"product": "mug", "quantity": 2},
    }
    assert _parse('{\n  "answer": "Done."\n}') == {"type": "answer", "text": "Done."}


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": 3, "arguments": {}}',
        '{"answer": 5}',
        '{"answer": "x", "tool": "add_to_cart"}',
        '{"tool": "add_to_cart"}',
        "[]",
        '"hi"',
    ],
)
def test_anything_else_is_a_bad_reply(text: str) -> None:
    with pytest.raises(SiteAgentError) as info:
        _parse(text)
    assert info.value.code == "bad-reply"


@settings(max_examples=150, deadline=None)
@given(value=hostile_value)
def test_to_protocol_of_anything_is_refused_or_a_protocol_reply(value: Any) -> None:
    try:
        reply = parse_reply(to_protocol(value))
    except SiteAgentError as exc:
        assert exc.code == "bad-reply"
    else:
        assert reply["type"] in ("tool", "answer")


@settings(max_examples=150, deadline=None)
@given(text=hostile_text(200), cuts=st.lists(st.integers(1, 400), max_size=8))
def test_streamed_answer_text_is_the_answer_in_any_chunking(text: str, cuts: list[int]) -> None:
    raw = json.dumps({"answer": text}, ensure_ascii=False)
    stream = LocalAnswerStream()
    pieces, at = [], 0
    for cut in [*sorted(set(cuts)), len(raw)]:
        if cut > at:
            pieces.append(stream.feed(raw[at:cut]))
            at = cut
    assert "".join(pieces) == text
    assert _parse(raw) == {"type": "answer", "text": text}


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 20))
def test_a_tool_call_never_streams(size: int) -> None:
    raw = json.dumps({"tool": "add_to_cart", "arguments": {"product": "mug", "quantity": 2}})
    stream = LocalAnswerStream()
    assert "".join(stream.feed(raw[i : i + size]) for i in range(0, len(raw), size)) == ""
    # Chrome's shape does not stream either: it is not this model's format
    other = LocalAnswerStream()
    assert other.feed('{"type": "answer", "text": "hi"}') == ""


def test_the_prompt_gives_the_short_format_before_the_conversation_and_ends_with_it() -> None:
    messages = [user_message("add two mugs"), user_message("and a tote bag")]
    text, _ = build_prompt(messages, TOOLS, max_history=6, max_prompt_chars=3000, layout=LAYOUT)
    head, _, conversation = text.partition("Conversation so far:\n")
    assert head.endswith("\n\n" + REPLY_FORMAT + "\n\n") and CHROME_REPLY_FORMAT not in text
    assert conversation == "Visitor: add two mugs\nVisitor: and a tote bag"  # it ends there
    assert "\n- add_to_cart\n" in head and "(product: string" not in head  # names (no description)
    # Chrome's own layout is unchanged
    chrome, _ = build_prompt(messages, TOOLS, max_history=6, max_prompt_chars=3000)
    assert chrome.endswith("\n\n" + CHROME_REPLY_FORMAT) and "add_to_cart(product" in chrome
    ok = jsonschema.Draft202012Validator(reply_schema(TOOLS))
    assert ok.is_valid({"tool": "add_to_cart", "arguments": {"product": "mug", "quantity": 2}})
    assert ok.is_valid({"answer": "..."})
    assert len(REPLY_FORMAT) < len(CHROME_REPLY_FORMAT)
