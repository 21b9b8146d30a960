"""A busy provider is told as busy, before its stream and inside it (docs/server.md, errors).

429 (rate limited), 503 (unavailable) and Anthropic's 529 ``overloaded_error`` reach the
visitor through the browser's ``proxy()`` adapter as "the model is busy; try again", with the
provider's ``Retry-After`` where it gave one, never as "the model provider failed".
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import Proxy, request_body
from stub_upstream import Reply, StubUpstream, _sse, stream_reply
from test_server_stream import STREAM, HttpxFetch, agent_request, events_of

import pysite_agent as sa
from pysite_agent.models.proxy import proxy as proxy_model

BUSY_BODIES = {
    ("anthropic", 529): {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    },
    ("anthropic", 429): {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down"},
    },
    ("openai", 429): {
        "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    },
    ("openai", 503): {
        "error": {"message": "The engine is currently overloaded", "type": "server_error"}
    },
    ("gemini", 503): {
        "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}
    },
    ("gemini", 429): {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}},
}

IN_STREAM = {
    "anthropic": _sse(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ),
    "openai": _sse(
        None, {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": 429}}
    ),
    "gemini": _sse(
        None, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}, "\r\n"
    ),
}


def _ask(url: str, stream: bool) -> sa.SiteAgentError:
    async def go() -> Any:
        fetch = HttpxFetch()
        try:
            on_text = (lambda text: None) if stream else None
            return await proxy_model(url, fetch=fetch).respond(agent_request(on_text))
        finally:
            await fetch.client.aclose()

    with pytest.raises(sa.SiteAgentError) as info:
        asyncio.run(go())
    return info.value


@pytest.mark.parametrize(("provider", "status"), sorted(BUSY_BODIES))
@pytest.mark.parametrize("stream", [False, True])
def test_a_busy_status_before_the_answer_reads_as_busy_with_its_retry_after(
    proxy: Any, stub: StubUpstream, provider: str, status: int, stream: bool
) -> None:
    p: Proxy = proxy(provider)
    body = BUSY_BODIES[(provider, status)]
    stub.responder = lambda r: Reply(status, body, headers={"retry-after": "7"})
    response = p.post(request_body(), headers=STREAM if stream else None)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["upstreamStatus"] == status
    assert "busy" in error["message"]
    assert response.headers["retry-after"] == "7"
    assert "retry-after" in response.headers["access-control-expose-headers"]
    seen = _ask(p.url, stream)
    assert seen.code == "model-error"
    assert "busy" in seen.message and "try again" in seen.message
    assert "failed" not in seen.message
    assert "7 s" in seen.message


@pytest.mark.parametrize("provider", sorted(IN_STREAM))
def test_a_busy_error_inside_the_stream_reads_as_busy(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    chunks = stream_reply(provider, ["Half "], end=False)
    stub.responder = lambda r: Reply(stream=[*chunks, IN_STREAM[provider]])
    events = events_of(p.post(request_body(), headers=STREAM))
    name, data = events[-1]
    assert name == "error"
    assert "busy" in data["error"]["message"]
    assert data["error"]["upstreamStatus"] in (429, 503, 529)
    seen = _ask(p.url, True)
    assert "busy" in seen.message and "failed" not in seen.message


def test_a_plain_provider_failure_still_reads_as_a_failure(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(500, {"error": {"message": "boom", "type": "server_error"}})
    seen = _ask(p.url, False)
    assert "failed" in seen.message and "busy" not in seen.message


def test_a_refused_key_tells_the_visitor_to_tell_the_site_owner(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(
        401,
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
    )
    seen = _ask(p.url, False)
    assert "key" in seen.message and "site owner" in seen.message
