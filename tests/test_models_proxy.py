"""proxy(url) with an injected fetch: protocol v1 both ways, status codes.

The real HTTP lane (a stub endpoint on 127.0.0.1 and the browser's fetch) is
``tests/pyodide/test_browser_proxy.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aio import run

import pysite_agent as sa
from pysite_agent import ffi
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.wire import problems, user_message
from pysite_agent.models.proxy import ProxyModel, proxy


class DOMError(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class Response:
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self._body = body if isinstance(body, str) else json.dumps(body)
        self.headers = headers or {}

    async def text(self) -> str:
        return self._body


class FakeFetch:
    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, url: str, init: dict[str, Any]) -> Response:
        self.calls.append((url, init))
        response = self.responses.pop(0)
        if isinstance(response, BaseException):
            raise response
        if response == "WAIT":
            done: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
            init["signal"].add_listener(
                lambda: done.set_exception(DOMError("AbortError", "aborted"))
            )
            return await done
        return response


TOOLS = [
    {
        "name": "add_to_cart",
        "description": "Add a product",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        "annotations": {"readOnlyHint": False},
    }
]


def request(**kw: Any) -> ModelRequest:
    return ModelRequest(
        instructions=kw.pop("instructions", "Be brief."),
        messages=kw.pop("messages", [user_message("add a mug")]),
        tools=kw.pop("tools", TOOLS),
        **kw,
    )


def test_posts_protocol_v1_and_returns_the_reply() -> None:
    reply = {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}, "id": "t1"}
    fetch = FakeFetch(Response(200, reply))
    model = proxy("/api/agent", headers={"x-csrf-token": "abc"}, fetch=fetch)
    assert run(model.respond(request())) == reply
    ((url, init),) = fetch.calls
    assert url == "/api/agent"
    assert init["method"] == "POST"
    assert init["credentials"] == "same-origin"
    assert init["headers"]["content-type"] == "application/json"
    assert init["headers"]["x-csrf-token"] == "abc"
    body = json.loads(init["body"])
    assert body == request().to_json()
    assert problems("protocol-v1", body, "request") == []
    assert init["signal"].aborted is False


def test_an_answer_and_the_name() -> None:
    fetch = FakeFetch(Response(200, {"type": "answer", "text": "Hi"}))
    model = proxy("https://example.test/agent", credentials="include", fetch=fetch)
    assert model.name == "proxy (https://example.test/agent)"
    assert run(model.respond(request())) == {"type": "answer", "text": "Hi"}
    assert fetch.calls[0][1]["credentials"] == "include"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("<html>oops</html>", "not JSON"),
        ({"type": "answer"}, "does not match protocol v1"),
        ({"type": "tool", "name": "x"}, "does not match protocol v1"),
        ({"type": "answer", "text": "x", "extra": 1}, "does not match protocol v1"),
    ],
)
def test_a_reply_that_breaks_the_protocol_is_bad_reply(body: Any, words: str) -> None:
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=FakeFetch(Response(200, body))).respond(request()))
    assert info.value.code == "bad-reply"
    assert words in info.value.message


def error_body(code: str, message: str = "m", **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


@pytest.mark.parametrize(
    ("status", "body", "code", "words"),
    [
        (400, error_body("bad-request", "messages: too many"), "model-error", "rejected"),
        (413, "Payload Too Large", "model-error", "too long"),
        (413, error_body("bad-request"), "model-error", "too long"),
        (403, error_body("forbidden-origin"), "model-unavailable", "allowed origins"),
        (404, error_body("not-found"), "model-unavailable", "not set up on this site yet"),
        (405, error_body("method-not-allowed"), "model-unavailable", "no model server answers"),
        (501, "Unsupported method ('POST')", "model-unavailable", "not set up on this site"),
        (429, error_body("rate-limited"), "model-error", "busy; try again"),
        (
            502,
            error_body("upstream-error", upstreamStatus=529),
            "model-error",
            "provider status 529",
        ),
        (504, error_body("upstream-timeout"), "model-error", "did not answer in time"),
        (500, error_body("internal-error"), "model-error", "HTTP 500"),
        (503, "Service Unavailable", "model-error", "HTTP 503"),
    ],
)
def test_status_codes_map_to_error_codes(status: int, body: Any, code: str, words: str) -> None:
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=FakeFetch(Response(status, body))).respond(request()))
    assert info.value.code == code
    assert words in info.value.message
    if status in (404, 405, 501):  # a visitor reads it: no status number, where it should be
        assert "HTTP" not in info.value.message and str(status) not in info.value.message
        assert "/a" in info.value.message
    elif isinstance(body, dict):
        assert body["error"]["code"] in info.value.message


def test_rate_limited_quotes_retry_after() -> None:
    fetch = FakeFetch(Response(429, error_body("rate-limited"), {"Retry-After": "12"}))
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request()))
    assert "retry after 12 s" in info.value.message


def test_a_network_failure_is_a_model_error() -> None:
    fetch = FakeFetch(DOMError("TypeError", "Failed to fetch"))
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request()))
    assert info.value.code == "model-error"
    assert "Could not reach" in info.value.message and "Failed to fetch" in info.value.message


def test_abort_cancels_the_fetch() -> None:
    fetch = FakeFetch("WAIT")

    async def main() -> None:
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.3, controller.abort, "stop")
        with pytest.raises(AbortedError):
            await proxy("/a", fetch=fetch).respond(request(signal=controller.signal))

    run(main())
    assert fetch.calls[0][1]["signal"].aborted


def test_cancelling_the_step_cancels_the_fetch() -> None:
    fetch = FakeFetch("WAIT")

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(proxy("/a", fetch=fetch).respond(request()), 1)

    run(main())
    assert fetch.calls[0][1]["signal"].aborted


def test_a_request_that_breaks_the_protocol_is_not_sent() -> None:
    fetch = FakeFetch(Response(200, {"type": "answer", "text": "x"}))
    bad_tools = [{"name": "x", "description": "d", "inputSchema": {}, "surprise": True}]
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request(tools=bad_tools)))
    assert info.value.code == "model-error"
    assert "not sent" in info.value.message
    assert fetch.calls == []


@pytest.mark.parametrize(
    "headers",
    [
        {"x-api-key": "anything"},
        {"X-Goog-Api-Key": "anything"},
        {"authorization": "Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz"},
        {"authorization": "Bearer sk-proj-abcdefghijklmnopqrstuvwx"},
        {"x-key": "AIzaSyA1234567890abcdefghijklmnopqrstuv"},
    ],
)
def test_a_provider_key_in_headers_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="provider"):
        proxy("/a", headers=headers, fetch=FakeFetch())


def test_a_site_token_in_headers_is_fine() -> None:
    model = proxy("/a", headers={"authorization": "Bearer site-session-123"}, fetch=FakeFetch())
    assert isinstance(model, ProxyModel)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        proxy("")
    with pytest.raises(ValueError):
        proxy("/a", credentials="always")
    with pytest.raises(TypeError):
        proxy("/a", fetch="fetch")  # type: ignore[arg-type]


def test_without_fetch_outside_a_browser_is_model_unavailable() -> None:
    if ffi.global_object("fetch") is not None:
        pytest.skip("this runtime has a fetch()")
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a").respond(request()))
    assert info.value.code == "model-unavailable"


def test_a_whole_run_keeps_every_request_valid() -> None:
    fetch = FakeFetch(
        Response(200, {"type": "tool", "name": "look", "arguments": {}, "meta": {"sig": "s"}}),
        Response(200, {"type": "answer", "text": "Seen."}),
    )
    tool = sa.Tool("look", "Look around", lambda args: "a room", annotations={"readOnlyHint": True})
    agent = sa.create_site_agent(model=proxy("/a", fetch=fetch), tools=[tool])

    async def main() -> Any:
        return await agent.run("look").done

    result = run(main())
    assert result.status == "answered"
    bodies = [json.loads(init["body"]) for _, init in fetch.calls]
    assert all(problems("protocol-v1", b, "request") == [] for b in bodies)
    assert bodies[1]["messages"][1]["toolCall"]["meta"] == {"sig": "s"}


# --- the history budget --------------------------------------------------------------------------


def long_history(turns: int, result: str = "ok") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in range(turns):
        out += [
            user_message(f"question {n}"),
            {
                "role": "assistant",
                "toolCall": {"id": f"c{n}", "name": "add_to_cart", "arguments": {}},
            },
            {
                "role": "tool",
                "toolCallId": f"c{n}",
                "name": "add_to_cart",
                "content": result,
                "isError": False,
                "untrusted": False,
            },
            {"role": "assistant", "content": f"answer {n}"},
        ]
    out.append(user_message("and now?"))
    return out


ANSWER = {"type": "answer", "text": "ok"}


def test_trims_to_the_default_caps_and_reports_the_trim() -> None:
    fetch = FakeFetch(Response(200, ANSWER))
    trims: list[Any] = []
    run(proxy("/a", fetch=fetch).respond(request(messages=long_history(30), on_trim=trims.append)))
    sent = json.loads(fetch.calls[0][1]["body"])["messages"]
    assert len(sent) == 37  # the last 9 turns (36 messages) and the new question
    assert sent[0] == user_message("question 21")
    assert sent[-1] == user_message("and now?")
    (trim,) = trims
    assert trim.dropped_messages == 84 and trim.sent_messages == 37
    assert trim.reason == "max-messages"


def test_nothing_reported_when_nothing_is_cut() -> None:
    fetch = FakeFetch(Response(200, ANSWER))
    trims: list[Any] = []
    run(proxy("/a", fetch=fetch).respond(request(messages=long_history(2), on_trim=trims.append)))
    assert trims == []


def test_body_bytes_cap() -> None:
    fetch = FakeFetch(Response(200, ANSWER))
    model = proxy("/a", fetch=fetch, max_body_bytes=3_000)
    run(model.respond(request(messages=long_history(10, result="z" * 400))))
    assert len(fetch.calls[0][1]["body"].encode()) <= 3_000


def too_many(max_messages: int, max_body_bytes: int = 65_536) -> Response:
    return Response(
        413,
        error_body(
            "too-many-messages",
            f"Too many messages (at most {max_messages}).",
            limits={"maxMessages": max_messages, "maxBodyBytes": max_body_bytes},
        ),
    )


def test_a_too_large_answer_lowers_the_caps_and_retries_once() -> None:
    fetch = FakeFetch(too_many(10), Response(200, ANSWER))
    model = proxy("/a", fetch=fetch)
    trims: list[Any] = []
    assert run(model.respond(request(messages=long_history(5), on_trim=trims.append))) == ANSWER
    first, second = (json.loads(init["body"])["messages"] for _, init in fetch.calls)
    assert len(first) == 21 and len(second) == 9
    assert second[0] == user_message("question 3")
    assert model.max_messages == 10  # remembered for the next steps
    assert [t.sent_messages for t in trims] == [9]


def test_payload_too_large_with_limits_retries_within_the_bytes() -> None:
    answer_413 = Response(
        413, error_body("payload-too-large", "big", limits={"maxBodyBytes": 2_000})
    )
    fetch = FakeFetch(answer_413, Response(200, ANSWER))
    run(proxy("/a", fetch=fetch).respond(request(messages=long_history(10, result="y" * 300))))
    assert len(fetch.calls) == 2
    assert len(fetch.calls[1][1]["body"].encode()) <= 2_000


def test_only_one_retry() -> None:
    fetch = FakeFetch(too_many(10), too_many(4))
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request(messages=long_history(5))))
    assert len(fetch.calls) == 2
    assert info.value.code == "model-error"
    assert "too-many-messages" in info.value.message


def test_an_old_servers_413_without_limits_and_nothing_to_leave_out() -> None:
    fetch = FakeFetch(Response(413, error_body("payload-too-large", "too big")))
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request()))
    assert len(fetch.calls) == 1
    assert info.value.code == "conversation-too-long"
    assert "too long" in info.value.message


def test_no_retry_when_trimming_cannot_help() -> None:
    fetch = FakeFetch(too_many(1))
    with pytest.raises(sa.SiteAgentError) as info:
        run(proxy("/a", fetch=fetch).respond(request(messages=[user_message("hi")])))
    assert len(fetch.calls) == 1
    assert info.value.code == "model-error"


def test_a_current_turn_too_big_for_the_caps_is_conversation_too_long() -> None:
    fetch = FakeFetch(Response(200, ANSWER))
    with pytest.raises(sa.SiteAgentError) as info:
        run(
            proxy("/a", fetch=fetch, max_body_bytes=500).respond(
                request(messages=[user_message("x" * 2_000)])
            )
        )
    assert info.value.code == "conversation-too-long"
    assert fetch.calls == []  # never sent


@pytest.mark.parametrize("value", [0, -1, True, 2.5, "40"])
def test_caps_must_be_positive_integers(value: Any) -> None:
    with pytest.raises(ValueError):
        proxy("/a", max_messages=value)
    with pytest.raises(ValueError):
        proxy("/a", max_body_bytes=value)


def test_lone_surrogates_in_the_conversation_are_sent_as_replacement_characters() -> None:
    from generators import LONE_SURROGATES

    from pysite_agent.core.text import REPLACEMENT

    reply = {"type": "answer", "text": "ok"}
    for lone in LONE_SURROGATES:
        fetch = FakeFetch(Response(200, reply))
        model = proxy("/api/agent", fetch=fetch)
        text = f"cut {lone} emoji"
        req = request(messages=[user_message(text)], instructions=f"site {lone}")
        assert run(model.respond(req)) == reply
        ((_, init),) = fetch.calls
        init["body"].encode("utf-8")  # a well-formed body: fetch's TextEncoder changes nothing
        body = json.loads(init["body"])
        assert json.dumps(body["messages"], ensure_ascii=False).count(REPLACEMENT) == 1
        assert body["instructions"] == f"site {REPLACEMENT}"
