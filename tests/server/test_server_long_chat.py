"""A visitor chats for 100 turns through the real proxy app with its default caps.

The browser side is the real agent with the real ``proxy()`` adapter; its ``fetch`` is an
``httpx`` client over loopback HTTP to the app under uvicorn, which talks to a stub upstream in
each provider's recorded shapes. Every turn calls a tool and then answers, so the history passes
the default ``max_messages`` (40) after 10 turns and, with a few long results, the default
``max_body_bytes`` (65,536). No turn may fail.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from conftest import ORIGIN, PROVIDERS, Proxy
from stub_upstream import (
    Recorded,
    Reply,
    StubUpstream,
    last_turn_is_tool_result,
    stream_reply,
    tool_chooser,
)

import pysite_agent as sa
from pysite_agent.core.wire import problems
from pysite_agent.models.proxy import proxy as proxy_model

TURNS = 100


class HttpxFetch:
    """``fetch(url, init)`` for ``proxy()``: a POST over loopback, recording each status."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.statuses: list[int] = []
        self.sizes: list[tuple[int, int]] = []  # (messages, body bytes) of each request

    async def __call__(self, url: str, init: dict[str, Any]) -> Any:
        body = init["body"].encode("utf-8")
        self.sizes.append((len(json.loads(body)["messages"]), len(body)))
        response = await self.client.post(
            url, content=body, headers={**init["headers"], "origin": ORIGIN}
        )
        self.statuses.append(response.status_code)
        return _Response(response)


class _Response:
    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.headers = dict(response.headers)
        self._text = response.text

    async def text(self) -> str:
        return self._text


def lookup_tool() -> sa.Tool:
    """Results of 200 characters, and of 25,000 on every fourth call: the message cap binds
    most of the time, the body cap after a long result."""
    calls = [0]

    def lookup(args: dict[str, Any]) -> str:
        calls[0] += 1
        size = 25_000 if calls[0] % 4 == 0 else 200
        return f"Product {args['product']}: " + "details " * (size // 8)

    return sa.Tool(
        "lookup",
        "Look up a product.",
        lookup,
        {"type": "object", "properties": {"product": {"type": "string"}}, "required": ["product"]},
        {"readOnlyHint": True},
    )


def streaming_tool_chooser(provider: str) -> Any:
    """Calls ``lookup`` until a result comes back, then answers "Here it is." (two text
    fragments), in the provider's streaming shapes when the proxy asks for a stream (the agent
    streams answers), else as one JSON reply."""
    plain = tool_chooser(provider, "lookup", {"product": "mug"}, answer="Here it is.")

    def respond(request: Recorded) -> Reply:
        body = request.json()
        if not (body.get("stream") or "stream" in request.path.lower()):
            return plain(request)
        if last_turn_is_tool_result(provider, body):
            return Reply(200, stream=stream_reply(provider, ["Here ", "it is."]))
        return Reply(200, stream=stream_reply(provider, [], ("lookup", {"product": "mug"})))

    return respond


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hundred_turns_with_the_default_caps(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    stub.responder = streaming_tool_chooser(provider)
    p: Proxy = proxy(provider)  # the server's default caps

    async def chat() -> tuple[list[sa.RunResult], HttpxFetch, sa.SiteAgent]:
        async with httpx.AsyncClient(trust_env=False, timeout=20) as client:
            fetch = HttpxFetch(client)
            agent = sa.create_site_agent(
                model=proxy_model(p.url, fetch=fetch),
                tools=[lookup_tool()],
                max_result_chars=30_000,
            )
            results = []
            for n in range(TURNS):
                run = agent.run(f"Tell me about product {n}.")
                results.append(await run.done)
            return results, fetch, agent

    results, fetch, agent = asyncio.run(chat())
    failed = [(n, r.error) for n, r in enumerate(results) if r.status != "answered"]
    assert failed == []
    assert [r.answer for r in results] == ["Here it is."] * TURNS
    assert set(fetch.statuses) == {200}  # trimmed before sending: never refused
    assert all(count <= 40 and size <= 65_536 for count, size in fetch.sizes)
    assert len(agent.messages) == 4 * TURNS  # the agent keeps the whole conversation
    trims = [s for r in results for s in r.trace["steps"] if s["kind"] == "trim"]
    assert {t["reason"] for t in trims} == {"max-messages", "max-body-bytes"}
    assert "trim" not in [s["kind"] for s in results[0].trace["steps"]]
    for result in (results[0], results[-1]):
        assert problems("trace-v1", result.trace) == []
    assert p.errors == []
