"""Server-sent events parsing (HTML standard, "Interpreting an event stream") and formatting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysite_agent.core.sse import ServerSentEvent, SSEParser, format_event


def parse_all(chunks: list[bytes]) -> list[ServerSentEvent]:
    parser = SSEParser()
    out: list[ServerSentEvent] = []
    for chunk in chunks:
        out += parser.feed_bytes(chunk)
    return out


def test_the_standard_rules() -> None:
    stream = (
        b"\xef\xbb\xbf: a comment\n"
        b'event: delta\ndata: {"text": "Hi"}\n\n'
        b"data:no space\r\n\r\n"
        b"data: two\rdata: lines\r\r"
        b"event: ignored because no data\n\n"
        b"id: 7\nretry: 10\nunknown: x\ndata\n\n"
        b"event: reply\ndata: {}\n\n"
        b"data: cut off"
    )
    events = parse_all([stream])
    assert events == [
        ServerSentEvent("delta", '{"text": "Hi"}'),
        ServerSentEvent("message", "no space"),
        ServerSentEvent("message", "two\nlines"),
        ServerSentEvent("message", ""),
        ServerSentEvent("reply", "{}"),
    ]


def test_pending_says_whether_an_event_was_cut_off() -> None:
    parser = SSEParser()
    assert parser.feed("event: delta\ndata: x\n\n") == [ServerSentEvent("delta", "x")]
    assert not parser.pending
    parser.feed("data: y")
    assert parser.pending
    parser.feed("\n")
    assert parser.pending


def test_split_anywhere_gives_the_same_events() -> None:
    text = "event: delta\r\ndata: caf\u00e9 \u2603\r\n\r\nevent: reply\ndata: {}\n\n"
    data = text.encode()
    whole = parse_all([data])
    assert len(whole) == 2
    for cut in range(1, len(data)):
        assert parse_all([data[:cut], data[cut:]]) == whole, cut
    assert parse_all([bytes([b]) for b in data]) == whole


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["delta", "reply", "error", "message"]),
            st.text(max_size=30),
        ),
        max_size=6,
    ),
    st.lists(st.integers(min_value=1, max_value=9), max_size=20),
)
def test_format_then_parse_round_trips(events: list[tuple[str, str]], cuts: list[int]) -> None:
    data = b"".join(format_event(name, text) for name, text in events)
    chunks: list[bytes] = []
    rest = data
    for size in cuts:
        chunks.append(rest[:size])
        rest = rest[size:]
    chunks.append(rest)
    expected = [
        ServerSentEvent(name, text.replace("\r\n", "\n").replace("\r", "\n"))
        for name, text in events
    ]
    assert parse_all(chunks) == expected


def test_an_event_name_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        format_event("a\nb", "x")


@pytest.mark.parametrize(
    ("name", "last"), [("reply-stream.txt", "reply"), ("reply-stream-error.txt", "error")]
)
def test_published_stream_examples_validate(name: str, last: str) -> None:
    """The streaming reply's examples: each event is a ``streamEvent``; one ends the stream."""
    import json
    from importlib import resources

    from pysite_agent.core import wire

    text = (
        resources.files("pysite_agent")
        .joinpath(f"schemas/examples/{name}")
        .read_text(encoding="utf-8")
    )
    parser = SSEParser()
    events = parser.feed(text)
    assert not parser.pending
    for event in events:
        value = {"event": event.event, "data": json.loads(event.data)}
        assert wire.problems("protocol-v1", value, "streamEvent") == []
    assert [e.event for e in events] == ["delta"] * (len(events) - 1) + [last]
