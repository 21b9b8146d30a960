"""proxy(url) streaming: Accept, server-sent events from a body stream, JSON fallback, failures.

The fake ``fetch`` here gives a ``response.body.getReader()`` as the Fetch standard does
(``read()`` -> ``{done, value}``). The same adapter against the real server over loopback is in
``tests/server/test_server_stream.py``; in the browser, ``tests/browser/test_element_stream.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aio import run
from test_models_proxy import DOMError, FakeFetch, Response, request

import pysite_agent as sa
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.sse import format_event
from pysite_agent.models.proxy import proxy


class Reader:
    """A ReadableStreamDefaultReader over scripted chunks; ``"WAIT"`` waits for an abort."""

    def __init__(self, chunks: list[Any], signal: Any) -> None:
        self.chunks = list(chunks)
        self.signal = signal
        self.cancelled = False

    async def read(self) -> dict[str, Any]:
        await asyncio.sleep(0)
        if not self.chunks:
            return {"done": True, "value": None}
        chunk = self.chunks.pop(0)
        if chunk == "WAIT":
            done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self.signal.add_listener(
                lambda: done.done() or done.set_exception(DOMError("AbortError", "aborted"))
            )
            return await done
        if isinstance(chunk, BaseException):
            raise chunk
        return {"done": False, "value": chunk}

    async def cancel(self) -> None:
        self.cancelled = True


class StreamResponse:
    def __init__(self, chunks: list[Any], content_type: str = "text/event-stream") -> None:
        self.status = 200
        self.headers = {"Content-Type": content_type}
        self.chunks = chunks
        self.reader: Reader | None = None
        self.signal: Any = None

    @property
    def body(self) -> Any:
        response = self

        class Body:
            def getReader(self) -> Reader:
                response.reader = Reader(response.chunks, response.signal)
                return response.reader

        return Body()

    async def text(self) -> str:
        raise AssertionError("a streamed body is read with getReader()")


class StreamFetch(FakeFetch):
    async def __call__(self, url: str, init: dict[str, Any]) -> Any:
        response = await super().__call__(url, init)
        if isinstance(response, StreamResponse):
            response.signal = init["signal"]
        return response


def ev(name: str, data: Any) -> bytes:
    return format_event(name, json.dumps(data))


def delta(text: str) -> bytes:
    return ev("delta", {"text": text})


def streaming_request(fragments: list[str], **kw: Any) -> Any:
    return request(on_text=fragments.append, **kw)


def test_asks_for_a_stream_only_when_on_text_is_set() -> None:
    fetch = FakeFetch(
        Response(200, {"type": "answer", "text": "a"}),
        Response(200, {"type": "answer", "text": "b"}),
    )
    model = proxy("/api", fetch=fetch)
    run(model.respond(request()))
    run(model.respond(streaming_request([])))
    assert fetch.calls[0][1]["headers"]["accept"] == "application/json"
    assert fetch.calls[1][1]["headers"]["accept"] == "text/event-stream, application/json"


def test_deltas_then_the_reply() -> None:
    answer = {"type": "answer", "text": "The mug costs 8 EUR."}
    body = delta("The mug ") + delta("costs 8 EUR.") + ev("reply", answer)
    # Chunks cut across events and inside a UTF-8 character.
    raw = b": keep-alive\n\n" + body
    chunks = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    response = StreamResponse(chunks, "text/event-stream; charset=utf-8")
    fragments: list[str] = []
    reply = run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request(fragments)))
    assert reply == answer
    assert fragments == ["The mug ", "costs 8 EUR."]


def test_text_then_a_tool_call_arrives_whole_in_the_reply() -> None:
    call = {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}, "id": "c1"}
    response = StreamResponse([delta("Adding it now."), ev("reply", call)])
    fragments: list[str] = []
    reply = run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request(fragments)))
    assert reply == call
    assert fragments == ["Adding it now."]
    assert response.reader is not None and response.reader.cancelled  # nothing more is read


def test_a_tool_reply_that_breaks_the_schema_is_bad_reply() -> None:
    bad = {"type": "tool", "name": "add_to_cart"}  # no arguments
    response = StreamResponse([delta("x"), ev("reply", bad)])
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request([])))
    assert info.value.code == "bad-reply"
    assert "does not match protocol v1" in info.value.message


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("upstream-error", "provider behind the endpoint failed (during the answer"),
        ("upstream-timeout", "did not answer in time (during the answer"),
    ],
)
def test_an_error_event_mid_stream_keeps_the_text_and_raises(code: str, words: str) -> None:
    response = StreamResponse(
        [delta("Half an "), ev("error", {"error": {"code": code, "message": "m"}})]
    )
    fragments: list[str] = []
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request(fragments)))
    assert info.value.code == "model-error"
    assert words in info.value.message and f"{code}: m" in info.value.message
    assert fragments == ["Half an "]


def test_a_stream_cut_off_before_the_reply_is_a_model_error() -> None:
    response = StreamResponse([delta("Half"), b'event: reply\ndata: {"type"'])
    fragments: list[str] = []
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request(fragments)))
    assert info.value.code == "model-error"
    assert "ended before its reply" in info.value.message
    assert fragments == ["Half"]


def test_a_network_failure_mid_stream_is_a_model_error() -> None:
    response = StreamResponse([delta("Half"), DOMError("TypeError", "network error")])
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request([])))
    assert info.value.code == "model-error"
    assert "network error" in info.value.message


@pytest.mark.parametrize("data", ['{"text": ""}', '{"text": 5}', "nope", '{"text": "a", "x": 1}'])
def test_a_bad_delta_is_bad_reply(data: str) -> None:
    response = StreamResponse([format_event("delta", data)])
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request([])))
    assert info.value.code == "bad-reply"


def test_unknown_events_are_skipped() -> None:
    answer = {"type": "answer", "text": "ok"}
    response = StreamResponse([ev("progress", {"n": 1}), ev("reply", answer)])
    assert run(proxy("/api", fetch=StreamFetch(response)).respond(streaming_request([]))) == answer


def test_an_old_server_answering_json_still_works() -> None:
    answer = {"type": "answer", "text": "plain"}
    fragments: list[str] = []
    model = proxy(
        "/api", fetch=FakeFetch(Response(200, answer, {"content-type": "application/json"}))
    )
    assert run(model.respond(streaming_request(fragments))) == answer
    assert fragments == []


def test_errors_before_the_stream_are_the_usual_status_errors() -> None:
    body = {"error": {"code": "rate-limited", "message": "slow down"}}
    model = proxy("/api", fetch=FakeFetch(Response(429, body, {"retry-after": "3"})))
    with pytest.raises(sa.SiteAgentError) as info:
        run(model.respond(streaming_request([])))
    assert info.value.code == "model-error" and "retry after 3 s" in info.value.message


def test_a_stream_without_a_body_reader_is_read_as_text() -> None:
    answer = {"type": "answer", "text": "ok"}

    class TextOnly(Response):
        def __init__(self) -> None:
            super().__init__(200, "", {"content-type": "text/event-stream"})
            self._body = (delta("o") + delta("k") + ev("reply", answer)).decode()

    fragments: list[str] = []
    assert (
        run(proxy("/api", fetch=FakeFetch(TextOnly())).respond(streaming_request(fragments)))
        == answer
    )
    assert fragments == ["o", "k"]


def test_abort_mid_stream_stops_reading_and_aborts_the_fetch() -> None:
    response = StreamResponse([delta("Half"), "WAIT"])
    fetch = StreamFetch(response)
    fragments: list[str] = []

    async def scenario() -> None:
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.2, controller.abort, "stop")
        await proxy("/api", fetch=fetch).respond(
            streaming_request(fragments, signal=controller.signal)
        )

    with pytest.raises(AbortedError):
        run(scenario())
    assert fragments == ["Half"]
    assert fetch.calls[0][1]["signal"].aborted
    assert response.reader is not None and response.reader.cancelled


def test_through_the_agent_text_then_tool_then_answer() -> None:
    call = {"type": "tool", "name": "search", "arguments": {"query": "mug"}, "id": "c1"}
    answer = {"type": "answer", "text": "Found one mug."}
    fetch = StreamFetch(
        StreamResponse([delta("Looking."), ev("reply", call)]),
        StreamResponse([delta("Found "), delta("one mug."), ev("reply", answer)]),
    )
    from helpers import Shop, ask, types

    agent = sa.create_site_agent(model=proxy("/api", fetch=fetch), tools=Shop().tools())
    events, result = run(ask(agent, "find a mug"))
    assert types(events) == [
        "thinking",
        "text-delta",
        "tool-call",
        "tool-result",
        "thinking",
        "text-delta",
        "text-delta",
        "answer",
        "done",
    ]
    assert result.answer == "Found one mug."
