"""Real HTTP on loopback for the proxy's tests: a stub upstream and the app under uvicorn.

- :class:`StubUpstream`: a threaded HTTP/1.1 server on 127.0.0.1 that records every request
  and answers with whatever its ``responder`` returns (:class:`Reply`): any status, headers and
  body, a delay (timeouts), a body cut short (a ``Content-Length`` larger than what is sent,
  then the connection closes), or a connection closed without an answer.
- :class:`AppServer`: uvicorn serving an ASGI app in a thread, on a free port of 127.0.0.1.
- Recorded shapes of each provider's public API (``anthropic_*``, ``openai_*``, ``gemini_*``),
  and of their streaming APIs (:func:`stream_reply`: server-sent events as each provider sends
  them, sent chunk by chunk with pauses; the stub notes when the client closes the stream).
- :func:`serve_tool_chooser`: the app plus a stub upstream that always chooses one tool (and
  answers once a tool result came back), for end-to-end tests of the browser demo::

      with serve_tool_chooser("add_to_cart", {"product": "mug", "quantity": 1},
                              allowed_origins=["http://127.0.0.1:8000"]) as proxy_url:
          ...  # <site-agent proxy-url="{proxy_url}">

  The pytest fixture ``tool_chooser_proxy`` in ``conftest.py`` wraps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import uvicorn

KEY = "sk-test-KEY-7f3a9c1e5b2d4f6a8c0e"
MODEL = "test-model-1"


# The stub upstream.


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; bytes/str as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    truncate_to: int | None = None  # send only this many body bytes, then close
    hang_up: bool = False  # close the connection without any answer
    # A streamed answer: bytes are sent (and flushed) as they come, a float pauses that many
    # seconds (watching for the client closing the connection). Sent without a length; the
    # connection closes at the end.
    stream: list[bytes | float] | None = None
    # Wait this long before any answer (a slow first byte), watching the connection: when the
    # client closes it, ``closed_by_client`` is set (and ``closed_at`` noted) and nothing is sent.
    wait_s: float = 0.0

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")


Responder = Callable[[Recorded], Reply]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        recorded = Recorded(
            "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        stub = self.server.stub
        with stub.lock:
            stub.requests.append(recorded)
        reply = stub.responder(recorded)
        if reply.delay_s:
            # Sleep in small steps so that stopping the stub does not wait for it.
            deadline = time.monotonic() + reply.delay_s
            while time.monotonic() < deadline and not stub.stopping.is_set():
                time.sleep(0.01)
        if reply.wait_s and self._wait_for_close(reply.wait_s):
            stub.closed_at = time.monotonic()
            stub.closed_by_client.set()
            self.close_connection = True
            return
        if reply.stream is not None:
            self._stream(reply)
            return
        if reply.hang_up:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        payload = reply.payload()
        self.send_response(reply.status)
        headers = {"content-type": "application/json", **reply.headers}
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(payload)))
        if reply.truncate_to is not None:
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(payload[: reply.truncate_to])
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: Reply) -> None:
        stub = self.server.stub
        self.send_response(reply.status)
        for key, value in {"content-type": "text/event-stream", **reply.headers}.items():
            self.send_header(key, value)
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        try:
            for item in reply.stream or []:
                if isinstance(item, float | int):
                    if self._wait_for_close(float(item)):
                        stub.closed_by_client.set()
                        return
                    continue
                self.wfile.write(item)
                self.wfile.flush()
                stub.sent_at.append(time.time())
        except OSError:
            stub.closed_by_client.set()
            return
        stub.stream_finished.set()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _wait_for_close(self, seconds: float) -> bool:
        """Pause; ``True`` as soon as the client closed its side of the connection."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.server.stub.stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.005))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    stub: StubUpstream


