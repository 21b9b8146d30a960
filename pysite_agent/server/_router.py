"""A two-route ASGI wrapper: the proxy at one path, a health check at another."""

from __future__ import annotations

from pysite_agent.server._types import ASGIApp, Receive, Scope, Send
from pysite_agent.server.app import error_response


def with_health(app: ASGIApp, *, path: str = "/", health_path: str = "/healthz") -> ASGIApp:
    """Serve ``app`` at ``path`` and ``GET``/``HEAD`` ``health_path`` -> ``200 ok``.

    The health answer is the same two bytes whatever the state: it reveals nothing (no
    version, provider, model or counts). Other paths get 404 with the protocol's error body.
    Lifespan events go to ``app``.
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
            status, body = 200, b"ok"
            headers = [(b"content-type", b"text/plain")]
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
