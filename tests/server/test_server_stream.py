"""Protocol v1's streaming reply over real HTTP: each provider's streaming API on a loopback stub.

The stub upstream streams in each provider's recorded shapes (``stub_upstream.stream_reply``),
chunk by chunk; the app runs under uvicorn; the client is httpx, and the browser's ``proxy()``
adapter with an httpx-backed ``fetch`` whose body is read with ``getReader()``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest
from conftest import ORIGIN, PROVIDERS, Proxy, request_body
from stub_upstream import (
    KEY,
    Reply,
    StubUpstream,
    error_reply,
    stream_error,
    stream_reply,
    text_reply,
)

import pysite_agent as sa
from pysite_agent.core import wire
from pysite_agent.core.sse import SSEParser
from pysite_agent.core.types import ModelRequest
from pysite_agent.models.proxy import proxy as proxy_model
from pysite_agent.server import UpstreamError, UpstreamTimeout

STREAM = {"accept": "text/event-stream, application/json"}


def events_of(response: httpx.Response) -> list[tuple[str, Any]]:
    """The response's events as ``(name, data)``; each is checked against ``streamEvent``."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-store"
    assert "content-length" not in response.headers
    out = []
    for event in SSEParser().feed_bytes(response.content):
        data = json.loads(event.data)
        found = wire.problems("protocol-v1", {"event": event.event, "data": data}, "streamEvent")
        assert found == [], (event, found)
        out.append((event.event, data))
    names = [name for name, _ in out]
    assert names.count("reply") + names.count("error") == 1
    assert names[-1] in ("reply", "error")
    return out