class StubUpstream:
    """A stub provider API on 127.0.0.1; ``responder`` decides each answer."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder: Responder = responder or (lambda r: Reply(500, {"error": "no responder"}))
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.closed_by_client = threading.Event()  # a streamed answer's client hung up
        self.stream_finished = threading.Event()  # a streamed answer was sent to its end
        self.sent_at: list[float] = []  # wall-clock time (s) of each streamed chunk sent
        self.closed_at: float | None = None  # time.monotonic() the client closed a wait_s wait
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> StubUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def last(self) -> Recorded:
        with self.lock:
            return self.requests[-1]

    def __enter__(self) -> StubUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def base_url(stub: StubUpstream, provider: str) -> str:
    return f"{stub.url}/v1beta" if provider == "gemini" else f"{stub.url}/v1"


# uvicorn in a thread.


class AppServer:
    """Serves an ASGI app with uvicorn in a thread, on a free port of 127.0.0.1."""

    def __init__(self, app: Any, **config: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        settings: dict[str, Any] = {
            "lifespan": "on",
            "log_level": "warning",
            "access_log": False,
            "proxy_headers": False,
            "timeout_graceful_shutdown": 2,
        }
        settings.update(config)
        self.server = uvicorn.Server(uvicorn.Config(app, **settings))
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve(sockets=[self._sock])

        asyncio.run(main())

    @property
    def url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def start(self) -> AppServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)
        return self

    def call(self, coro: Any, timeout: float = 10) -> Any:
        """Run a coroutine on the server's event loop and wait for it."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Switch:
    """An ASGI app that forwards to ``target``, so one uvicorn serves many test apps."""

    def __init__(self) -> None:
        self.target: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self.target(scope, receive, send)


# Recorded shapes of the providers' public APIs.


def anthropic_tool(
    name: str,
    arguments: Any,
    call_id: str = "toolu_01A09q90qw90lq917835lq9",
    stop_reason: str = "tool_use",
) -> dict[str, Any]:
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "text", "text": "I'll do that."},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
        ],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 472, "output_tokens": 91},
    }


def anthropic_text(text: str, stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 6},
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_tool(
    name: str, arguments: str, call_id: str = "call_abc123", finish_reason: str = "tool_calls"
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
    }


def openai_text(
    text: str | None, finish_reason: str = "stop", refusal: str | None = None
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-456",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": refusal},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
    }


