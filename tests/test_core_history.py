"""The history budget: what part of a conversation an adapter sends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.core.fencing import fence
from pysite_agent.core.history import (
    MIN_RESULT_CHARS,
    current_turn_start,
    cut_text,
    fit_messages,
    json_bytes,
)
from pysite_agent.core.wire import (
    answer_message,
    tool_call_message,
    tool_result_message,
    user_message,
)


def turn(n: int, *, calls: int = 1, result: str = "ok") -> list[dict[str, Any]]:
    """One visitor turn: the message, ``calls`` call/result pairs, an answer."""
    out = [user_message(f"question {n}")]
    for c in range(calls):
        out.append(tool_call_message(f"c{n}_{c}", "search", {"q": n}))
        out.append(tool_result_message(f"c{n}_{c}", "search", result))
    out.append(answer_message(f"answer {n}"))
    return out


def conversation(turns: int, **kw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(turns):
        out += turn(n, **kw)
    return out


def body_size(messages: list[dict[str, Any]], overhead: int) -> int:
    return overhead + json_bytes(messages) - 2  # json_bytes([...]) counts the brackets


def pairs_intact(messages: list[dict[str, Any]]) -> bool:
    """Every call is followed by its result, and every result follows its call."""
    for i, m in enumerate(messages):
        if "toolCall" in m:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if nxt is None or nxt.get("toolCallId") != m["toolCall"]["id"]:
                return False
        if m.get("role") == "tool":
            prev = messages[i - 1] if i else None
            if prev is None or prev.get("toolCall", {}).get("id") != m["toolCallId"]:
                return False
    return True


def test_nothing_is_cut_when_it_fits() -> None:
    messages = conversation(3)
    kept, trim = fit_messages(messages, max_messages=40, max_bytes=65_536)
    assert kept == messages and trim is None
    assert kept[0] is not messages[0]  # copies


def test_oldest_turns_go_first_and_the_first_message_is_the_visitors() -> None:
    messages = conversation(20)  # 4 messages a turn: 80
    kept, trim = fit_messages(messages, max_messages=40, max_bytes=None)
    assert len(kept) == 40
    assert kept == messages[40:]
    assert kept[0]["role"] == "user"
    assert trim is not None
    assert trim.to_json() == {
        "reason": "max-messages",
        "droppedMessages": 40,
        "shortenedResults": 0,
        "sentMessages": 40,
        "maxMessages": 40,
    }


def test_whole_turns_only_so_a_call_keeps_its_result() -> None:
    messages = conversation(5, calls=3)  # 8 messages a turn
    kept, _ = fit_messages(messages, max_messages=13, max_bytes=None)
    assert kept == messages[32:]  # the last turn alone (8); two turns would be 16
    assert pairs_intact(kept)


def test_the_body_size_is_exact() -> None:
    messages = conversation(30, result="é" * 50)
    overhead = json_bytes({"version": 1, "instructions": "x", "messages": [], "tools": []})
    for cap in (500, 2_000, 5_000):
        kept, trim = fit_messages(
            messages, max_messages=None, max_bytes=cap, overhead_bytes=overhead
        )
        assert body_size(kept, overhead) <= cap
        # one more turn would not have fitted
        start = len(messages) - len(kept)
        previous = max(i for i in range(start) if messages[i]["role"] == "user")
        assert body_size(messages[previous:], overhead) > cap
        assert trim is not None and trim.reason == "max-body-bytes"
        assert trim.to_json()["maxBodyBytes"] == cap


def test_the_current_turn_is_kept_and_its_older_results_shortened_first() -> None:
    messages = [
        *conversation(2),
        *turn(9, calls=3, result="r" * 3_000),
    ]
    cap = 6_000
    kept, trim = fit_messages(messages, max_messages=None, max_bytes=cap)
    assert kept[0] == user_message("question 9")
    assert body_size(kept, 0) <= cap
    results = [m for m in kept if m["role"] == "tool"]
    assert "[… cut" in results[0]["content"]
    assert results[-1]["content"] == "r" * 3_000  # the latest result kept whole when possible
    assert trim is not None and trim.shortened_results >= 1
    assert trim.dropped_messages == 8
    # the input is never changed
    assert all(m["content"] == "r" * 3_000 for m in messages[8:] if m.get("role") == "tool")


def test_the_latest_result_is_shortened_last() -> None:
    messages = [user_message("q"), *turn(1, result="x" * 10_000)[1:3]]
    kept, trim = fit_messages(messages, max_messages=None, max_bytes=2_000)
    assert "[… cut" in kept[-1]["content"]
    assert len(kept[-1]["content"]) >= MIN_RESULT_CHARS
    assert body_size(kept, 0) <= 2_000
    assert trim is not None and trim.shortened_results == 1


def test_a_fenced_result_still_closes_its_fence_when_cut() -> None:
    text = fence("reviews", "Great <b>mug</b> " * 500)
    cut = cut_text(text, 300)
    assert len(cut) <= 300
    assert cut.startswith('<untrusted-data tool="reviews">\n')
    assert cut.endswith("\n</untrusted-data>")
    assert cut.count("<") == 2  # only the fence's own tags


def test_too_big_current_turn_is_its_own_error() -> None:
    messages = [user_message("q" * 5_000)]
    with pytest.raises(sa.SiteAgentError) as info:
        fit_messages(messages, max_messages=None, max_bytes=1_000)
    assert info.value.code == "conversation-too-long"
    assert "1000 bytes" in info.value.message
    many = [user_message("q"), *conversation(1, calls=25)[1:-1]]  # 51 messages
    with pytest.raises(sa.SiteAgentError) as info:
        fit_messages(many, max_messages=40, max_bytes=None)
    assert info.value.code == "conversation-too-long"
    assert "40 messages" in info.value.message


def test_current_turn_start() -> None:
    assert current_turn_start([]) == 0
    assert current_turn_start(conversation(2)) == 4
    assert current_turn_start([answer_message("hi")]) == 1


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(st.tuples(st.integers(0, 4), st.text(max_size=400)), min_size=1, max_size=30),
    max_messages=st.integers(12, 60),
    max_bytes=st.integers(4_000, 40_000),
)
def test_property_whatever_fits_is_whole_turns_ending_with_the_current_one(
    turns: list[tuple[int, str]], max_messages: int, max_bytes: int
) -> None:
    messages: list[dict[str, Any]] = []
    for n, (calls, result) in enumerate(turns):
        messages += turn(n, calls=calls, result=result)
    messages.pop()  # the current turn has no answer yet
    try:
        kept, trim = fit_messages(messages, max_messages=max_messages, max_bytes=max_bytes)
    except sa.SiteAgentError as exc:
        assert exc.code == "conversation-too-long"
        return
    assert len(kept) <= max_messages
    assert body_size(kept, 0) <= max_bytes
    assert kept[0]["role"] == "user"
    assert pairs_intact(kept)
    start = current_turn_start(messages)
    assert [m.get("toolCall", m.get("toolCallId")) for m in kept][-(len(messages) - start) :] == [
        m.get("toolCall", m.get("toolCallId")) for m in messages[start:]
    ]
    if trim is None:
        assert kept == messages
    else:
        assert trim.dropped_messages + trim.sent_messages == len(messages)
        assert json.loads(json.dumps(trim.to_json())) == trim.to_json()
