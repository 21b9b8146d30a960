"""The proxy as a plain ASGI application.

One endpoint, whatever its path: ``OPTIONS`` (CORS preflight) and ``POST`` (protocol v1). The
checks run cheapest first: origin (403), method (405), rate limit (429), declared size (413),
body read with a cap (413) and a deadline (408), JSON, protocol schema and caps (400; 413
``too-many-messages``); then one
upstream call (502, 504) and the reply (200), with the API key replaced by ``[redacted]`` if
the provider echoed it. Every answer but 200 and 204 carries the protocol's error body
``{"error": {"code", "message", "upstreamStatus"?, "limits"?}}``; the two "too large" answers
(``payload-too-large``, ``too-many-messages``) tell the caps in ``limits`` so that a client can
trim its history and retry.

A request whose ``Accept`` names ``text/event-stream`` gets the streaming reply instead, from
the provider's streaming API: the same checks, then, once the provider answered 2xx, ``200
text/event-stream`` with ``delta`` events as the text arrives and one ``reply`` or ``error``
event (protocol v1, ``streamEvent``). ``timeout_ms`` bounds the whole reply. When the client
goes away, the upstream request is closed at once: while the provider has not answered yet
(a slow first byte, streamed or not) as well as during the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import httpx

from pysite_agent.core.sse import SSEParser, format_event
from pysite_agent.server import _conversation, _jsonutil, _stream, _validate
from pysite_agent.server._client import ClientGone, read_body, unless_gone
from pysite_agent.server._errors import (
    InternalError,
    ProxyError,
    Redactor,
    UpstreamError,
    UpstreamTimeout,
    describe,
    retry_after_header,
)
from pysite_agent.server._options import Options
from pysite_agent.server._ratelimit import UNREACHABLE, Limiter, StoreProblem, client_bucket
from pysite_agent.server._transport import AiohttpTransport
from pysite_agent.server._types import Receive, Scope, Send
from pysite_agent.server.names import NameMap
from pysite_agent.server.providers import PROVIDERS, Prepared, Unusable
from pysite_agent.server.providers._base import BUSY_STATUSES, StreamFailed, busy_status

logger = logging.getLogger("pysite_agent.server")

MAX_UPSTREAM_BYTES: Final = 4 * 1024 * 1024
HEALTH_TIMEOUT_S: Final = 3.0
MAX_JSON_DEPTH: Final = 64
MAX_BUCKET_CHARS: Final = 64
SHARED_BUCKET: Final = "shared"

MESSAGES: Final[dict[str, str]] = {
    "forbidden-origin": "This origin is not allowed to use this endpoint.",
    "not-found": "Not found.",
    "method-not-allowed": "Use POST.",
    "request-timeout": "The request body did not arrive in time.",
    "upstream-error": "The model provider returned an error.",
    "upstream-busy": "The model provider is busy; try again in a moment.",
    "upstream-unreachable": "The model provider could not be reached.",
    "upstream-timeout": "The model provider did not answer in time.",
    "internal-error": "Internal error.",
}

Headers = list[tuple[bytes, bytes]]

# Sent upstream with every request the app's own client makes (a passed client sends its own).
_UPSTREAM_HEADERS: Final[dict[str, str]] = {
    "accept": "application/json",
    "user-agent": "pysite-agent",
}


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: Headers = field(default_factory=list)
    code: str | None = None
    # A streaming reply: writes the body events (the response start is sent before).
    stream: Callable[[Send, Receive, Outcome], Awaitable[None]] | None = None


@dataclass
class Outcome:
    """What the request's log line says."""

    status: int = 0
    code: str | None = None
    upstream_status: int | None = None
    bucket: str = "-"


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def error_body(
    code: str,
    message: str,
    upstream_status: int | None = None,
    limits: dict[str, int] | None = None,
) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if upstream_status is not None:
        error["upstreamStatus"] = upstream_status
    if limits is not None:
        error["limits"] = limits
    return _jsonutil.dumps({"error": error})