def openai_error(
    message: str, kind: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def gemini_tool(
    name: str,
    arguments: Any,
    signature: str | None = "CiQBVKhc7w3bQ==",
    finish_reason: str = "STOP",
    call_id: str | None = None,
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": arguments}
    if call_id is not None:
        call["id"] = call_id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return {
        "candidates": [
            {
                "content": {"parts": [part], "role": "model"},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 50,
            "candidatesTokenCount": 10,
            "totalTokenCount": 60,
        },
        "modelVersion": MODEL,
        "responseId": "resp-1",
    }


def gemini_text(text: str, finish_reason: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": text}], "role": "model"},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
        "modelVersion": MODEL,
    }


def gemini_error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def tool_reply(provider: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A provider's recorded reply that calls ``name`` with ``arguments``."""
    if provider == "anthropic":
        return anthropic_tool(name, arguments)
    if provider == "openai":
        return openai_tool(name, json.dumps(arguments))
    return gemini_tool(name, arguments)


def text_reply(provider: str, text: str) -> dict[str, Any]:
    if provider == "anthropic":
        return anthropic_text(text)
    if provider == "openai":
        return openai_text(text)
    return gemini_text(text)


def error_reply(provider: str, status: int) -> dict[str, Any]:
    if provider == "anthropic":
        kind = {429: "rate_limit_error", 401: "authentication_error"}.get(status, "api_error")
        return anthropic_error(kind, "upstream trouble")
    if provider == "openai":
        return openai_error("upstream trouble")
    return gemini_error(status, "INTERNAL", "upstream trouble")


def last_turn_is_tool_result(provider: str, body: dict[str, Any]) -> bool:
    """Whether the provider request ends with a tool result (the browser ran the tool)."""
    if provider == "anthropic":
        content = body["messages"][-1]["content"]
        return any(block.get("type") == "tool_result" for block in content)
    if provider == "openai":
        return bool(body["messages"][-1]["role"] == "tool")
    parts = body["contents"][-1]["parts"]
    return any("functionResponse" in part for part in parts)


def tool_chooser(
    provider: str, tool: str, arguments: dict[str, Any], answer: str = "Done."
) -> Responder:
    """A responder that calls ``tool`` until a tool result comes back, then answers.

    ``tool`` must be a name the provider accepts as it is (letters, digits, ``_``, ``-``), so
    that the proxy does not rename it.
    """

    def respond(request: Recorded) -> Reply:
        body = request.json()
        if last_turn_is_tool_result(provider, body):
            return Reply(200, text_reply(provider, answer))
        return Reply(200, tool_reply(provider, tool, arguments))

    return respond


@contextlib.contextmanager
def serve_tool_chooser(
    tool: str,
    arguments: dict[str, Any],
    *,
    allowed_origins: list[str],
    provider: str = "openai",
    answer: str = "Done.",
    **options: Any,
) -> Iterator[str]:
    """Start a stub upstream that always picks ``tool`` and the proxy app in front of it.

    Yields the proxy's URL (``http://127.0.0.1:PORT/``). Extra keyword arguments go to
    :func:`pysite_agent.server.create_proxy_app`.
    """
    from pysite_agent.server import create_proxy_app

    with StubUpstream(tool_chooser(provider, tool, arguments, answer)) as stub:
        app = create_proxy_app(
            provider=provider,  # type: ignore[arg-type]
            model=MODEL,
            api_key=KEY,
            allowed_origins=allowed_origins,
            base_url=base_url(stub, provider),
            **options,
        )
        with AppServer(app) as server:
            yield f"{server.url}/"


# Recorded shapes of the providers' streaming APIs.


def _sse(event: str | None, data: Any, newline: str = "\n") -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}{newline}" if event else ""
    return f"{head}data: {text}{newline}{newline}".encode()


def anthropic_stream(
    texts: list[str], tool: tuple[str, dict[str, Any]] | None = None, end: bool = True
) -> list[bytes]:
    """A Messages stream: a text block in ``texts`` fragments, then maybe a ``tool_use`` block
    whose input arrives as ``input_json_delta`` pieces."""
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01Stream",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": MODEL,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 25, "output_tokens": 1},
                },
            },
        ),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _sse("ping", {"type": "ping"}),
    ]
    out += [
        _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
        )
        for t in texts
    ]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    stop = "end_turn"
    if tool is not None:
        stop = "tool_use"
        name, arguments = tool
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_01S",
                        "name": name,
                        "input": {},
                    },
                },
            )
        )
        raw = json.dumps(arguments)
        for piece in ["", raw[: len(raw) // 2], raw[len(raw) // 2 :]]:
            out.append(
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
    if end:
        out.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 15},
                },
            )
        )
        out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def anthropic_stream_error() -> bytes:
    return _sse(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _sse(
        None,
        {
            "id": "chatcmpl-S1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": MODEL,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        },
    )


def openai_stream(
    texts: list[str], tool: tuple[str, dict[str, Any]] | None = None, end: bool = True
) -> list[bytes]:
    """A Chat Completions stream: ``content`` fragments, maybe one tool call whose arguments
    arrive in pieces, the ``finish_reason`` chunk and ``[DONE]``."""
    out = [_openai_chunk({"role": "assistant", "content": "", "refusal": None})]
    out += [_openai_chunk({"content": t}) for t in texts]
    finish = "stop"
    if tool is not None:
        finish = "tool_calls"
        name, arguments = tool
        raw = json.dumps(arguments)
        out.append(
            _openai_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_S1",
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
            out.append(
                _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            )
    if end:
        out.append(_openai_chunk({}, finish))
        out.append(_sse(None, "[DONE]"))
    return out


def openai_stream_error() -> bytes:
    return _sse(None, {"error": {"message": "The server had an error", "type": "server_error"}})


def gemini_stream(
    texts: list[str], tool: tuple[str, dict[str, Any]] | None = None, end: bool = True
) -> list[bytes]:
    """``streamGenerateContent?alt=sse``: one ``GenerateContentResponse`` per event (CR LF
    separated, as Gemini sends them), text parts in fragments, a ``functionCall`` whole, and
    ``finishReason`` on the last."""
    chunks: list[dict[str, Any]] = [{"text": t} for t in texts]
    if tool is not None:
        name, arguments = tool
        chunks.append(
            {
                "functionCall": {"name": name, "args": arguments},
                "thoughtSignature": "CiQBVKhc7w3bQ==",
            }
        )
    out = []
    for i, part in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
        if end and i == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
        out.append(
            _sse(
                None,
                {
                    "candidates": [candidate],
                    "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
                    "modelVersion": MODEL,
                    "responseId": "resp-S1",
                },
                "\r\n",
            )
        )
    return out


def gemini_stream_error() -> bytes:
    return _sse(
        None,
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
        "\r\n",
    )


def stream_reply(
    provider: str,
    texts: list[str],
    tool: tuple[str, dict[str, Any]] | None = None,
    *,
    end: bool = True,
) -> list[bytes]:
    """A provider's recorded stream shape: ``texts`` as answer fragments, then maybe ``tool``
    (name, arguments); ``end=False`` leaves out the end markers (a cut-off stream)."""
    make = {"anthropic": anthropic_stream, "openai": openai_stream, "gemini": gemini_stream}
    return make[provider](texts, tool, end)


def stream_error(provider: str) -> bytes:
    """The error event a provider sends inside a stream."""
    make = {
        "anthropic": anthropic_stream_error,
        "openai": openai_stream_error,
        "gemini": gemini_stream_error,
    }
    return make[provider]()


# Recorded shapes of OpenAI-compatible servers and gateways that differ from OpenAI's own.


def _chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
    return _sse(
        None,
        {
            "id": "chatcmpl-C1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": MODEL,
            "choices": choices,
            **extra,
        },
    )


def openai_compatible_stream(shape: str, name: str, arguments: dict[str, Any]) -> list[bytes]:
    """A tool call streamed as one kind of OpenAI-compatible server sends it.

    - ``resent``: ``id``, ``type`` and ``function.name`` repeated in every chunk, arguments in
      pieces (seen from gateways in front of vLLM-style servers and from hosted model APIs);
    - ``no-index``: tool-call pieces without ``index`` (some llama.cpp-based servers);
    - ``object``: the whole call in one chunk with ``arguments`` as a JSON object, not a string
      (Ollama- and llama.cpp-style), ``finish_reason`` ``"stop"``;
    - ``empty-choices``: a first chunk with ``choices: []`` (content-filter results), the usage
      chunk at the end with ``choices: []``, chunks whose ``delta`` is ``null``;
    - ``cumulative``: the name sent whole, then sent again as the name so far in later chunks.
    """
    raw = json.dumps(arguments)
    pieces = [
        raw[: len(raw) // 3],
        raw[len(raw) // 3 : 2 * len(raw) // 3],
        raw[2 * len(raw) // 3 :],
    ]
    role = _chunk(
        [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    )
    done = _sse(None, "[DONE]")
    finish = _chunk([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
    if shape == "resent":
        calls = [
            _chunk(
                [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "chatcmpl-tool-aa62",
                                    "type": "function",
                                    "function": {"name": name, "arguments": piece},
                                }
                            ]
                        },
                        "finish_reason": None,
                    }
                ]
            )
            for piece in ["", *pieces]
        ]
        return [role, *calls, finish, done]
    if shape == "cumulative":
        calls = [
            _chunk(
                [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "function": {"name": name, "arguments": piece}}
                            ]
                        },
                        "finish_reason": None,
                    }
                ]
            )
            for piece in pieces
        ]
        return [role, *calls, finish, done]
    if shape == "no-index":
        first = {"id": "call_N1", "type": "function", "function": {"name": name, "arguments": ""}}
        calls = [_chunk([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])]
        calls += [
            _chunk(
                [{"delta": {"tool_calls": [{"function": {"arguments": p}}]}, "finish_reason": None}]
            )
            for p in pieces
        ]
        return [role, *calls, finish, done]
    if shape == "object":
        call = {
            "id": "call_O1",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return [
            _chunk(
                [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "", "tool_calls": [call]},
                        "finish_reason": None,
                    }
                ]
            ),
            _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            done,
        ]
    if shape == "empty-choices":
        filtered = _chunk([], prompt_filter_results=[{"prompt_index": 0}])
        null_delta = _chunk([{"index": 0, "delta": None, "finish_reason": None}])
        first = {
            "index": 0,
            "id": "call_E1",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        calls = [_chunk([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])]
        calls += [
            _chunk(
                [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]},
                        "finish_reason": None,
                    }
                ]
            )
            for p in pieces
        ]
        usage = _chunk([], usage={"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14})
        return [filtered, role, null_delta, *calls, finish, usage, done]
    raise ValueError(shape)


OPENAI_COMPATIBLE_SHAPES = ("resent", "cumulative", "no-index", "object", "empty-choices")


def anthropic_whole_input_stream(name: str, arguments: dict[str, Any]) -> list[bytes]:
    """A Messages stream whose ``tool_use`` block arrives with its whole ``input`` in
    ``content_block_start`` and no ``input_json_delta`` (as some compatible gateways send it)."""
    return [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_W",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": MODEL,
                },
            },
        ),
        _sse("ping", {"type": "ping"}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_W",
                    "name": name,
                    "input": arguments,
                },
            },
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]
