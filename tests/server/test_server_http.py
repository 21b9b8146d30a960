"""The proxy over real HTTP: statuses, origins and CORS, body caps, upstream failures, logs."""

from __future__ import annotations

import json
import logging
import socket
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
    openai_error,
    text_reply,
    tool_reply,
)

from pysite_agent.core import wire
from pysite_agent.server import InternalError, UpstreamError, UpstreamTimeout


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert wire.problems("protocol-v1", body, "errorBody") == []
    error: dict[str, Any] = body["error"]
    return error


def raw_http(port: int, data: bytes, *, read_timeout: float = 5) -> bytes:
    """Send bytes to 127.0.0.1:port and read the answer until the server closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as sock:
        sock.sendall(data)
        return _read_response(sock)


def _read_response(sock: socket.socket) -> bytes:
    chunks = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        chunks += chunk
        head, _, body = chunks.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:") and len(body) >= int(
                line.split(b":")[1]
            ):
                return chunks
    return chunks


# Replies: 200 with one reply in each provider's shape.


@pytest.mark.parametrize("provider", PROVIDERS)
def test_200_tool_reply_and_answer(proxy: Any, stub: StubUpstream, provider: str) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, tool_reply(provider, "add_to_cart", {"product": "mug"}))
    response = p.post(request_body())
    assert response.status_code == 200
    reply = response.json()
    assert wire.problems("protocol-v1", reply, "reply") == []
    assert reply["type"] == "tool"
    assert reply["name"] == "add_to_cart"
    assert reply["arguments"] == {"product": "mug"}
    assert reply["id"]
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert response.headers["vary"].lower() == "origin"
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"

    stub.responder = lambda r: Reply(200, text_reply(provider, "Two mugs are in your cart."))
    response = p.post(request_body())
    assert response.json() == {"type": "answer", "text": "Two mugs are in your cart."}


# Origins and CORS.


@pytest.mark.parametrize(
    "origin",
    [
        "https://shop.example.evil.com",  # look-alike host
        "https://evil-shop.example",
        "https://shop.example.",  # trailing dot
        "https://shop.examplf",
        "http://shop.example",  # other scheme
        "https://shop.example:443",  # default port spelled out: browsers never send it
        "https://shop.example:8443",  # other port
        "https://shop.example/",  # trailing slash
        "https://SHOP.example",  # case: browsers send lower case only
        "HTTPS://shop.example",
        "null",  # sandboxed iframes, file: pages
        "",
        "https://shop.example, https://evil.com",
        "*",
    ],
)
def test_403_origins_that_are_not_allowed(proxy: Any, stub: StubUpstream, origin: str) -> None:
    p: Proxy = proxy()
    response = p.post(request_body(), origin=origin)
    assert response.status_code == 403
    assert error_of(response)["code"] == "forbidden-origin"
    assert not any(h.startswith("access-control-") for h in response.headers)
    assert stub.requests == []


def test_403_missing_origin_and_preflight_from_other_origin(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy()
    response = p.post(request_body(), origin=None)
    assert response.status_code == 403
    assert not any(h.startswith("access-control-") for h in response.headers)
    response = p.client.options(
        p.url, headers={"origin": "https://evil.example", "access-control-request-method": "POST"}
    )
    assert response.status_code == 403
    assert not any(h.startswith("access-control-") for h in response.headers)


def test_403_two_origin_headers(proxy: Any, server: Any) -> None:
    proxy()
    body = json.dumps(request_body()).encode()
    answer = raw_http(
        server.port,
        b"POST /api/agent HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: "
        + ORIGIN.encode()
        + b"\r\norigin: "
        + ORIGIN.encode()
        + b"\r\ncontent-type: application/json\r\n"
        + b"content-length: "
        + str(len(body)).encode()
        + b"\r\nconnection: close\r\n\r\n"
        + body,
    )
    assert answer.startswith(b"HTTP/1.1 403")


def test_allowed_origins_with_ports_and_ipv6(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy(
        allowed_origins=["http://localhost:8000", "https://Shop.Example:443", "http://[::1]:5173"]
    )
    stub.responder = lambda r: Reply(200, text_reply("openai", "hi"))
    for origin in ("http://localhost:8000", "https://shop.example", "http://[::1]:5173"):
        response = p.post(request_body(), origin=origin)
        assert response.status_code == 200, origin
        assert response.headers["access-control-allow-origin"] == origin
    for origin in ("http://localhost", "http://localhost:8001", "https://localhost:8000"):
        assert p.post(request_body(), origin=origin).status_code == 403


def test_204_preflight(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy(allow_headers=["X-Site-Token"])
    response = p.client.options(
        p.url,
        headers={
            "origin": ORIGIN,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-site-token",
        },
    )
    assert response.status_code == 204
    assert response.content == b""
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert response.headers["access-control-allow-methods"] == "POST, OPTIONS"
    allowed = {h.strip() for h in response.headers["access-control-allow-headers"].split(",")}
    assert allowed == {"content-type", "x-site-token"}
    assert response.headers["vary"].lower() == "origin"
    assert "access-control-allow-credentials" not in response.headers
    assert stub.requests == []


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_405_other_methods(proxy: Any, method: str) -> None:
    p: Proxy = proxy()
    response = p.client.request(method, p.url, headers={"origin": ORIGIN})
    assert response.status_code == 405
    assert error_of(response)["code"] == "method-not-allowed"
    assert response.headers["allow"] == "POST, OPTIONS"
    assert response.headers["access-control-allow-origin"] == ORIGIN


# 400: not JSON, not protocol v1, over the caps.


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b'{"version": 1,',
        b'{"version": 1, "instructions": "", "messages": [], "tools": [], "x": NaN}',
        b"\xff\xfe\x00",
    ],
)
def test_400_not_json(proxy: Any, stub: StubUpstream, raw: bytes) -> None:
    p: Proxy = proxy()
    response = p.post(None, raw=raw)
    assert response.status_code == 400
    assert error_of(response) == {"code": "bad-request", "message": "The body is not JSON."}
    assert stub.requests == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # Deeper than the parser follows, and deeper than the cap but parseable: the same answer.
        (b"[" * 5000 + b"]" * 5000, "The JSON is nested deeper than 64 levels."),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "The JSON is nested deeper than 64 levels."),
        (b"[" * 20_000, "The JSON is nested deeper than 64 levels."),
        (b"[" * 65 + b"]" * 65, "The JSON is nested deeper than 64 levels."),
        (b'{"n": 1' + b"0" * 5000 + b"}", "A number in the body has too many digits."),
    ],
    ids=["list-5000", "object-5000", "unclosed-20000", "list-65", "digits-5001"],
)
def test_400_names_why_json_is_refused(
    proxy: Any, stub: StubUpstream, raw: bytes, message: str
) -> None:
    p: Proxy = proxy()
    response = p.post(None, raw=raw)
    assert response.status_code == 400
    assert error_of(response) == {"code": "bad-request", "message": message}
    assert stub.requests == []


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "body",
    [
        {},
        [],
        "hello",
        {**request_body(), "version": 2},
        {**request_body(), "extra": True},
        {k: v for k, v in request_body().items() if k != "tools"},
        request_body(messages=[]),
        request_body(messages=[{"role": "system", "content": "x"}]),
        request_body(messages=[{"role": "user", "content": 5}]),
        request_body(tools=[{"name": "", "description": "", "inputSchema": {}}]),
        request_body(tools=[{"name": "x" * 129, "description": "", "inputSchema": {}}]),
        request_body(
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "tool", "toolCallId": "c", "name": "t", "content": "x"},
            ]
        ),  # a tool result without isError/untrusted
        request_body(messages=[{"role": "user", "content": "   "}]),  # no non-blank user text
        request_body(
            messages=[{"role": "assistant", "content": "Hello"}]
        ),  # no user message at all
        request_body(
            tools=[
                {"name": "t", "description": "a", "inputSchema": {}},
                {"name": "t", "description": "b", "inputSchema": {}},
            ]
        ),  # the same name twice
        request_body(
            tools=[
                {"name": "t", "description": "a", "inputSchema": {"type": "object", "x": _deep(70)}}
            ]
        ),  # nested too deeply
    ],
)
def test_400_not_protocol_v1(proxy: Any, stub: StubUpstream, body: Any) -> None:
    p: Proxy = proxy()
    response = p.post(body)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "bad-request"
    assert "upstreamStatus" not in error
    assert stub.requests == []


def test_413_max_messages_and_400_max_tools(proxy: Any, stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))
    p: Proxy = proxy(max_messages=3, max_tools=1)
    three = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    assert p.post(request_body(messages=three)).status_code == 200
    response = p.post(request_body(messages=[*three, {"role": "user", "content": "m4"}]))
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "too-many-messages"
    assert "at most 3" in error["message"]
    assert error["limits"] == {"maxMessages": 3, "maxBodyBytes": 65_536, "maxTools": 1}
    assert wire.problems("protocol-v1", response.json(), "errorBody") == []
    two_tools = [
        {"name": "a", "description": "", "inputSchema": {"type": "object"}},
        {"name": "b", "description": "", "inputSchema": {"type": "object"}},
    ]
    response = p.post(request_body(tools=two_tools))
    assert response.status_code == 400
    assert "at most 1" in error_of(response)["message"]
    assert len(stub.requests) == 1


# 413: the body cap, on the declared length and on the bytes read.


def test_413_content_length_over_the_cap(proxy: Any, stub: StubUpstream, server: Any) -> None:
    proxy(max_body_bytes=1000)
    started = time.monotonic()
    # Declares 10 MB and sends none of it: refused on the header alone, without waiting.
    answer = raw_http(
        server.port,
        b"POST /api/agent HTTP/1.1\r\nhost: x\r\norigin: "
        + ORIGIN.encode()
        + b"\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 413")
    assert time.monotonic() - started < 2
    assert b'"payload-too-large"' in answer
    assert b"access-control-allow-origin: " + ORIGIN.encode() in answer.lower()
    assert stub.requests == []


def test_413_at_the_cap_and_one_byte_over(proxy: Any, stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))
    body = json.dumps(request_body()).encode()
    p: Proxy = proxy(max_body_bytes=len(body))
    assert p.post(None, raw=body).status_code == 200
    response = p.post(None, raw=body + b" ")
    assert response.status_code == 413
    assert error_of(response)["limits"]["maxBodyBytes"] == len(body)
    assert wire.problems("protocol-v1", response.json(), "errorBody") == []


def test_413_chunked_upload_cut_off_as_soon_as_it_passes_the_cap(
    proxy: Any, stub: StubUpstream, server: Any
) -> None:
    proxy(max_body_bytes=4096)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/agent HTTP/1.1\r\nhost: x\r\norigin: "
            + ORIGIN.encode()
            + b"\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 1024
        for _ in range(5):  # 5 KiB: past the cap; the final 0-length chunk is never sent
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = _read_response(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"payload-too-large"' in answer
    assert stub.requests == []


def test_chunked_upload_under_the_cap_is_read(proxy: Any, stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))
    p: Proxy = proxy()
    body = json.dumps(request_body()).encode()

    def pieces() -> Any:
        for i in range(0, len(body), 50):
            yield body[i : i + 50]

    response = p.client.post(
        p.url, content=pieces(), headers={"origin": ORIGIN, "content-type": "application/json"}
    )
    assert response.status_code == 200


def test_400_bad_content_length(proxy: Any, server: Any) -> None:
    proxy()
    answer = raw_http(
        server.port,
        b"POST /api/agent HTTP/1.1\r\nhost: x\r\norigin: "
        + ORIGIN.encode()
        + b"\r\ncontent-length: 5\r\ncontent-length: 6\r\nconnection: close\r\n\r\nhello",
    )
    # uvicorn (h11) refuses conflicting lengths itself; either way, nothing reaches upstream.
    assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 413")) or answer == b""


# 408: a body that does not arrive in time.

STALLING_HEADS = {
    "content-length": b"content-length: 1000\r\n\r\n" + b'{"version": 1, "messa',
    "chunked": b"transfer-encoding: chunked\r\n\r\n" + b'15\r\n{"version": 1, "messa\r\n',
}


@pytest.mark.parametrize("framing", sorted(STALLING_HEADS))
def test_408_body_that_stalls_midway(
    proxy: Any, stub: StubUpstream, server: Any, caplog: pytest.LogCaptureFixture, framing: str
) -> None:
    proxy(body_timeout_ms=300)
    caplog.clear()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        # Part of a body under the cap, then nothing: the client stalls.
        sock.sendall(
            b"POST /api/agent HTTP/1.1\r\nhost: x\r\norigin: "
            + ORIGIN.encode()
            + b"\r\ncontent-type: application/json\r\n"
            + STALLING_HEADS[framing]
        )
        answer = _read_response(sock)
        elapsed = time.monotonic() - started
        # The server closes the connection: the rest of the body cannot be read as a request.
        sock.settimeout(5)
        try:
            rest = sock.recv(1)
        except ConnectionResetError:
            rest = b""
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 0.25 <= elapsed < 4
    assert rest == b""
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert b"access-control-allow-origin: " + ORIGIN.encode() in head.lower()
    error = json.loads(body)["error"]
    assert wire.problems("protocol-v1", {"error": error}, "errorBody") == []
    assert error == {
        "code": "request-timeout",
        "message": "The request body did not arrive within 300 ms.",
    }
    assert stub.requests == []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the log line is written before the answer leaves
        lines = [r.getMessage() for r in caplog.records if r.name == "pysite_agent.server"]
        if lines:
            break
        time.sleep(0.02)
    [line] = lines
    assert json.loads(line)["status"] == 408
    assert json.loads(line)["code"] == "request-timeout"


def test_slow_body_within_the_body_timeout_is_read(proxy: Any, stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))
    p: Proxy = proxy(body_timeout_ms=2000)
    body = json.dumps(request_body()).encode()

    def pieces() -> Any:
        for i in range(0, len(body), len(body) // 4 + 1):
            time.sleep(0.05)
            yield body[i : i + len(body) // 4 + 1]

    response = p.client.post(
        p.url, content=pieces(), headers={"origin": ORIGIN, "content-type": "application/json"}
    )
    assert response.status_code == 200


# 502 and 504: upstream failures, with the upstream status only.


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 503, 529])
def test_502_upstream_error_status(
    proxy: Any, stub: StubUpstream, provider: str, status: int
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(status, error_reply(provider, status))
    response = p.post(request_body())
    assert response.status_code == 502
    error = error_of(response)
    busy = status in (429, 503, 529)
    assert error == {
        "code": "upstream-error",
        "message": "The model provider is busy; try again in a moment."
        if busy
        else "The model provider returned an error.",
        "upstreamStatus": status,
    }
    assert "upstream trouble" not in response.text
    [reported] = p.errors
    assert isinstance(reported, UpstreamError)
    assert reported.upstream_status == status
    assert reported.status == 502
    assert "upstream trouble" in reported.detail


def test_502_upstream_429_passes_retry_after(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy()
    stub.responder = lambda r: Reply(429, openai_error("slow down"), {"retry-after": "7"})
    response = p.post(request_body())
    assert response.status_code == 502
    assert error_of(response)["upstreamStatus"] == 429
    assert response.headers["retry-after"] == "7"
    assert "retry-after" in response.headers["access-control-expose-headers"]
    stub.responder = lambda r: Reply(429, openai_error("slow"), {"retry-after": "Wed, 21 Oct"})
    assert "retry-after" not in p.post(request_body()).headers


def test_upstream_error_body_echoing_the_key_is_redacted(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy()
    stub.responder = lambda r: Reply(
        401, openai_error(f"Incorrect API key provided: {KEY}.", code="invalid_api_key")
    )
    response = p.post(request_body())
    assert response.status_code == 502
    [reported] = p.errors
    assert "Incorrect API key provided: [redacted]." in reported.detail


@pytest.mark.parametrize("provider", PROVIDERS)
def test_200_reply_echoing_the_key_is_redacted(
    proxy: Any, stub: StubUpstream, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, text_reply(provider, f"Your key is {KEY}, and {KEY}."))
    response = p.post(request_body())  # the client fixture fails on any response with the key
    assert response.status_code == 200
    assert response.json() == {
        "type": "answer",
        "text": "Your key is [redacted], and [redacted].",
    }
    stub.responder = lambda r: Reply(
        200,
        tool_reply(
            provider,
            "add_to_cart",
            {"product": f"key={KEY}", "quantity": 2, "notes": [{KEY: f"x{KEY}x"}]},
        ),
    )
    reply = p.post(request_body()).json()
    assert reply["type"] == "tool" and reply["name"] == "add_to_cart"
    assert reply["arguments"] == {
        "product": "key=[redacted]",
        "quantity": 2,
        "notes": [{"[redacted]": "x[redacted]x"}],
    }
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum('"key-in-reply"' in w for w in warnings) == 2
    # A reply without the key is passed on as it is.
    stub.responder = lambda r: Reply(200, text_reply(provider, "sk-test-KEY is not the key"))
    assert p.post(request_body()).json()["text"] == "sk-test-KEY is not the key"


def test_key_with_json_escapes_is_found_in_the_reply(proxy: Any, stub: StubUpstream) -> None:
    key = 'k\\ey"with-escapes'
    p: Proxy = proxy(api_key=key)
    stub.responder = lambda r: Reply(200, text_reply("openai", f"echo {key} echo"))
    response = p.post(request_body())
    assert response.json() == {"type": "answer", "text": "echo [redacted] echo"}
    assert key not in response.json()["text"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"{not json"),
        Reply(200, b""),
        Reply(200, b"<html>Bad gateway</html>", {"content-type": "text/html"}),
        Reply(200, b'{"x": NaN}'),
        Reply(200, b"[]"),
        Reply(200, b'{"unexpected": "shape"}'),
        Reply(200, b'{"content": "x", "choices": 5, "candidates": {}}'),
    ],
)
def test_502_unreadable_upstream_reply(
    proxy: Any, stub: StubUpstream, provider: str, reply: Reply
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: reply
    response = p.post(request_body())
    assert response.status_code == 502
    error = error_of(response)
    assert error["code"] == "upstream-error"
    assert error["upstreamStatus"] == 200
    [reported] = p.errors
    assert isinstance(reported, UpstreamError)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_502_truncated_upstream_body(proxy: Any, stub: StubUpstream, provider: str) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, tool_reply(provider, "add_to_cart", {}), truncate_to=40)
    response = p.post(request_body())
    assert response.status_code == 502
    assert error_of(response)["code"] == "upstream-error"
    assert isinstance(p.errors[0], UpstreamError)


def test_502_upstream_hangs_up_or_is_not_there(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy()
    stub.responder = lambda r: Reply(hang_up=True)
    response = p.post(request_body())
    assert response.status_code == 502
    assert error_of(response) == {
        "code": "upstream-error",
        "message": "The model provider could not be reached.",
    }
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    p = proxy(base_url=f"http://127.0.0.1:{port}/v1")
    response = p.post(request_body())
    assert response.status_code == 502
    assert "upstreamStatus" not in error_of(response)
    assert isinstance(p.errors[0], UpstreamError)
    assert "127.0.0.1" in p.errors[0].detail or p.errors[0].detail


@pytest.mark.parametrize("provider", PROVIDERS)
def test_504_upstream_timeout(proxy: Any, stub: StubUpstream, provider: str) -> None:
    p: Proxy = proxy(provider, timeout_ms=300)
    stub.responder = lambda r: Reply(200, text_reply(provider, "late"), delay_s=1.5)
    started = time.monotonic()
    response = p.post(request_body())
    elapsed = time.monotonic() - started
    assert response.status_code == 504
    assert error_of(response) == {
        "code": "upstream-timeout",
        "message": "The model provider did not answer in time.",
    }
    assert elapsed < 1.45  # cut off: the stub answers only after 1.5 s
    [reported] = p.errors
    assert isinstance(reported, UpstreamTimeout)
    if provider == "gemini":
        assert KEY not in reported.detail and "key=" not in reported.detail


def test_timeout_covers_a_slow_body_not_only_the_first_byte(proxy: Any, stub: StubUpstream) -> None:
    # A server that answers headers at once and then dribbles is still cut at timeout_ms.
    p: Proxy = proxy(timeout_ms=300)
    stub.responder = lambda r: Reply(200, text_reply("openai", "x"), delay_s=0.6)
    assert p.post(request_body()).status_code == 504


# 500: unexpected errors and a broken rate-limit store.


def test_500_unexpected_error_is_generic_and_reported(proxy: Any, stub: StubUpstream) -> None:
    def broken(scope: Any) -> str:
        raise RuntimeError(f"boom {KEY}")

    p: Proxy = proxy(client_ip=broken)
    response = p.post(request_body())
    assert response.status_code == 500
    assert error_of(response) == {"code": "internal-error", "message": "Internal error."}
    assert response.headers["access-control-allow-origin"] == ORIGIN  # readable by the page
    [reported] = p.errors
    assert isinstance(reported, InternalError)
    assert "boom [redacted]" in reported.detail
    assert "RuntimeError" in reported.trace


def test_on_error_may_be_async_and_may_fail(proxy: Any, stub: StubUpstream) -> None:
    seen: list[Any] = []

    async def hook(error: Any) -> None:
        seen.append(error)

    p: Proxy = proxy(on_error=hook)
    stub.responder = lambda r: Reply(500, openai_error("x"))
    assert p.post(request_body()).status_code == 502
    assert len(seen) == 1

    def failing(error: Any) -> None:
        raise ValueError("hook broke")

    p = proxy(on_error=failing)
    assert p.post(request_body()).status_code == 502


def test_without_on_error_errors_are_logged_without_detail(
    proxy: Any, stub: StubUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    p: Proxy = proxy(on_error=None)
    stub.responder = lambda r: Reply(500, openai_error(f"secret content {KEY}"))
    assert p.post(request_body()).status_code == 502
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings
    assert all("secret content" not in r.getMessage() for r in warnings)


# Logs: one structured line per request, never the key or the conversation.


def test_one_log_line_per_request(
    proxy: Any, stub: StubUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(200, text_reply("anthropic", "The answer is 42."))
    caplog.clear()
    secret_words = "my card number is 4111 1111 1111 1111"
    p.post(request_body(messages=[{"role": "user", "content": secret_words}]))
    p.post(request_body(), origin="https://evil.example")
    p.client.options(p.url, headers={"origin": ORIGIN})
    lines = [
        r for r in caplog.records if r.name == "pysite_agent.server" and "request" in r.getMessage()
    ]
    assert len(lines) == 3
    records = [json.loads(r.getMessage()) for r in lines]
    assert [r["status"] for r in records] == [200, 403, 204]
    first = records[0]
    assert first["provider"] == "anthropic"
    assert first["client"] == "127.0.0.1"
    assert first["upstream_status"] == 200
    assert isinstance(first["latency_ms"], float)
    assert records[1]["code"] == "forbidden-origin"
    for r in lines:
        assert "4111" not in r.getMessage()
        assert "The answer" not in r.getMessage()
        assert "add_to_cart" not in r.getMessage()


# Options at construction.


def test_construction_errors_never_contain_the_key() -> None:
    from pysite_agent.server import create_proxy_app

    base: dict[str, Any] = {
        "provider": "openai",
        "model": "m",
        "api_key": KEY,
        "allowed_origins": [ORIGIN],
    }
    cases: list[dict[str, Any]] = [
        {"provider": "other"},
        {"model": ""},
        {"model": "a b"},
        {"api_key": ""},
        {"api_key": KEY + "\n"},
        {"api_key": KEY + " x"},
        {"allowed_origins": []},
        {"allowed_origins": "https://a.example"},
        {"allowed_origins": ["*"]},
        {"allowed_origins": ["https://*.example.com"]},
        {"allowed_origins": ["null"]},
        {"allowed_origins": ["https://a.example/"]},
        {"allowed_origins": ["https://a.example/path"]},
        {"allowed_origins": ["https://a.example?x"]},
        {"allowed_origins": ["https://user@a.example"]},
        {"allowed_origins": ["ftp://a.example"]},
        {"allowed_origins": ["a.example"]},
        {"allowed_origins": ["https://a.example:99999"]},
        {"allowed_origins": ["https://a.example:"]},
        {"allowed_origins": ["https://bücher.example"]},
        {"allowed_origins": [5]},
        {"base_url": "ftp://x"},
        {"base_url": f"https://user:{KEY}@api.example"},
        {"max_tokens": 0},
        {"max_tokens": True},
        {"max_messages": "40"},
        {"max_body_bytes": -1},
        {"timeout_ms": 0},
        {"body_timeout_ms": 0},
        {"body_timeout_ms": 1.5},
        {"rate_limit": {"window_ms": 0, "max": 1}},
        {"rate_limit": {"windowMs": 1000, "max": 1}},
        {"rate_limit": {"window_ms": 1000, "max": 0}},
        {"rate_limit": 5},
        {"rate_limit_storage": "nowhere"},
        {"rate_limit_storage": f"unknownstore://:{KEY}@localhost"},
        {"allow_headers": ["bad header"]},
        {"allow_headers": "x-one"},
        {"client_ip": "cf-connecting-ip"},
        {"http_client": object()},
        {"on_error": "print"},
        {"instructions": 5},
        {"allow_client_instructions": "no"},
    ]
    for case in cases:
        with pytest.raises((ValueError, TypeError)) as info:
            create_proxy_app(**{**base, **case})
        assert KEY not in str(info.value), case
        assert KEY not in repr(info.value), case


def test_defaults_and_repr_do_not_show_the_key() -> None:
    from pysite_agent.server import create_proxy_app

    app = create_proxy_app(
        provider="gemini", model="gemini-x", api_key=KEY, allowed_origins=[ORIGIN]
    )
    assert KEY not in repr(app)
    assert KEY not in repr(app._options)
    options = app._options
    assert options.max_tokens == 1024
    assert options.max_messages == 40
    assert options.max_tools == 32
    assert options.max_body_bytes == 65_536
    assert options.timeout_s == 30
    assert options.body_timeout_s == 10
    assert options.rate_limit is not None
    assert (options.rate_limit.window_s, options.rate_limit.max) == (60, 20)
    assert options.allow_client_instructions is True
    assert options.base_url == "https://generativelanguage.googleapis.com/v1beta"


# The health route and unknown paths (the command line's router).


def test_health_route_reveals_nothing_and_other_paths_404(server: Any, _switch: Any) -> None:
    from pysite_agent.server import create_proxy_app, with_health

    app = create_proxy_app(provider="openai", model="gpt-x", api_key=KEY, allowed_origins=[ORIGIN])
    _switch.target = with_health(app, path="/api/agent")
    with httpx.Client(trust_env=False) as c:
        health = c.get(f"{server.url}/healthz")
        assert health.status_code == 200
        # The store's state and nothing else (no version, provider, model, address or counts).
        assert health.json() == {"status": "ok", "rateLimitStore": "ok"}
        assert health.headers["content-type"] == "application/json"
        assert set(health.headers) <= {
            "content-type",
            "content-length",
            "cache-control",
            "date",
            "server",
        }
        assert c.head(f"{server.url}/healthz").status_code == 200
        missing = c.get(f"{server.url}/elsewhere", headers={"origin": ORIGIN})
        assert missing.status_code == 404
        assert error_of(missing)["code"] == "not-found"
        assert c.post(f"{server.url}/healthz").status_code == 404
        assert c.get(f"{server.url}/api/agent", headers={"origin": ORIGIN}).status_code == 405
    server.call(app.aclose())
    off = create_proxy_app(
        provider="openai", model="gpt-x", api_key=KEY, allowed_origins=[ORIGIN], rate_limit=False
    )
    _switch.target = with_health(off, path="/api/agent")
    with httpx.Client(trust_env=False) as c:
        assert c.get(f"{server.url}/healthz").json() == {"status": "ok", "rateLimitStore": "off"}

    async def plain(scope: Any, receive: Any, send: Any) -> None:
        pass

    _switch.target = with_health(plain)  # any other ASGI app: "ok"
    with httpx.Client(trust_env=False) as c:
        assert c.get(f"{server.url}/healthz").content == b"ok"
    with pytest.raises(ValueError):
        with_health(app, path="/x", health_path="/x")
    with pytest.raises(ValueError):
        with_health(app, path="x")


def test_http_client_option_is_used_and_never_closed(
    proxy: Any, stub: StubUpstream, server: Any
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=text_reply("openai", "from the custom transport"))

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    p: Proxy = proxy(http_client=client)
    assert p.post(request_body()).json()["text"] == "from the custom transport"
    assert stub.requests == []
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    server.call(p.app.aclose())
    assert not client.is_closed
    server.call(client.aclose())


def test_client_that_disconnects_mid_body_is_logged_as_499(
    proxy: Any, stub: StubUpstream, server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    proxy()
    caplog.clear()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/agent HTTP/1.1\r\nhost: x\r\norigin: "
            + ORIGIN.encode()
            + b'\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"ver'
        )
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [r.getMessage() for r in caplog.records if r.name == "pysite_agent.server"]
        if any('"status": 499' in line for line in lines):
            break
        time.sleep(0.05)
    assert any('"status": 499' in line for line in lines)
    assert stub.requests == []


def test_upstream_request_repr_hides_headers() -> None:
    from pysite_agent.server.providers import UpstreamRequest

    request = UpstreamRequest("http://x", {"x-api-key": KEY}, {"a": 1})
    assert KEY not in repr(request)