def error_response(
    status: int,
    code: str,
    message: str | None = None,
    upstream_status: int | None = None,
    limits: dict[str, int] | None = None,
) -> Response:
    body = error_body(code, message or MESSAGES[code], upstream_status, limits)
    return Response(status, body, [(b"content-type", b"application/json")], code)


def caps(options: Options) -> dict[str, int]:
    """The caps a client trims to, as protocol v1's error body tells them (``limits``)."""
    return {
        "maxMessages": options.max_messages,
        "maxBodyBytes": options.max_body_bytes,
        "maxTools": options.max_tools,
    }


class ProxyApp:
    """The ASGI application :func:`pysite_agent.server.create_proxy_app` returns."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self._provider = PROVIDERS[options.provider]
        self._limiter = Limiter(options.rate_limit) if options.rate_limit else None
        self._client = options.http_client
        self._owns_client = options.http_client is None
        self._transport: AiohttpTransport | None = None
        self._timeouts = httpx.Timeout(options.timeout_s).as_dict()
        self._url: tuple[str, httpx.URL] | None = None
        self._redact = Redactor(options.api_key)
        # The key as it appears inside a serialized JSON string (quotes and backslashes
        # escaped), to find it in a reply with one substring search.
        self._key_json = _jsonutil.dumps(options.api_key)[1:-1]
        self._origins = {o.encode("ascii") for o in options.allowed_origins}
        self._preflight_headers: Headers = [
            (b"access-control-allow-methods", b"POST, OPTIONS"),
            (b"access-control-allow-headers", ", ".join(options.allow_headers).encode("ascii")),
            (b"access-control-max-age", b"600"),
        ]

    def __repr__(self) -> str:
        o = self._options
        return f"ProxyApp(provider={o.provider!r}, model={o.model!r})"

    async def aclose(self) -> None:
        """Close the HTTP client the app made itself (not one passed as ``http_client``) and
        the rate-limit store's connections. Runs on the ASGI lifespan's shutdown."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
        if self._limiter is not None:
            await self._limiter.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        outcome = Outcome()
        try:
            response = await self._handle(scope, receive, outcome)
        except ClientGone:
            outcome.status = 499
            self._log(scope, outcome, started)
            return
        except Exception as exc:  # noqa: BLE001 - any bug becomes a generic 500
            response = await self._internal(exc)
        outcome.status = response.status
        outcome.code = response.code
        if response.stream is not None:
            await self._send_stream(send, receive, response, outcome)
            self._log(scope, outcome, started)
            return
        # Logged before the answer leaves, so the line exists once the client has its answer.
        self._log(scope, outcome, started)
        await self._send(send, response)

    async def _report_internal(self, message: str, exc: Exception) -> None:
        """Hand an unexpected error to ``on_error`` as an :class:`InternalError` (key redacted)."""
        detail, trace = describe(exc, self._redact)
        await self._report(
            InternalError(
                message,
                provider=self._options.provider,
                status=500,
                code="internal-error",
                detail=detail,
                trace=trace,
            )
        )

    async def _internal(self, exc: Exception) -> Response:
        await self._report_internal("unexpected error while handling a request", exc)
        return error_response(500, "internal-error")

    async def check_store(self) -> str | None:
        """Check the rate-limit store (run at the ASGI lifespan's start-up). Returns ``None``
        when it answers (or there is no rate limit), else a message that names the problem
        and the store's scheme, e.g. ``"rate-limit store unreachable: the 'redis' store
        (ConnectionError)"``; that message is also logged."""
        if self._limiter is None:
            return None
        try:
            await self._limiter.check()
        except StoreProblem as exc:
            logger.error(json.dumps({"event": "rate-limit-store", "problem": str(exc)}))
            return str(exc)
        return None

    async def health(self) -> tuple[bool, dict[str, str]]:
        """The instance's state, for a health route (:func:`with_health`).

        Returns ``(ready, body)`` with ``body`` = ``{"status": "ok" | "unavailable",
        "rateLimitStore": "ok" | "off" | "unreachable" | "error"}``: not ready while the
        rate-limit store does not answer within :data:`HEALTH_TIMEOUT_S` seconds (requests then
        fail closed with 500 ``internal-error``). Nothing else is revealed (no version,
        provider, model, store address or counts).
        """
        if self._limiter is None:
            return True, {"status": "ok", "rateLimitStore": "off"}
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                await self._limiter.check()
        except StoreProblem as exc:
            state = "unreachable" if exc.kind == UNREACHABLE else "error"
        except TimeoutError:
            state = "unreachable"
        else:
            return True, {"status": "ok", "rateLimitStore": "ok"}
        return False, {"status": "unavailable", "rateLimitStore": state}

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                problem = await self.check_store()
                if problem is not None:  # fail fast: no request could be counted
                    await send({"type": "lifespan.startup.failed", "message": problem})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @staticmethod
    async def _send(send: Send, response: Response) -> None:
        headers = [
            *response.headers,
            (b"content-length", str(len(response.body)).encode("ascii")),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
        ]
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})

    def _log(self, scope: Scope, outcome: Outcome, started: float) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        record: dict[str, Any] = {
            "event": "request",
            "method": scope.get("method", ""),
            "status": outcome.status,
            "provider": self._options.provider,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            "client": outcome.bucket,
        }
        if outcome.code:
            record["code"] = outcome.code
        if outcome.upstream_status is not None:
            record["upstream_status"] = outcome.upstream_status
        logger.info(self._redact(json.dumps(record)), extra={"proxy": record})

    async def _report(self, error: ProxyError) -> None:
        if self._options.on_error is None:
            logger.warning(
                self._redact(
                    json.dumps(
                        {
                            "event": "error",
                            "kind": type(error).__name__,
                            "message": error.message,
                            "status": error.status,
                            "upstream_status": error.upstream_status,
                            "provider": error.provider,
                        }
                    )
                )
            )
            return
        try:
            result = self._options.on_error(error)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # noqa: BLE001 - a broken hook must not break the answer
            logger.warning(json.dumps({"event": "on_error-failed", "type": type(exc).__name__}))

    # The request, step by step.

    async def _handle(self, scope: Scope, receive: Receive, outcome: Outcome) -> Response:
        origins = [v for k, v in scope.get("headers", ()) if k == b"origin"]
        if len(origins) != 1 or origins[0] not in self._origins:
            response = error_response(403, "forbidden-origin")
            response.headers.append((b"vary", b"origin"))
            return response
        cors: Headers = [
            (b"access-control-allow-origin", origins[0]),
            (b"vary", b"origin"),
        ]
        try:
            response = await self._allowed(scope, receive, outcome)
        except _Refused as refused:
            response = refused.response
        except ClientGone:
            raise
        except Exception as exc:  # noqa: BLE001 - a 500 the page can read (CORS headers)
            response = await self._internal(exc)
        response.headers.extend(cors)
        return response

    async def _allowed(self, scope: Scope, receive: Receive, outcome: Outcome) -> Response:
        method = scope.get("method", "")
        if method == "OPTIONS":
            return Response(204, b"", list(self._preflight_headers))
        if method != "POST":
            response = error_response(405, "method-not-allowed")
            response.headers.append((b"allow", b"POST, OPTIONS"))
            return response
        o = self._options
        address = o.client_ip(scope)
        bucket = (client_bucket(address) if address else SHARED_BUCKET)[:MAX_BUCKET_CHARS]
        outcome.bucket = bucket
        if self._limiter is not None:
            decision = await self._limit(bucket)
            if not decision.allowed:
                response = error_response(
                    429,
                    "rate-limited",
                    f"Too many requests. Try again in {decision.retry_after_s} seconds.",
                )
                response.headers += [
                    (b"retry-after", str(decision.retry_after_s).encode("ascii")),
                    (b"access-control-expose-headers", b"retry-after"),
                ]
                return response
        body = await self._body(scope, receive)
        prepared = self._prepare(body)
        if _stream.wants_stream(scope):
            return await unless_gone(self._open_stream(prepared, outcome), receive)
        reply = await unless_gone(self._upstream(prepared, outcome), receive)
        return Response(200, self._serialize(reply), [(b"content-type", b"application/json")])

    def _serialize(self, reply: dict[str, Any]) -> bytes:
        """The reply's JSON, with the API key replaced wherever the provider echoed it.

        The check is one substring search of the serialized reply for the key as it appears
        inside a JSON string (complete: every string containing the key serializes to text
        containing that form); only on a hit is the reply walked and every string replaced.
        """
        body = _jsonutil.dumps(reply)
        if self._key_json not in body:
            return body
        logger.warning(json.dumps({"event": "key-in-reply", "provider": self._options.provider}))
        body = _jsonutil.dumps(_redact_strings(reply, self._redact))
        if self._key_json in body:  # cannot happen; fail closed if it ever does
            raise RuntimeError("the reply still contains the API key after redaction")
        return body

    async def _limit(self, bucket: str) -> Any:
        assert self._limiter is not None
        try:
            return await self._limiter.hit(bucket)
        except Exception as exc:  # noqa: BLE001 - fail closed on any store error
            problem = self._limiter.problem(exc)
            detail, trace = describe(exc, self._redact)
            await self._report(
                InternalError(
                    problem.kind,  # "rate-limit store unreachable" / "rate-limit store error"
                    provider=self._options.provider,
                    status=500,
                    code="internal-error",
                    detail=detail,
                    trace=trace,
                )
            )
            raise _Refused(error_response(500, "internal-error")) from None

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        cap = self._options.max_body_bytes
        too_large = error_response(
            413,
            "payload-too-large",
            f"The request body is larger than {cap} bytes.",
            limits=caps(self._options),
        )
        lengths = [v for k, v in scope.get("headers", ()) if k == b"content-length"]
        if lengths:
            if len(lengths) > 1 or not lengths[0].isdigit() or len(lengths[0]) > 18:
                raise _Refused(error_response(400, "bad-request", "Bad Content-Length."))
            if int(lengths[0]) > cap:
                raise _Refused(too_large)
        timeout_s = self._options.body_timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                body = await read_body(receive, cap)
        except TimeoutError:
            response = error_response(
                408,
                "request-timeout",
                f"The request body did not arrive within {round(timeout_s * 1000)} ms.",
            )
            # The rest of the body may still come: the connection cannot be reused.
            response.headers.append((b"connection", b"close"))
            raise _Refused(response) from None
        if body is None:
            raise _Refused(too_large)
        return body

    def _prepare(self, body: bytes) -> Prepared:
        o = self._options

        def bad(message: str) -> _Refused:
            return _Refused(error_response(400, "bad-request", message[:500]))

        try:
            data = _jsonutil.read_body(body, MAX_JSON_DEPTH)
        except ValueError as exc:
            raise bad(str(exc)) from None
        found = _validate.request_problems(data)
        if found:
            raise bad("The request does not follow protocol v1: " + "; ".join(found[:3]))
        if len(data["messages"]) > o.max_messages:
            message = f"Too many messages (at most {o.max_messages})."
            too_many = error_response(413, "too-many-messages", message, limits=caps(o))
            raise _Refused(too_many)
        if len(data["tools"]) > o.max_tools:
            raise bad(f"Too many tools (at most {o.max_tools}).")
        tool_names = [t["name"] for t in data["tools"]]
        if len(set(tool_names)) != len(tool_names):
            raise bad("Two tools have the same name.")
        try:
            items = _conversation.normalize(data["messages"], with_tools=bool(tool_names))
        except _conversation.NoUserMessage:
            raise bad("The conversation needs a non-blank user message.") from None
        history = [
            i.name for i in items if isinstance(i, _conversation.Call | _conversation.Result)
        ]
        return Prepared(
            model=o.model,
            max_tokens=o.max_tokens,
            instructions=_conversation.instructions(
                o.instructions, data["instructions"], o.allow_client_instructions
            ),
            items=items,
            tools=_conversation.provider_tools(data["tools"]),
            names=NameMap(self._provider.name_rule, [*tool_names, *history]),
        )

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._transport = AiohttpTransport(max_connections=256)
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=httpx.Timeout(self._options.timeout_s),
                follow_redirects=False,
            )
        return self._client

    async def _open(self, url: str, headers: dict[str, str], content: bytes) -> httpx.Response:
        """POST upstream; the response comes back with its body still to read (close it).

        With the app's own client the request goes straight to its transport
        (:class:`~pysite_agent.server._transport.AiohttpTransport`): no cookie jar (a
        provider's cookies are never kept, nor sent with another visitor's request), no
        redirects, no auth flow, no event hooks, the URL parsed once, and HTTP parsed in C
        (``benchmarks/proxy_server.py``). A client passed as ``http_client`` is used as it is.
        """
        client = self._http_client()
        if self._transport is None or not self._owns_client:
            request = client.build_request("POST", url, headers=headers, content=content)
            return await client.send(request, stream=True)
        if self._url is None or self._url[0] != url:
            self._url = (url, httpx.URL(url))
        request = httpx.Request(
            "POST",
            self._url[1],
            headers={**_UPSTREAM_HEADERS, **headers},
            content=content,
            extensions={"timeout": self._timeouts},
        )
        response = await self._transport.handle_async_request(request)
        response.request = request
        return response

    @contextlib.asynccontextmanager
    async def _post(
        self, url: str, headers: dict[str, str], content: bytes
    ) -> AsyncIterator[httpx.Response]:
        """:meth:`_open` for an ``async with`` block that reads the body; closed after it."""
        response = await self._open(url, headers, content)
        try:
            yield response
        finally:
            await response.aclose()

    async def _upstream(self, prepared: Prepared, outcome: Outcome) -> dict[str, Any]:
        o = self._options
        request = self._provider.build(prepared, o.base_url, o.api_key)
        status: int | None = None
        retry_after: bytes | None = None
        try:
            async with asyncio.timeout(o.timeout_s):
                async with self._post(
                    request.url, request.headers, _jsonutil.dumps(request.body)
                ) as upstream:
                    status = upstream.status_code
                    outcome.upstream_status = status
                    retry_after = retry_after_header(upstream.headers.get("retry-after", ""))
                    raw = bytearray()
                    async for chunk in upstream.aiter_bytes():
                        raw += chunk
                        if len(raw) > MAX_UPSTREAM_BYTES:
                            raise _TooLarge
                    raw_bytes = bytes(raw)
        except (TimeoutError, httpx.TimeoutException) as exc:
            await self._fail(UpstreamTimeout, 504, "upstream-timeout", status, exc)
        except _TooLarge as exc:
            await self._fail(UpstreamError, 502, "upstream-error", status, exc)
        except httpx.HTTPError as exc:
            code = "upstream-error" if status is not None else "upstream-unreachable"
            await self._fail(UpstreamError, 502, code, status, exc)
        assert status is not None
        if not 200 <= status < 300:
            text = raw_bytes[:2000].decode("utf-8", "replace")
            await self._fail(
                UpstreamError,
                502,
                "upstream-error",
                status,
                None,
                detail=text,
                retry_after=retry_after,
            )
        try:
            data = _jsonutil.loads(raw_bytes)
            busy = busy_status(data)  # a gateway's 200 whose body is a rate-limit error
            if busy is not None:
                detail = raw_bytes[:2000].decode("utf-8", "replace")
                await self._fail(UpstreamError, 502, "upstream-error", busy, None, detail=detail)
            return self._provider.parse(data, prepared.names)
        except ValueError as exc:
            await self._fail(
                UpstreamError,
                502,
                "upstream-error",
                status,
                exc,
                message="The model provider's reply could not be read.",
            )
        except Unusable as exc:
            await self._fail(
                UpstreamError,
                502,
                "upstream-error",
                status,
                None,
                message=str(exc),
                detail=exc.detail,
            )

    async def _fail(
        self,
        kind: type[ProxyError],
        http_status: int,
        code: str,
        upstream_status: int | None,
        exc: BaseException | None,
        *,
        message: str | None = None,
        detail: str = "",
        retry_after: bytes | None = None,
    ) -> NoReturn:
        """Report an upstream failure to ``on_error``, then refuse the request."""
        wire_code = "upstream-error" if code == "upstream-unreachable" else code
        if message is None and code == "upstream-error" and upstream_status in BUSY_STATUSES:
            message = MESSAGES["upstream-busy"]
        client_message = message or MESSAGES[code]
        trace = ""
        if exc is not None:
            detail, trace = describe(exc, self._redact)
        await self._report(
            kind(
                client_message,
                provider=self._options.provider,
                status=http_status,
                code=wire_code,
                upstream_status=upstream_status,
                detail=self._redact(detail)[:2000],
                trace=trace,
            )
        )
        response = error_response(http_status, wire_code, client_message, upstream_status)
        if retry_after is not None and upstream_status in BUSY_STATUSES:
            response.headers += [
                (b"retry-after", retry_after),
                (b"access-control-expose-headers", b"retry-after"),
            ]
        raise _Refused(response)

    # Streaming replies (protocol v1, streamEvent).

    async def _open_stream(self, prepared: Prepared, outcome: Outcome) -> Response:
        """Send the provider's streaming request and wait for its status.

        A failure before the provider answers 2xx is refused as in :meth:`_upstream` (an
        ordinary error answer); after that, the reply is the stream :meth:`_pump` writes.
        """
        o = self._options
        request = self._provider.build_stream(prepared, o.base_url, o.api_key)
        deadline = asyncio.get_running_loop().time() + o.timeout_s
        status: int | None = None
        upstream: httpx.Response | None = None
        try:
            async with asyncio.timeout_at(deadline):
                upstream = await self._open(
                    request.url,
                    {**request.headers, "accept": "text/event-stream"},
                    _jsonutil.dumps(request.body),
                )
                status = upstream.status_code
                outcome.upstream_status = status
                if not 200 <= status < 300:
                    raw = bytearray()
                    async for chunk in upstream.aiter_bytes():
                        raw += chunk
                        if len(raw) > 2000:
                            break
                    retry_after = retry_after_header(upstream.headers.get("retry-after", ""))
                    await upstream.aclose()
                    await self._fail(
                        UpstreamError,
                        502,
                        "upstream-error",
                        status,
                        None,
                        detail=bytes(raw[:2000]).decode("utf-8", "replace"),
                        retry_after=retry_after,
                    )
        except _Refused:
            raise
        except BaseException as exc:
            if upstream is not None:
                await upstream.aclose()
            if isinstance(exc, TimeoutError | httpx.TimeoutException):
                await self._fail(UpstreamTimeout, 504, "upstream-timeout", status, exc)
            if isinstance(exc, httpx.HTTPError):
                code = "upstream-error" if status is not None else "upstream-unreachable"
                await self._fail(UpstreamError, 502, code, status, exc)
            raise
        opened = upstream

        async def stream(send: Send, receive: Receive, outcome: Outcome) -> None:
            await self._pump(opened, prepared, deadline, send, receive, outcome)

        headers: Headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"x-accel-buffering", b"no"),
        ]
        return Response(200, b"", headers, None, stream)

    async def _send_stream(
        self, send: Send, receive: Receive, response: Response, outcome: Outcome
    ) -> None:
        assert response.stream is not None
        headers = [
            *response.headers,
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await response.stream(send, receive, outcome)

    async def _pump(
        self,
        upstream: httpx.Response,
        prepared: Prepared,
        deadline: float,
        send: Send,
        receive: Receive,
        outcome: Outcome,
    ) -> None:
        """Relay the provider's stream as protocol v1 events until the reply, an error or the
        client's disconnect (then the upstream request is closed at once)."""
        gone = False

        async def write(body: bytes, more: bool = True) -> None:
            nonlocal gone
            if gone:
                return
            try:
                await send({"type": "http.response.body", "body": body, "more_body": more})
            except Exception:  # noqa: BLE001 - the client went away mid-write
                gone = True

        async def relay() -> None:
            status = upstream.status_code
            guard = _stream.KeyGuard(self._options.api_key)
            reader = self._provider.stream_reader()
            parser = SSEParser()
            size = 0
            # A compatible server that ignores "stream": true answers one JSON reply.
            whole = bytearray() if _is_json(upstream.headers.get("content-type", "")) else None
            try:
                async with asyncio.timeout_at(deadline):
                    async for chunk in upstream.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_UPSTREAM_BYTES:
                            raise _TooLarge
                        if whole is not None:
                            whole += chunk
                            continue
                        for sse in parser.feed_bytes(chunk):
                            for text in reader.feed(sse):
                                safe = guard.feed(text)
                                if safe:
                                    await write(_stream.event("delta", {"text": safe}))
                if whole is not None:
                    reply = self._provider.parse(_jsonutil.loads(bytes(whole)), prepared.names)
                else:
                    reply = reader.reply(prepared.names)
                tail = guard.flush()
                if tail:
                    await write(_stream.event("delta", {"text": tail}))
                body = format_event("reply", self._serialize(reply).decode("utf-8"))
            except (TimeoutError, httpx.TimeoutException) as exc:
                body = await self._stream_error(
                    outcome, UpstreamTimeout, "upstream-timeout", status, exc
                )
            except ValueError as exc:  # a JSON reply that is not JSON
                body = await self._stream_error(
                    outcome,
                    UpstreamError,
                    "upstream-error",
                    status,
                    exc,
                    message="The model provider's reply could not be read.",
                )
            except (_TooLarge, httpx.HTTPError) as exc:
                body = await self._stream_error(
                    outcome, UpstreamError, "upstream-error", status, exc
                )
            except StreamFailed as exc:
                busy = exc.busy
                body = await self._stream_error(
                    outcome,
                    UpstreamError,
                    "upstream-error",
                    status,
                    None,
                    exc.detail,
                    MESSAGES["upstream-busy"] if busy else str(exc),
                    busy=busy,
                )
            except Unusable as exc:
                body = await self._stream_error(
                    outcome, UpstreamError, "upstream-error", status, None, exc.detail, str(exc)
                )
            except Exception as exc:  # noqa: BLE001 - the stream still ends with an error event
                await self._report_internal("unexpected error while streaming a reply", exc)
                body = _stream.event("error", {"error": _error_json("internal-error")})
                outcome.code = "internal-error"
            await write(body, more=False)

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        relaying = asyncio.ensure_future(relay())
        watching = asyncio.ensure_future(watch())
        try:
            await asyncio.wait({relaying, watching}, return_when=asyncio.FIRST_COMPLETED)
            if not relaying.done():
                outcome.status = 499  # the client went away: stop reading the provider
                relaying.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relaying
        finally:
            watching.cancel()
            relaying.cancel()
            await upstream.aclose()
        if gone:
            outcome.status = 499

    async def _stream_error(
        self,
        outcome: Outcome,
        kind: type[ProxyError],
        code: str,
        upstream_status: int,
        exc: BaseException | None,
        detail: str = "",
        message: str | None = None,
        *,
        busy: int | None = None,
    ) -> bytes:
        """Report a failure after the stream started; the ``error`` event to end it with
        (with ``upstreamStatus`` when the provider said it is busy, see :data:`BUSY_STATUSES`)."""
        outcome.code = code
        client_message = message or MESSAGES[code]
        trace = ""
        if exc is not None:
            detail, trace = describe(exc, self._redact)
        await self._report(
            kind(
                client_message,
                provider=self._options.provider,
                status=200,
                code=code,
                upstream_status=upstream_status,
                detail=self._redact(detail)[:2000],
                trace=trace,
            )
        )
        error: dict[str, Any] = {"code": code, "message": client_message}
        if busy is not None:
            error["upstreamStatus"] = busy
        return _stream.event("error", {"error": error})


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _error_json(code: str) -> dict[str, str]:
    return {"code": code, "message": MESSAGES[code]}


def _redact_strings(value: Any, redact: Redactor) -> Any:
    """A copy of a JSON value with ``redact`` applied to every string, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): _redact_strings(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_strings(v, redact) for v in value]
    return value


class _TooLarge(Exception):
    def __str__(self) -> str:
        return f"the upstream reply is larger than {MAX_UPSTREAM_BYTES} bytes"