def deltas(events: list[tuple[str, Any]]) -> list[str]:
    return [data["text"] for name, data in events if name == "delta"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_streams_as_deltas_then_the_reply(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(
        stream=[*stream_reply(provider, ["The mug ", "costs ", "8 EUR."]), 0.0]
    )
    events = events_of(p.post(request_body(), headers=STREAM))
    assert deltas(events) == ["The mug ", "costs ", "8 EUR."]
    assert events[-1] == ("reply", {"type": "answer", "text": "The mug costs 8 EUR."})
    sent = stub.last()
    if provider == "gemini":
        assert sent.path.endswith(":streamGenerateContent?alt=sse")
    else:
        assert sent.json()["stream"] is True
    assert sent.headers["accept"] == "text/event-stream"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_then_a_tool_call_arrives_whole_in_the_reply(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    arguments = {"product": "mug", "quantity": 2}
    stub.responder = lambda r: Reply(
        stream=stream_reply(provider, ["Adding ", "it."], ("add_to_cart", arguments))
    )
    events = events_of(p.post(request_body(), headers=STREAM))
    assert deltas(events) == ["Adding ", "it."]
    name, reply = events[-1]
    assert name == "reply" and reply["type"] == "tool"
    assert reply["name"] == "add_to_cart" and reply["arguments"] == arguments
    assert reply["id"]
    if provider == "gemini":
        assert reply["meta"] == {"thoughtSignature": "CiQBVKhc7w3bQ=="}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_provider_error_mid_stream_ends_with_an_error_event(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    chunks = stream_reply(provider, ["Half an "], end=False)
    stub.responder = lambda r: Reply(stream=[*chunks, stream_error(provider)])
    events = events_of(p.post(request_body(), headers=STREAM))
    assert deltas(events) == ["Half an "]
    # Anthropic's recorded error is overloaded_error, Gemini's 503 UNAVAILABLE: both busy.
    busy = {"anthropic": 529, "gemini": 503}.get(provider)
    error: dict[str, Any] = {
        "code": "upstream-error",
        "message": "The model provider is busy; try again in a moment."
        if busy
        else "The model provider reported an error during the answer.",
    }
    if busy:
        error["upstreamStatus"] = busy
    assert events[-1] == ("error", {"error": error})
    [error] = p.errors
    assert isinstance(error, UpstreamError) and error.status == 200
    assert error.upstream_status == 200


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_off_before_its_end_is_an_error_event(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(stream=stream_reply(provider, ["Half"], end=False))
    events = events_of(p.post(request_body(), headers=STREAM))
    assert deltas(events) == ["Half"]
    name, body = events[-1]
    assert name == "error" and body["error"]["code"] == "upstream-error"
    assert "ended before the reply was complete" in body["error"]["message"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failure_before_the_stream_is_an_ordinary_error_answer(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(429, error_reply(provider, 429), {"retry-after": "7"})
    response = p.post(request_body(), headers=STREAM)
    assert response.status_code == 502
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"] == {
        "code": "upstream-error",
        "message": "The model provider is busy; try again in a moment.",
        "upstreamStatus": 429,
    }
    assert response.headers["retry-after"] == "7"


def test_without_accept_the_reply_is_json_from_the_plain_api(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, text_reply("openai", "plain"))
    response = p.post(request_body(), headers={"accept": "application/json"})
    assert response.json() == {"type": "answer", "text": "plain"}
    assert "stream" not in stub.last().json()


@pytest.mark.parametrize("accept", ["text/event-stream;q=0", "text/html", "*/*"])
def test_only_an_accept_naming_event_stream_streams(
    proxy: Any, stub: StubUpstream, accept: str
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, text_reply("openai", "plain"))
    response = p.post(request_body(), headers={"accept": accept})
    assert response.json() == {"type": "answer", "text": "plain"}


def test_a_key_echoed_across_fragments_never_leaves(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("anthropic")
    half = len(KEY) // 2
    texts = ["Your key is ", KEY[:half], KEY[half:] + " ok", " and s", "k- stays."]
    stub.responder = lambda r: Reply(stream=stream_reply("anthropic", texts))
    events = events_of(p.post(request_body(), headers=STREAM))  # the client hook checks bytes
    assert "".join(deltas(events)) == "Your key is [redacted] ok and sk- stays."
    assert events[-1][1]["text"] == "Your key is [redacted] ok and sk- stays."


def test_the_timeout_bounds_the_whole_stream(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai", timeout_ms=400)
    chunks = stream_reply("openai", ["Slow"])
    stub.responder = lambda r: Reply(stream=[*chunks[:2], 3.0, *chunks[2:]])
    events = events_of(p.post(request_body(), headers=STREAM))
    assert deltas(events) == ["Slow"]
    assert events[-1][1]["error"]["code"] == "upstream-timeout"
    assert isinstance(p.errors[0], UpstreamTimeout)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_client_going_away_closes_the_upstream_request(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    chunks = stream_reply(provider, ["First ", "second"])
    cut = next(i for i, chunk in enumerate(chunks) if b"First" in chunk) + 1
    stub.responder = lambda r: Reply(stream=[*chunks[:cut], 10.0, *chunks[cut:]])
    with httpx.Client(trust_env=False, timeout=10) as client:
        headers = {"content-type": "application/json", "origin": ORIGIN, **STREAM}
        body = json.dumps(request_body())
        with client.stream("POST", p.url, content=body, headers=headers) as response:
            assert response.status_code == 200
            got = b""
            for chunk in response.iter_bytes():
                got += chunk
                if b"event: delta" in got:
                    break
            closed_at = time.monotonic()
    assert stub.closed_by_client.wait(3), "the proxy kept reading the provider's stream"
    assert time.monotonic() - closed_at < 3
    assert not stub.stream_finished.is_set()


# The browser's proxy() adapter against the server, with an httpx-backed fetch.


class _Reader:
    def __init__(self, response: httpx.Response, stream: Any) -> None:
        self._response = response
        self._chunks = stream.__aiter__()

    async def read(self) -> dict[str, Any]:
        try:
            return {"done": False, "value": await self._chunks.__anext__()}
        except StopAsyncIteration:
            return {"done": True, "value": None}

    async def cancel(self) -> None:
        await self._response.aclose()


class HttpxFetch:
    """``fetch(url, init)`` on httpx for CPython: ``status``, ``headers``, ``text()`` and a
    ``body.getReader()`` over the streamed bytes (the Fetch standard's shape)."""

    def __init__(self) -> None:
        self.client = httpx.AsyncClient(trust_env=False, timeout=10)

    async def __call__(self, url: str, init: dict[str, Any]) -> Any:
        headers = {**init["headers"], "origin": ORIGIN}
        request = self.client.build_request("POST", url, content=init["body"], headers=headers)
        response = await self.client.send(request, stream=True)
        fetch = self

        class Body:
            def getReader(self) -> _Reader:
                return _Reader(response, response.aiter_raw())

        class Response:
            status = response.status_code
            body = Body()

            def __init__(self) -> None:
                self.headers = dict(response.headers)

            async def text(self) -> str:
                await response.aread()
                return response.text

        del fetch
        return Response()


def agent_request(on_text: Any) -> ModelRequest:
    body = request_body()
    return ModelRequest(body["instructions"], body["messages"], body["tools"], on_text=on_text)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_proxy_adapter_reads_the_stream(
    proxy: Any, stub: StubUpstream, server: Any, provider: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(stream=stream_reply(provider, ["Hello ", "there."]))
    fragments: list[str] = []

    async def go() -> Any:
        fetch = HttpxFetch()
        try:
            return await proxy_model(p.url, fetch=fetch).respond(agent_request(fragments.append))
        finally:
            await fetch.client.aclose()

    assert asyncio.run(go()) == {"type": "answer", "text": "Hello there."}
    assert fragments == ["Hello ", "there."]


def test_the_proxy_adapter_keeps_the_text_and_raises_on_a_mid_stream_error(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("openai")
    chunks = stream_reply("openai", ["Half"], end=False)
    stub.responder = lambda r: Reply(stream=[*chunks, stream_error("openai")])
    fragments: list[str] = []

    async def go() -> Any:
        fetch = HttpxFetch()
        try:
            return await proxy_model(p.url, fetch=fetch).respond(agent_request(fragments.append))
        finally:
            await fetch.client.aclose()

    with pytest.raises(sa.SiteAgentError) as info:
        asyncio.run(go())
    assert info.value.code == "model-error"
    assert "during the answer" in info.value.message
    assert fragments == ["Half"]


def test_aborting_the_run_closes_the_upstream_request(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("anthropic")
    chunks = stream_reply("anthropic", ["First ", "second"])
    cut = next(i for i, chunk in enumerate(chunks) if b"First" in chunk) + 1
    stub.responder = lambda r: Reply(stream=[*chunks[:cut], 10.0, *chunks[cut:]])
    first = threading.Event()

    async def go() -> sa.RunResult:
        fetch = HttpxFetch()
        try:
            agent = sa.create_site_agent(model=proxy_model(p.url, fetch=fetch), tools=[])
            run = agent.run("hello")
            async for event in run:
                if event.type == "text-delta":
                    first.set()
                    run.abort()
            return await run.done
        finally:
            await fetch.client.aclose()

    result = asyncio.run(go())
    assert first.is_set() and result.status == "aborted"
    assert stub.closed_by_client.wait(3), "the upstream request stayed open after the abort"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_provider_that_answers_json_to_a_stream_request_still_gives_the_reply(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    # Some compatible servers ignore "stream": true and answer one JSON reply.
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, text_reply(provider, "whole"))
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events == [("reply", {"type": "answer", "text": "whole"})]


def test_a_json_answer_that_is_not_json_is_an_error_event(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, b"{not json")
    events = events_of(p.post(request_body(), headers=STREAM))
    assert events[-1][1]["error"] == {
        "code": "upstream-error",
        "message": "The model provider's reply could not be read.",
    }
