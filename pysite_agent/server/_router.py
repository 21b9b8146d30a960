"""A two-route ASGI wrapper: the proxy at one path, a health check at another."""

from __future__ import annotations

import json

from pysite_agent.server._types import ASGIApp, Receive, Scope, Send
from pysite_agent.server.app import error_response


def with_health(app: ASGIApp, *, path: str = "/", health_path: str = "/healthz") -> ASGIApp:
    """Serve ``app`` at ``path`` and its health at ``GET``/``HEAD`` ``health_path``.

    For the proxy app (:meth:`ProxyApp.health`): ``200 {"status": "ok", "rateLimitStore":
    "ok"}`` (``"off"`` without a rate limit), or ``503 {"status": "unavailable",
    "rateLimitStore": "unreachable"}`` (or ``"error"``) while the rate-limit store does not
    answer, so a load balancer stops sending requests that would fail closed. It reveals
    nothing else (no version, provider, model, store address or counts). For another app:
    ``200 ok``. Other paths get 404 with the protocol's error body. Lifespan events go to
    ``app``.
    """
    for p in (path, health_path):
        if not p.startswith("/"):
            raise ValueError(f"paths start with '/': {p!r}")
    if path == health_path:
        raise ValueError("the proxy and the health check need different paths")

    async def router(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        where = scope.get("path", "")
        if where == path:
            await app(scope, receive, send)
            return
        if where == health_path and scope.get("method") in ("GET", "HEAD"):
            health = getattr(app, "health", None)
            if health is None:
                status, body = 200, b"ok"
                headers = [(b"content-type", b"text/plain")]
            else:
                ready, state = await health()
                status, body = (
                    (200 if ready else 503),
                    json.dumps(state, separators=(",", ":")).encode(),
                )
                headers = [(b"content-type", b"application/json")]
        else:
            response = error_response(404, "not-found")
            status, body, headers = response.status, response.body, response.headers
        headers = [
            *headers,
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if scope.get("method") == "HEAD":
            body = b""
        await send({"type": "http.response.body", "body": body})

    return router
