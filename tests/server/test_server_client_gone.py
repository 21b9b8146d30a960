"""The visitor leaves while the provider has not sent its first byte yet.

Real uvicorn on loopback, a stub upstream that waits before answering and notes when its
connection is closed: the proxy must close the upstream request as soon as the client is
gone, for a streamed and a plain request alike, instead of paying for an answer nobody reads.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from conftest import ORIGIN, Proxy, request_body
from stub_upstream import Reply, StubUpstream

ACCEPTS = {"stream": "text/event-stream, application/json", "plain": "application/json"}


@pytest.mark.parametrize(("provider", "mode"), [("openai", "stream"), ("anthropic", "plain")])
def test_the_upstream_request_closes_when_the_client_leaves_before_the_first_byte(
    proxy: Any, stub: StubUpstream, mode: str, provider: str
) -> None:
    p: Proxy = proxy(provider, timeout_ms=20_000)
    stub.responder = lambda r: Reply(wait_s=15.0, body={"never": "sent"})
    headers = {"content-type": "application/json", "origin": ORIGIN, "accept": ACCEPTS[mode]}
    left_at = 0.0
    with httpx.Client(trust_env=False, timeout=httpx.Timeout(10, read=0.6)) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(p.url, content=json.dumps(request_body()), headers=headers)
        left_at = time.monotonic()  # the client closed its connection when it gave up
    assert stub.closed_by_client.wait(5), "the upstream request ran on after the client left"
    assert stub.closed_at is not None
    assert stub.closed_at - left_at < 2.0
    assert p.errors == []  # a visitor leaving is not a provider failure
