"""The proxy server: an ASGI application that keeps the model provider's key.

CPython only (``pip install 'pysite-agent[server]'``); nothing the browser loads imports it.
The browser's ``proxy()`` adapter POSTs protocol v1
(``pysite_agent/schemas/protocol-v1.schema.json``) to it; it answers with one reply or one error
body. See ``docs/server.md``.

Exception tree: see :mod:`pysite_agent.server._errors` (``ProxyError`` and its subclasses are
what ``on_error`` receives).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import httpx

from pysite_agent.server import _options
from pysite_agent.server._errors import InternalError, ProxyError, UpstreamError, UpstreamTimeout
from pysite_agent.server._options import (
    DEFAULT_RATE_LIMIT,
    ClientIp,
    OnError,
    client_ip_from_header,
    default_client_ip,
)
from pysite_agent.server._router import with_health
from pysite_agent.server.app import ProxyApp

__all__ = [
    "DEFAULT_RATE_LIMIT",
    "InternalError",
    "ProxyApp",
    "ProxyError",
    "UpstreamError",
    "UpstreamTimeout",
    "client_ip_from_header",
    "create_proxy_app",
    "default_client_ip",
    "with_health",
]


def create_proxy_app(
    *,
    provider: Literal["anthropic", "openai", "gemini"],
    model: str,
    api_key: str,
    allowed_origins: Iterable[str],
    base_url: str | None = None,
    max_tokens: int = 1024,
    max_messages: int = 40,
    max_tools: int = 32,
    max_body_bytes: int = 65_536,
    rate_limit: Mapping[str, int] | bool = DEFAULT_RATE_LIMIT,
    rate_limit_storage: str = "memory://",
    instructions: str | None = None,
    allow_client_instructions: bool = True,
    allow_headers: Iterable[str] = (),
    timeout_ms: int = 30_000,
    body_timeout_ms: int = 10_000,
    client_ip: ClientIp | None = None,
    http_client: httpx.AsyncClient | None = None,
    on_error: OnError | None = None,
) -> ProxyApp:
    """Build the proxy's ASGI application. Every option is checked here.

    Args:
        provider: ``"anthropic"``, ``"openai"`` or ``"gemini"``.
        model: the provider's model ID (no default: model IDs change).
        api_key: the provider key; read it from an environment variable or a secret store.
        allowed_origins: exact origins (``https://example.com``, ``http://localhost:8000``);
            no ``*``, no path (not even ``/``). Only these may call the endpoint from a browser.
        base_url: the API root, for OpenAI-compatible servers, gateways or regional
            endpoints (default: the provider's public API).
        max_tokens: output tokens per step.
        max_messages: messages per request (400 above).
        max_tools: tools per request (400 above).
        max_body_bytes: request body cap, checked on ``Content-Length`` and on the bytes read
            (chunked bodies are cut off as soon as they pass it; 413).
        rate_limit: ``{"window_ms": 60_000, "max": 20}`` per client bucket in a moving window
            (the default; the window counts whole seconds, rounded up), or ``False``.
        rate_limit_storage: where the counts live: ``memory://`` (one process, the default) or
            a shared store (``redis://host:6379/0``) so that several instances count together.
        instructions: added on the server before the browser's instructions.
        allow_client_instructions: ``False`` ignores the instructions the browser sends.
        allow_headers: extra request headers a browser may send (CORS).
        timeout_ms: upstream timeout for the whole call (504 after it).
        body_timeout_ms: the whole request body must arrive within this time once the app
            starts reading it (408 after it), so a client that stalls mid-body cannot hold a
            connection and a task open.
        client_ip: ``(scope) -> str | None`` naming the client's bucket. Default:
            ``cf-connecting-ip``, else the ASGI connection's address, else one shared bucket.
            ``X-Forwarded-For`` is never read unless you say so (:func:`client_ip_from_header`).
        http_client: an ``httpx.AsyncClient`` for upstream calls (tests, custom transports);
            the app never closes a client it was given.
        on_error: ``(error: ProxyError) -> None`` (or a coroutine function): receives upstream
            and unexpected errors for your logs. Clients get a generic message and at most the
            upstream status code.

    Raises:
        ValueError, TypeError: for a bad option (messages never contain the key).
    """
    options = _options.build(
        provider=provider,
        model=model,
        api_key=api_key,
        allowed_origins=allowed_origins,
        base_url=base_url,
        max_tokens=max_tokens,
        max_messages=max_messages,
        max_tools=max_tools,
        max_body_bytes=max_body_bytes,
        rate_limit=rate_limit,
        rate_limit_storage=rate_limit_storage,
        instructions=instructions,
        allow_client_instructions=allow_client_instructions,
        allow_headers=allow_headers,
        timeout_ms=timeout_ms,
        body_timeout_ms=body_timeout_ms,
        client_ip=client_ip,
        http_client=http_client,
        on_error=on_error,
    )
    return ProxyApp(options)
