"""proxy(url) inside Pyodide with the runtime's real fetch, against a stub endpoint on loopback.

The stub (a ``http.server`` thread in this test process, on 127.0.0.1) speaks protocol v1 with
scripted replies chosen by path, records every request, and answers CORS (the test page is
served from another port, so in Chromium the POST is cross-origin with a preflight). The
requests it received are checked here, on the host, against the published schema.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pytest_pyodide import run_in_pyodide

from pysite_agent.core.wire import problems

ERROR_CODES = {
    400: "bad-request",
    403: "forbidden-origin",
    404: "not-found",
    413: "payload-too-large",
    429: "rate-limited",
    500: "internal-error",
    502: "upstream-error",
    504: "upstream-timeout",
}


class Stub:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] = []
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    stub: Stub

    def log_message(self, *args: object) -> None:
        pass

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Expose-Headers", "Retry-After")

    def do_OPTIONS(self) -> None:
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Methods", "POST")
        self.send_header("Access-Control-Allow-Headers", "content-type, accept, x-csrf-token")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self._cors()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, path: str) -> None:
        """Protocol v1's streaming reply, one event at a time (``/stream-error``: an error
        event after the first delta; ``/stream-hold``: a pause of 3 s after it)."""
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(name: str, data: Any) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.02)

        try:
            event("delta", {"text": "Two "})
            if path == "/stream-error":
                event("error", {"error": {"code": "upstream-error", "message": "stub failed"}})
                return
            if path == "/stream-hold":
                time.sleep(3.0)
            event("delta", {"text": "mugs \u2615."})
            event("reply", {"type": "answer", "text": "Two mugs \u2615."})
        except OSError:
            pass  # the page stopped reading

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length).decode()
        with self.stub.lock:
            self.stub.requests.append(
                {"path": self.path, "headers": dict(self.headers.items()), "body": raw}
            )
        path = self.path
        if path == "/answer":
            self._send(200, {"type": "answer", "text": "Hello from the endpoint"})
        elif path == "/tool":
            self._send(200, {"type": "tool", "name": "search", "arguments": {"q": "mug"}})
        elif path == "/garbage":
            self._send(200, "<html>not json</html>")
        elif path == "/wrong-shape":
            self._send(200, {"type": "answer", "text": 42})
        elif path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            code = ERROR_CODES.get(status, "internal-error")
            headers = {"Retry-After": "7"} if status == 429 else None
            extra = {"upstreamStatus": 529} if status == 502 else {}
            self._send(
                status, {"error": {"code": code, "message": "stub " + code, **extra}}, headers
            )
        elif path == "/slow":
            time.sleep(2.0)
            self._send(200, {"type": "answer", "text": "too late"})
        elif path.startswith("/stream"):
            self._stream(path)
        elif path == "/script":
            with self.stub.lock:
                reply = self.stub.script.pop(0)
            self._send(200, reply)
        else:
            self._send(404, {"error": {"code": "not-found", "message": "no such path"}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # an aborted request leaves a broken pipe: expected


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[Stub, str]]:
    state = Stub()
    handler = type("Handler", (_Handler,), {"stub": state})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@run_in_pyodide(packages=["pysite-agent"])
async def _replies_and_errors(selenium, base):
    import asyncio

    import pytest

    from pysite_agent import ffi
    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.core.signals import AbortController, AbortedError
    from pysite_agent.core.types import ModelRequest
    from pysite_agent.models.proxy import proxy

    def request(signal=None):
        return ModelRequest(
            instructions="Be brief.",
            messages=[{"role": "user", "content": "find a mug"}],
            tools=[
                {
                    "name": "search",
                    "description": "Find products",
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
                    "annotations": {"readOnlyHint": True},
                }
            ],
            signal=signal,
        )

    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        headers = {"x-csrf-token": "site-token"}
        answer = await proxy(base + "/answer", headers=headers).respond(request())
        assert answer == {"type": "answer", "text": "Hello from the endpoint"}
        tool = await proxy(base + "/tool").respond(request())
        assert tool == {"type": "tool", "name": "search", "arguments": {"q": "mug"}}

        expected = {
            400: ("model-error", "rejected"),
            403: ("model-unavailable", "allowed origins"),
            404: ("model-unavailable", "not set up on this site yet"),
            # too large even with nothing left to leave out: its own code (no retry helps)
            413: ("conversation-too-long", "too long"),
            429: ("model-error", "retry after 7 s"),
            500: ("model-error", "HTTP 500"),
            502: ("model-error", "provider status 529"),
            504: ("model-error", "did not answer in time"),
        }
        for status, (code, words) in expected.items():
            with pytest.raises(SiteAgentError) as info:
                await proxy(f"{base}/status/{status}").respond(request())
            assert info.value.code == code, (status, info.value)
            assert words in info.value.message, (status, info.value.message)

        for path in ("/garbage", "/wrong-shape"):
            with pytest.raises(SiteAgentError) as info:
                await proxy(base + path).respond(request())
            assert info.value.code == "bad-reply"

        with pytest.raises(SiteAgentError) as info:
            await proxy("http://127.0.0.1:9/nothing-listens-here").respond(request())
        assert info.value.code == "model-error"
        assert "Could not reach" in info.value.message

        controller = AbortController()
        loop = asyncio.get_running_loop()
        loop.call_later(0.1, controller.abort, "stop")
        started = loop.time()
        with pytest.raises(AbortedError):
            await proxy(base + "/slow").respond(request(controller.signal))
        assert loop.time() - started < 1.5  # the fetch itself was aborted

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(proxy(base + "/slow").respond(request()), 0.1)
        assert count() == baseline, "proxy() left PyProxies behind"
    finally:
        ffi.pyproxy_tracing(False)


def test_replies_errors_and_abort_over_real_fetch(selenium: Any, stub: tuple[Stub, str]) -> None:
    state, base = stub
    state.requests.clear()
    _replies_and_errors(selenium, base)
    posted = [r for r in state.requests if r["path"] != "/slow"]
    assert len(posted) >= 12
    for record in posted:
        assert problems("protocol-v1", json.loads(record["body"]), "request") == []
        headers = {k.lower(): v for k, v in record["headers"].items()}
        assert headers["content-type"] == "application/json"
    first = {k.lower(): v for k, v in posted[0]["headers"].items()}
    assert first["x-csrf-token"] == "site-token"


@run_in_pyodide(packages=["pysite-agent"])
async def _agent_run(selenium, base):
    import pysite_agent as sa
    from pysite_agent import ffi
    from pysite_agent.models.proxy import proxy

    found = []
    tool = sa.Tool(
        "search",
        "Find products",
        lambda args: found.append(args["q"]) or "blue mug, red mug",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )
    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        agent = sa.create_site_agent(model=proxy(base + "/script"), tools=[tool])
        result = await agent.run("find mugs").done
        assert result.status == "answered", result
        assert result.answer == "Two mugs."
        assert found == ["mug"]
        assert count() == baseline
    finally:
        ffi.pyproxy_tracing(False)


def test_a_whole_run_through_the_stub(selenium: Any, stub: tuple[Stub, str]) -> None:
    state, base = stub
    state.requests.clear()
    state.script[:] = [
        {"type": "tool", "name": "search", "arguments": {"q": "mug"}, "id": "call-1"},
        {"type": "answer", "text": "Two mugs."},
    ]
    _agent_run(selenium, base)
    bodies = [json.loads(r["body"]) for r in state.requests]
    assert len(bodies) == 2
    assert all(problems("protocol-v1", b, "request") == [] for b in bodies)
    assert [m["role"] for m in bodies[1]["messages"]] == ["user", "assistant", "tool"]
    assert bodies[1]["messages"][2]["toolCallId"] == "call-1"


@run_in_pyodide(packages=["pysite-agent"])
async def _streamed(selenium, base):
    import asyncio

    import pytest

    from pysite_agent import ffi
    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.core.signals import AbortController, AbortedError
    from pysite_agent.core.types import ModelRequest
    from pysite_agent.models.proxy import proxy

    def request(fragments, signal=None):
        return ModelRequest(
            instructions="Be brief.",
            messages=[{"role": "user", "content": "find a mug"}],
            tools=[],
            signal=signal,
            on_text=fragments.append,
        )

    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        fragments = []
        reply = await proxy(base + "/stream").respond(request(fragments))
        assert reply == {"type": "answer", "text": "Two mugs \u2615."}
        assert fragments == ["Two ", "mugs \u2615."]

        fragments = []
        with pytest.raises(SiteAgentError) as info:
            await proxy(base + "/stream-error").respond(request(fragments))
        assert info.value.code == "model-error" and "during the answer" in info.value.message
        assert fragments == ["Two "]

        fragments = []
        controller = AbortController()
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, controller.abort, "stop")
        started = loop.time()
        with pytest.raises(AbortedError):
            await proxy(base + "/stream-hold").respond(request(fragments, controller.signal))
        assert loop.time() - started < 2.0  # the body read was aborted, not waited out
        assert fragments == ["Two "]

        # Without on_text the same endpoint is asked for JSON only.
        assert (await proxy(base + "/answer").respond(request([]))) is not None
        assert count() == baseline, "the stream left PyProxies behind"
    finally:
        ffi.pyproxy_tracing(False)


def test_a_streaming_reply_over_real_fetch(selenium: Any, stub: tuple[Stub, str]) -> None:
    state, base = stub
    state.requests.clear()
    _streamed(selenium, base)
    accepts = [{k.lower(): v for k, v in r["headers"].items()}["accept"] for r in state.requests]
    assert accepts[:3] == ["text/event-stream, application/json"] * 3
