"""Fixtures for the proxy's tests: one uvicorn and one stub upstream for the whole session.

Every test gets ``proxy(...)``, which builds an app with the test's options, points the
shared uvicorn at it and the app at the stub upstream. After every test, the API key must not
appear in any response (checked as each one arrives), log record or ``on_error`` payload.

``tool_chooser_proxy`` is for end-to-end tests of the browser demo: it starts the app and a
stub upstream that always chooses one tool, and returns the app's URL.

``tests/`` is put on ``sys.path`` so these tests use the shared generators
(``tests/generators.py``) when run alone too.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from stub_upstream import (
    KEY,
    MODEL,
    AppServer,
    Reply,
    StubUpstream,
    Switch,
    base_url,
    serve_tool_chooser,
)

from pysite_agent.server import ProxyApp, ProxyError, create_proxy_app

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[1]))

ORIGIN = "https://shop.example"
PROVIDERS = ("anthropic", "openai", "gemini")


def request_body(
    messages: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    instructions: str = "You are an assistant embedded in a web page.",
) -> dict[str, Any]:
    return {
        "version": 1,
        "instructions": instructions,
        "messages": messages
        if messages is not None
        else [{"role": "user", "content": "add two mugs to my cart"}],
        "tools": tools
        if tools is not None
        else [
            {
                "name": "add_to_cart",
                "description": "Add a product to the cart.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "product": {"type": "string"},
                        "quantity": {"type": "integer", "minimum": 1},
                    },
                    "required": ["product"],
                },
            }
        ],
    }


def assert_no_key(text: str | bytes, where: str) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    assert KEY not in text, f"the API key leaked into {where}"


@dataclass
class Proxy:
    """One app under test, served at ``url``."""

    app: ProxyApp
    url: str
    client: httpx.Client
    errors: list[ProxyError] = field(default_factory=list)

    def post(
        self,
        body: Any,
        *,
        origin: str | None = ORIGIN,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> httpx.Response:
        sent = {"content-type": "application/json", **(headers or {})}
        if origin is not None:
            sent["origin"] = origin
        if raw is not None:
            return self.client.post(self.url, content=raw, headers=sent)
        return self.client.post(self.url, json=body, headers=sent)


@pytest.fixture(scope="session")
def _stub() -> Iterator[StubUpstream]:
    with StubUpstream() as stub:
        yield stub


@pytest.fixture
def stub(_stub: StubUpstream) -> Iterator[StubUpstream]:
    with _stub.lock:
        _stub.requests.clear()
    _stub.closed_by_client.clear()
    _stub.closed_at = None
    _stub.stream_finished.clear()
    _stub.responder = lambda r: Reply(500, {"error": "no responder set"})
    yield _stub


@pytest.fixture(scope="session")
def _switch() -> Switch:
    return Switch()


@pytest.fixture(scope="session")
def server(_switch: Switch) -> Iterator[AppServer]:
    with AppServer(_switch) as app_server:
        yield app_server


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    def check(response: httpx.Response) -> None:
        response.read()
        assert_no_key(response.content, "a response body")
        assert_no_key(repr(list(response.headers.items())), "response headers")

    with httpx.Client(trust_env=False, timeout=20, event_hooks={"response": [check]}) as c:
        yield c


@pytest.fixture(autouse=True)
def _no_key_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        assert_no_key(record.getMessage(), f"a log line ({record.name})")
        assert_no_key(repr(record.__dict__), f"a log record ({record.name})")


@pytest.fixture
def proxy(
    server: AppServer, _switch: Switch, stub: StubUpstream, client: httpx.Client
) -> Iterator[Callable[..., Proxy]]:
    made: list[Proxy] = []

    def make(provider: str = "openai", **options: Any) -> Proxy:
        errors: list[ProxyError] = []
        settings: dict[str, Any] = {
            "provider": provider,
            "model": MODEL,
            "api_key": KEY,
            "allowed_origins": [ORIGIN],
            "base_url": base_url(stub, provider),
            "rate_limit": False,
            "on_error": errors.append,
        }
        settings.update(options)
        app = create_proxy_app(**settings)
        _switch.target = app
        made.append(Proxy(app, f"{server.url}/api/agent", client, errors))
        return made[-1]

    yield make
    for p in made:
        server.call(p.app.aclose())
        for error in p.errors:
            for text in (str(error), repr(error), error.detail, error.trace, error.message):
                assert_no_key(text, "an on_error payload")


@pytest.fixture
def tool_chooser_proxy() -> Iterator[Callable[..., Any]]:
    """``start(tool, arguments, allowed_origins=[...], provider="openai") -> proxy URL``.

    Starts the app and a stub upstream that always chooses ``tool`` (and answers "Done." once
    the tool's result comes back); both stop when the test ends.
    """
    stack: list[Any] = []

    def start(tool: str, arguments: dict[str, Any], **kwargs: Any) -> str:
        context = serve_tool_chooser(tool, arguments, **kwargs)
        url = context.__enter__()
        stack.append(context)
        return url

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)
