"""chrome_built_in() over a Python fake of the Prompt API's ``LanguageModel``.

The fake follows the documented API (the Prompt API explainer):
``availability(options)``, ``create({initialPrompts, expectedInputs, expectedOutputs, monitor,
signal})`` with ``downloadprogress`` events (``loaded`` 0..1, at least 0 and 1), and a session
with ``prompt(text, {responseConstraint, signal})`` and ``destroy()``. ``create()`` while the
model is ``downloadable`` needs user activation (``NotAllowedError`` otherwise). The browser lane
(``tests/pyodide/test_browser_chrome.py``) runs a JS fake and Chromium's real ``LanguageModel``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import jsonschema
import pytest
from aio import run

import pysite_agent as sa
from pysite_agent import ffi
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.wire import tool_call_message, tool_result_message, user_message
from pysite_agent.models.chrome import (
    REPLY_FORMAT,
    ChromeBuiltIn,
    build_prompt,
    chrome_built_in,
    response_constraint,
)


class DOMError(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class Target:
    """An EventTarget stand-in (the ``CreateMonitor``)."""

    def __init__(self) -> None:
        self.listeners: dict[str, list[Any]] = {}

    def addEventListener(self, kind: str, fn: Any) -> None:
        self.listeners.setdefault(kind, []).append(fn)

    def removeEventListener(self, kind: str, fn: Any) -> None:
        self.listeners[kind].remove(fn)

    def dispatch(self, kind: str, **fields: Any) -> None:
        for fn in list(self.listeners.get(kind, [])):
            fn(dict(fields))


class Stream:
    """A ``ReadableStream`` stand-in: ``getReader()`` -> ``read()`` -> ``{value, done}``."""

    def __init__(self, chunks: list[Any], signal: Any, wait: bool = False) -> None:
        self.chunks = list(chunks)
        self.signal = signal
        self.wait = wait
        self.released = False

    def getReader(self) -> Stream:
        return self

    async def read(self) -> dict[str, Any]:
        if self.signal is not None and self.signal.aborted:
            raise DOMError("AbortError", "aborted")
        if self.wait:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.signal.add_listener(
                lambda: done.done() or done.set_exception(DOMError("AbortError", "aborted"))
            )
            return await done
        await asyncio.sleep(0)
        if not self.chunks:
            return {"done": True, "value": None}
        chunk = self.chunks.pop(0)
        if isinstance(chunk, BaseException):
            raise chunk
        return {"done": False, "value": chunk}

    def releaseLock(self) -> None:
        self.released = True


class ToolCall:
    """``LanguageModelToolCall``: a class, as Chrome's (plain objects are not accepted)."""

    def __init__(self, init: dict[str, Any]) -> None:
        self.callID = init["callID"]
        self.name = init["name"]
        self.arguments = init["arguments"]


class ToolSuccess:
    def __init__(self, init: dict[str, Any]) -> None:
        if set(init) != {"callID", "name", "result"}:
            raise DOMError("TypeError", "LanguageModelToolSuccess requires callID, name, result")
        self.callID, self.name, self.result = init["callID"], init["name"], init["result"]


class ToolError:
    def __init__(self, init: dict[str, Any]) -> None:
        self.callID, self.name = init["callID"], init["name"]
        self.errorMessage = init["errorMessage"]


TOOL_TYPES = {
    "LanguageModelToolCall": ToolCall,
    "LanguageModelToolSuccess": ToolSuccess,
    "LanguageModelToolError": ToolError,
}


def has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(has_null(v) for v in value)
    return False


class Session(Target):
    """A ``LanguageModel`` session: ``prompt``, ``promptStreaming``, ``measureContextUsage``,
    ``contextWindow``/``contextUsage``, ``contextoverflow``, ``clone`` and ``destroy``."""

    def __init__(self, lm: FakeLanguageModel, options: dict[str, Any]) -> None:
        super().__init__()
        self.lm = lm
        self.options = options
        self.destroyed = False
        self.prompts: list[tuple[Any, dict[str, Any]]] = []
        self.contextWindow = lm.context_window
        self.contextUsage = 50

    def _check(self) -> None:
        if self.destroyed:
            raise DOMError("InvalidStateError", "The session was destroyed.")

    def _size(self, value: Any) -> int:
        if isinstance(value, str):
            return len(value)
        return len(json.dumps(value, default=lambda o: vars(o)))

    def _check_input(self, value: Any) -> None:
        """Native tool use: tool content must be the browser's classes, with no null."""
        if isinstance(value, str):
            return
        for message in value:
            content = message["content"]
            if isinstance(content, str):
                continue
            for part in content:
                if part["type"] == "tool-response":
                    if not isinstance(part["value"], ToolSuccess | ToolError):
                        raise DOMError(
                            "TypeError",
                            "The value must be a LanguageModelToolSuccess or "
                            "LanguageModelToolError for type:'tool-response'",
                        )
                    if isinstance(part["value"], ToolSuccess) and has_null(part["value"].result):
                        raise DOMError("UnknownError", "Failed to serialize tool result.")
                    assert message["role"] == "user"
                elif part["type"] == "tool-call":
                    assert isinstance(part["value"], ToolCall)

    async def measureContextUsage(self, value: Any, options: dict[str, Any] | None = None) -> int:
        self._check()
        self.lm.measured.append(self._size(value))
        return self._size(value) // self.lm.chars_per_token

    async def prompt(self, text: str, options: dict[str, Any]) -> str:
        self._check()
        self.prompts.append((text, options))
        if len(text) > self.lm.quota:
            raise DOMError("QuotaExceededError", "The input is too large.")
        reply = self.lm.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "WAIT":
            done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            options["signal"].add_listener(
                lambda: done.set_exception(DOMError("AbortError", "aborted"))
            )
            return await done
        return reply if isinstance(reply, str) else json.dumps(reply)

    def promptStreaming(self, value: Any, options: dict[str, Any]) -> Stream:
        self._check()
        self._check_input(value)
        self.prompts.append((value, options))
        if self._size(value) > self.lm.quota:
            raise DOMError("QuotaExceededError", "The input is too large.")
        if self.lm.overflow_on_prompt:
            self.dispatch("contextoverflow")
        reply = self.lm.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "WAIT":
            return Stream([], options["signal"], wait=True)
        if isinstance(reply, list):  # chunks as given (native: strings and tool-call parts)
            return Stream(reply, options["signal"])
        text = reply if isinstance(reply, str) else json.dumps(reply)
        size = self.lm.chunk_size
        return Stream([text[i : i + size] for i in range(0, len(text), size)], options["signal"])

    async def clone(self, options: dict[str, Any] | None = None) -> Session:
        self._check()
        copy = Session(self.lm, self.options)
        copy.clone_options = options
        self.lm.sessions.append(copy)
        return copy

    def destroy(self) -> None:
        self.destroyed = True


class FakeLanguageModel:
    """``LanguageModel`` as documented; ``sessions`` are the per-step clones, ``created`` the
    sessions ``create()`` made (base sessions and the download's)."""

    def __init__(self, state: str = "available", replies: list[Any] | None = None) -> None:
        self.state = state
        self.tool_state = "available"
        self.replies = list(replies or [])
        self.quota = 100_000
        self.context_window = 1_000_000
        self.chars_per_token = 4
        self.chunk_size = 7
        self.overflow_on_prompt = False
        self.measured: list[int] = []
        self.user_activation = True
        self.availability_options: list[Any] = []
        self.sessions: list[Session] = []
        self.created: list[Session] = []
        self.create_error: BaseException | None = None

    async def availability(self, options: Any = None) -> str:
        self.availability_options.append(options)
        kinds = [e.get("type") for e in (options or {}).get("expectedOutputs", [])]
        if "tool-call" in kinds:
            return self.tool_state if self.state == "available" else self.state
        return self.state

    async def create(self, options: dict[str, Any]) -> Session:
        if self.create_error is not None:
            raise self.create_error
        if self.state == "unavailable":
            raise DOMError("NotSupportedError", "unavailable")
        if self.state in ("downloadable", "downloading"):
            if not self.user_activation:
                raise DOMError("NotAllowedError", "Requires a user gesture")
            monitor = options.get("monitor")
            target = Target()
            if monitor is not None:
                monitor(target)
            for loaded in (0.0, 0.5, 1.0):
                await asyncio.sleep(0.01)
                target.dispatch("downloadprogress", loaded=loaded)
            self.target = target
            self.state = "available"
        for tool in options.get("tools", []):
            assert "execute" not in tool and not has_null(tool)
        session = Session(self, options)
        signal = options.get("signal")
        if signal is not None:  # aborting create()'s signal later destroys the session
            signal.add_listener(session.destroy)
        self.created.append(session)
        return session


def request(messages: list[dict[str, Any]] | None = None, **kw: Any) -> ModelRequest:
    tools = kw.pop(
        "tools",
        [
            {
                "name": "add_to_cart",
                "description": "Add a product to the cart",
                "inputSchema": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
                    "required": ["id"],
                },
            }
        ],
    )
    return ModelRequest(
        instructions=kw.pop("instructions", "You help on this shop."),
        messages=messages or [user_message("add two mugs")],
        tools=tools,
        **kw,
    )


# -- availability -----------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["available", "downloadable", "downloading", "unavailable"])
def test_availability_is_passed_through_with_the_language_options(state: str) -> None:
    lm = FakeLanguageModel(state)
    model = chrome_built_in(languages=("en", "es"), language_model=lm)
    assert run(model.availability()) == state
    expected = [{"type": "text", "languages": ["en", "es"]}]
    assert lm.availability_options == [{"expectedInputs": expected, "expectedOutputs": expected}]


def test_availability_is_unavailable_without_language_model_or_when_it_fails() -> None:
    if ffi.global_object("LanguageModel") is None:
        assert run(chrome_built_in().availability()) == "unavailable"

    class Failing(FakeLanguageModel):
        async def availability(self, options: Any = None) -> str:
            raise DOMError("NotSupportedError", "language zh")

    assert run(chrome_built_in(language_model=Failing()).availability()) == "unavailable"
    assert run(chrome_built_in(language_model=FakeLanguageModel("maybe")).availability()) == (
        "unavailable"
    )


@pytest.mark.parametrize(
    ("state", "code"),
    [
        ("downloadable", "model-download-required"),
        ("downloading", "model-download-required"),
        ("unavailable", "model-unavailable"),
    ],
)
def test_respond_refuses_when_not_available_and_never_downloads(state: str, code: str) -> None:
    lm = FakeLanguageModel(state)
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).respond(request()))
    assert info.value.code == code
    assert lm.sessions == []
    assert lm.state == state


# -- respond ----------------------------------------------------------------------------------


def test_respond_creates_a_session_prompts_with_a_constraint_and_destroys_it() -> None:
    lm = FakeLanguageModel(
        replies=[{"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug", "qty": 2}}]
    )
    model = chrome_built_in(language_model=lm)
    reply = run(model.respond(request()))
    assert reply == {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug", "qty": 2}}
    (session,) = lm.sessions
    assert session.destroyed
    options = session.options
    assert options["initialPrompts"] == [{"role": "system", "content": "You help on this shop."}]
    assert options["expectedInputs"] == [{"type": "text", "languages": ["en"]}]
    assert options["expectedOutputs"] == [{"type": "text", "languages": ["en"]}]
    assert "signal" in options
    (text, prompt_options) = session.prompts[0]
    assert "add_to_cart" in text and "add two mugs" in text
    constraint = prompt_options["responseConstraint"]
    branches = constraint["anyOf"]
    assert branches[0]["properties"]["type"] == {"const": "answer"}
    assert branches[1]["properties"]["name"] == {"const": "add_to_cart"}
    assert branches[1]["properties"]["arguments"]["required"] == ["id"]
    assert "signal" in prompt_options


def test_an_answer_reply() -> None:
    lm = FakeLanguageModel(replies=['{"type": "answer", "text": "Hello"}'])
    assert run(chrome_built_in(language_model=lm).respond(request())) == {
        "type": "answer",
        "text": "Hello",
    }


@pytest.mark.parametrize("reply", ["not json", '{"type": "maybe"}', "[1, 2]", '{"type":"tool"}'])
def test_a_reply_that_is_not_a_protocol_reply_is_bad_reply(reply: str) -> None:
    lm = FakeLanguageModel(replies=[reply])
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).respond(request()))
    assert info.value.code == "bad-reply"
    assert lm.sessions[0].destroyed


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("QuotaExceededError", "model-error", "too long"),
        ("NotSupportedError", "model-unavailable", "does not support"),
        ("NotReadableError", "model-error", "filtered"),
        ("SyntaxError", "model-error", "required format"),
        ("UnknownError", "model-error", "unknown error"),
        ("SomethingNew", "model-error", "SomethingNew"),
    ],
)
def test_dom_exception_names_map_to_error_codes(name: str, code: str, words: str) -> None:
    lm = FakeLanguageModel(replies=[DOMError(name, "browser says no")])
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).respond(request()))
    assert info.value.code == code
    assert words in info.value.message
    assert "browser says no" in info.value.message  # the browser's own text is kept
    assert lm.sessions[0].destroyed


def test_a_prompt_over_the_quota_is_a_model_error_that_says_too_long() -> None:
    lm = FakeLanguageModel(replies=['{"type":"answer","text":"x"}'])
    lm.quota = 50
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).respond(request()))
    assert info.value.code == "model-error"
    assert "too long" in info.value.message


def test_abort_stops_the_prompt_and_destroys_the_session() -> None:
    lm = FakeLanguageModel(replies=["WAIT"])
    model = chrome_built_in(language_model=lm)

    async def main() -> None:
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.5, controller.abort, "stop")
        with pytest.raises(AbortedError):
            await model.respond(request(signal=controller.signal))

    run(main())
    (session,) = lm.sessions
    assert session.destroyed
    assert session.prompts[0][1]["signal"].aborted


def test_cancelling_the_step_aborts_the_browser_work() -> None:
    lm = FakeLanguageModel(replies=["WAIT"])
    model = chrome_built_in(language_model=lm)

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(model.respond(request()), 1)

    run(main())
    assert lm.sessions[0].prompts[0][1]["signal"].aborted
    assert lm.sessions[0].destroyed


# -- prepare ----------------------------------------------------------------------------------


def test_prepare_downloads_with_progress_and_releases_its_callbacks() -> None:
    baseline = ffi.live_callbacks()
    lm = FakeLanguageModel("downloadable")
    model = chrome_built_in(language_model=lm)
    progress: list[float] = []
    run(model.prepare(progress.append))
    assert progress == [0.0, 0.5, 1.0]
    assert lm.state == "available"
    assert lm.target.listeners["downloadprogress"] == []  # the listener was removed
    assert lm.created[0].destroyed
    assert ffi.live_callbacks() == baseline


def test_prepare_without_user_activation_says_a_click_is_needed() -> None:
    baseline = ffi.live_callbacks()
    lm = FakeLanguageModel("downloadable")
    lm.user_activation = False
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).prepare())
    assert info.value.code == "model-download-required"
    assert "click" in info.value.message
    assert ffi.live_callbacks() == baseline


def test_prepare_when_available_or_unavailable() -> None:
    lm = FakeLanguageModel("available")
    progress: list[float] = []
    run(chrome_built_in(language_model=lm).prepare(progress.append))
    assert progress == [1.0]
    assert lm.created == []
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=FakeLanguageModel("unavailable")).prepare())
    assert info.value.code == "model-unavailable"


def test_prepare_network_failure_is_a_model_error() -> None:
    lm = FakeLanguageModel("downloadable")
    lm.create_error = DOMError("NetworkError", "download failed")
    with pytest.raises(sa.SiteAgentError) as info:
        run(chrome_built_in(language_model=lm).prepare())
    assert info.value.code == "model-error"


def test_prepare_abort() -> None:
    lm = FakeLanguageModel("downloadable")

    async def create(options: dict[str, Any]) -> Any:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        options["signal"].add_listener(lambda: done.set_exception(DOMError("AbortError", "x")))
        return await done

    lm.create = create  # type: ignore[method-assign]

    async def main() -> None:
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.2, controller.abort)
        with pytest.raises(AbortedError):
            await chrome_built_in(language_model=lm).prepare(None, controller.signal)

    run(main())


# -- the prompt and the constraint ------------------------------------------------------------


def conversation(turns: int, result_chars: int = 50) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append(user_message(f"question {i}"))
        messages.append(tool_call_message(f"c{i}", "search", {"q": i}))
        messages.append(tool_result_message(f"c{i}", "search", "r" * result_chars))
    return messages


def test_history_is_trimmed_to_max_history_and_says_so() -> None:
    messages = conversation(6)
    text, notes = build_prompt(messages, [], max_history=4, max_prompt_chars=6000)
    assert "question 5" in text and "question 4" not in text
    assert notes == ["14 earlier messages not shown"]
    assert "14 earlier messages not shown" in text


def test_the_current_turn_is_kept_whole_even_beyond_max_history() -> None:
    """The latest visitor message and every call and result after it are the current turn:
    ``max_history`` never hides them (the model would repeat calls it cannot see)."""
    messages = [user_message("older question"), user_message("the real task")]
    for i in range(6):
        messages.append(tool_call_message(f"c{i}", "search", {}))
        messages.append(tool_result_message(f"c{i}", "search", "x"))
    text, notes = build_prompt(messages, [], max_history=3, max_prompt_chars=6000)
    assert "Visitor: the real task" in text
    assert text.count("Result of search") == 6
    assert text.count("You called the tool search") == 6
    assert "older question" not in text
    assert notes == ["1 earlier message not shown"]


def test_the_prompt_fits_max_prompt_chars_keeping_the_latest_user_message_whole() -> None:
    messages = conversation(5, result_chars=3000)
    messages.append(user_message("Please add " + "very " * 50 + "big mugs"))
    text, notes = build_prompt(messages, [], max_history=12, max_prompt_chars=2000)
    assert len(text) <= 2000
    assert "Please add " + "very " * 50 + "big mugs" in text
    assert any("not shown" in n or "shortened" in n for n in notes)
    assert "[Conversation cut to fit:" in text


def test_a_huge_visitor_message_is_cut_but_the_prompt_still_fits() -> None:
    messages = [user_message("x" * 10_000)]
    text, notes = build_prompt(messages, [], max_history=12, max_prompt_chars=1500)
    assert len(text) <= 1500
    assert "the visitor's latest message shortened" in notes


def test_many_tools_shorten_descriptions_first() -> None:
    tools = [{"name": f"tool_{i}", "description": "d" * 400} for i in range(20)]
    text, notes = build_prompt([user_message("hi")], tools, max_history=12, max_prompt_chars=3000)
    assert len(text) <= 3000
    assert "tool descriptions shortened" in notes
    assert "Visitor: hi" in text


CUT_MARKER = re.compile(r"\[… cut (\d+) characters\]")


def twenty_tools(description_chars: int = 150) -> list[dict[str, Any]]:
    """A crowded page: 19 tools with long descriptions, and ``add_to_cart``."""
    tools: list[dict[str, Any]] = [
        {
            "name": f"tool_{i}",
            "title": f"Tool number {i}",
            "description": (f"Tool {i} does one thing on this page. " + "d" * 300)[
                :description_chars
            ],
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for i in range(19)
    ]
    tools.append(
        {
            "name": "add_to_cart",
            "title": "Add to cart",
            "description": "Add a product to the cart, by its name or id, with a quantity.",
            "inputSchema": {"type": "object", "properties": {"product": {"type": "string"}}},
        }
    )
    return tools


def current_turn(result_chars: int = 4000) -> list[dict[str, Any]]:
    """The visitor's message, the call the model just made and its (long) result."""
    result = ("Added 2 × Classic mug. " + "The cart has 2 items. " * 400)[:result_chars]
    return [
        user_message("add two mugs to my cart"),
        tool_call_message("now", "add_to_cart", {"product": "mug", "quantity": 2}),
        tool_result_message("now", "add_to_cart", result),
    ]


def assert_current_turn_shown(text: str) -> None:
    assert "Visitor: add two mugs to my cart" in text
    assert 'You called the tool add_to_cart with {"product": "mug", "quantity": 2}' in text
    assert "Result of add_to_cart: Added 2 × Classic mug. The cart has 2 items." in text
    # The current turn comes last, in order.
    visitor = text.index("Visitor: add two mugs to my cart")
    assert visitor < text.index("You called the tool add_to_cart") < text.index("Result of add")


def test_reviewer_case_a_long_result_is_shortened_not_the_current_turn_dropped() -> None:
    """20 tools, the default 6000 characters, a 4000-character result (the default
    ``max_result_chars``): the model still sees the call it made and the head of its result."""
    messages = [*conversation(2), *current_turn(4000)]
    text, notes = build_prompt(messages, twenty_tools(), max_history=12, max_prompt_chars=6000)
    assert len(text) <= 6000
    assert_current_turn_shown(text)
    (cut,) = CUT_MARKER.findall(text.split("Conversation so far:")[1])  # the result, visibly
    assert 0 < int(cut) < 4000
    assert "1 long tool result shortened" in notes
    assert "[Conversation cut to fit:" in text
    assert text.rstrip().endswith(REPLY_FORMAT)


def test_nothing_is_cut_when_everything_fits() -> None:
    messages = [*conversation(2), *current_turn(500)]
    text, notes = build_prompt(messages, twenty_tools(), max_history=12, max_prompt_chars=6000)
    assert notes == []
    assert "cut" not in text.lower().replace("add_to_cart", "")
    assert "question 0" in text and "r" * 50 in text
    assert_current_turn_shown(text)


def test_older_results_are_shortened_before_older_turns_are_dropped() -> None:
    older = [
        user_message("find red mugs"),
        tool_call_message("old", "search", {"q": "red mugs"}),
        tool_result_message("old", "search", "Red enamel mug. " + "o" * 3000),
    ]
    text, notes = build_prompt(
        [*older, *current_turn(300)], [], max_history=12, max_prompt_chars=2500
    )
    assert len(text) <= 2500
    assert "Visitor: find red mugs" in text  # the older turn is still there ...
    assert "Result of search: Red enamel mug. ooo" in text  # ... with the head of its result
    assert not any("not shown" in n for n in notes)
    assert "1 long tool result shortened" in notes
    assert_current_turn_shown(text)
    assert current_turn(300)[2]["content"] in text  # the current result was not touched


def test_older_turns_are_dropped_oldest_first_and_the_current_turn_stays() -> None:
    messages = [*conversation(8, result_chars=400), *current_turn(1500)]
    text, notes = build_prompt(messages, twenty_tools(), max_history=40, max_prompt_chars=3500)
    assert len(text) <= 3500
    assert_current_turn_shown(text)
    assert "question 0" not in text  # the oldest went first ...
    kept = [i for i in range(8) if f"question {i}" in text]
    assert kept == list(range(8 - len(kept), 8))  # ... and what is left is the newest
    assert any(n.endswith("earlier messages not shown") for n in notes)


def test_the_tool_list_is_shortened_before_the_current_turn() -> None:
    turn = [
        *current_turn(1100),
        tool_call_message("next", "add_to_cart", {"product": "tote", "quantity": 1}),
        tool_result_message("next", "add_to_cart", "Added 1 × Linen tote bag. " + "t" * 1070),
    ]
    messages = [*conversation(3), *turn]
    text, notes = build_prompt(messages, twenty_tools(300), max_history=12, max_prompt_chars=3500)
    assert len(text) <= 3500
    assert "tool descriptions shortened" in notes
    assert "question 0" not in text  # older turns went before the tool list was shortened
    assert_current_turn_shown(text)
    conversation_text = text.split("Conversation so far:")[1]
    assert CUT_MARKER.search(conversation_text) is None  # both results whole
    assert "t" * 1070 in conversation_text
    for i in range(19):  # every tool is still listed by name
        assert f"- tool_{i}" in text
    assert "- add_to_cart" in text


def test_max_history_never_hides_the_current_turn() -> None:
    messages = [*conversation(4), *current_turn(200)]
    text, notes = build_prompt(messages, [], max_history=2, max_prompt_chars=6000)
    assert_current_turn_shown(text)
    assert "question 3" not in text
    assert notes == ["12 earlier messages not shown"]


def test_a_long_current_turn_fits_keeping_the_visitor_message_and_the_latest_step() -> None:
    messages: list[dict[str, Any]] = [user_message("compare every plan")]
    for i in range(50):
        messages.append(tool_call_message(f"c{i}", "plan", {"n": i}))
        messages.append(tool_result_message(f"c{i}", "plan", f"plan {i}: " + "p" * 3990))
    text, notes = build_prompt(messages, twenty_tools(), max_history=12, max_prompt_chars=6000)
    assert len(text) <= 6000
    assert "Visitor: compare every plan" in text
    assert 'You called the tool plan with {"n": 49}' in text
    assert "Result of plan: plan 49: ppp" in text
    assert any(
        n.endswith("calls and results for the visitor's latest message not shown") for n in notes
    )


@pytest.mark.parametrize("limit", [1000, 1500, 3000, 6000, 20_000])
@pytest.mark.parametrize("result_chars", [0, 500, 4000])
@pytest.mark.parametrize("tool_count", [0, 20, 200])
def test_the_prompt_always_fits_and_always_ends_with_the_reply_format(
    limit: int, result_chars: int, tool_count: int
) -> None:
    tools = (twenty_tools(300) * 10)[:tool_count]
    messages = [*conversation(5, result_chars=result_chars), *current_turn(result_chars)]
    text, _ = build_prompt(messages, tools, max_history=12, max_prompt_chars=limit)
    assert len(text) <= limit
    assert text.endswith(REPLY_FORMAT)
    assert "Visitor: add two mugs to my cart" in text


def test_response_constraint_is_a_valid_schema_that_accepts_the_replies() -> None:
    tools = [
        {"name": "a", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
        {"name": "broken", "inputSchema": {"type": "(unusable inputSchema: x)"}},
        {"name": "refs", "inputSchema": {"$ref": "#/$defs/x", "$defs": {"x": {}}}},
        {"name": "none"},
    ]
    constraint = response_constraint(tools)
    jsonschema.Draft202012Validator.check_schema(constraint)
    v = jsonschema.Draft202012Validator(constraint)
    assert v.is_valid({"type": "answer", "text": "hi"})
    assert v.is_valid({"type": "tool", "name": "a", "arguments": {"x": "1"}})
    assert not v.is_valid({"type": "tool", "name": "a", "arguments": {"x": 1}})
    assert not v.is_valid({"type": "tool", "name": "zzz", "arguments": {}})
    assert v.is_valid({"type": "tool", "name": "broken", "arguments": {}})
    assert v.is_valid({"type": "tool", "name": "refs", "arguments": {}})
    assert [b["properties"].get("name") for b in constraint["anyOf"]][1:] == [
        {"const": n} for n in ("a", "broken", "refs", "none")
    ]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        chrome_built_in(languages=())
    with pytest.raises(ValueError):
        chrome_built_in(max_history=0)
    with pytest.raises(ValueError):
        chrome_built_in(max_prompt_chars=10)
    assert chrome_built_in(languages="ja").languages == ("ja",)
    assert isinstance(chrome_built_in(), ChromeBuiltIn)
    assert chrome_built_in().name == "chrome built-in"


def test_a_whole_run_with_the_agent() -> None:
    added: list[Any] = []
    tool = sa.Tool(
        "add_to_cart",
        "Add a product",
        lambda args: added.append(args) or "added",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )
    lm = FakeLanguageModel(
        replies=[
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}},
            {"type": "answer", "text": "Added."},
        ]
    )
    agent = sa.create_site_agent(model=chrome_built_in(language_model=lm), tools=[tool])

    async def main() -> Any:
        return await agent.run("add a mug").done

    result = run(main())
    assert result.status == "answered" and result.answer == "Added."
    assert added == [{"id": "mug"}]
    second_prompt = lm.sessions[1].prompts[0][0]
    assert "Result of add_to_cart: added" in second_prompt
    assert all(s.destroyed for s in lm.sessions)


# -- sessions: one base session per page, tool revision and conversation --------------------


def shop_tool(description: str = "Add a product") -> sa.Tool:
    return sa.Tool(
        "add_to_cart",
        description,
        lambda args: "added",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )


def test_create_is_called_once_per_tool_revision_not_per_step() -> None:
    lm = FakeLanguageModel(
        replies=[
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}},
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "tote"}},
            {"type": "answer", "text": "Added both."},
            {"type": "answer", "text": "Anything else?"},
        ]
    )
    model = chrome_built_in(language_model=lm)
    source = sa.PythonToolSource([shop_tool()])
    agent = sa.create_site_agent(model=model, tools=source)

    async def main() -> None:
        assert (await agent.run("add a mug and a tote").done).status == "answered"
        assert len(lm.created) == 1 and len(lm.sessions) == 3  # one base, a clone per step
        assert (await agent.run("thanks").done).answer == "Anything else?"
        assert len(lm.created) == 1
        source.unregister("add_to_cart")  # the tools change: a new base session
        source.register(shop_tool("Add a product to the cart"))
        lm.replies.append({"type": "answer", "text": "ok"})
        await agent.run("hello").done

    run(main())
    assert len(lm.created) == 2 and model.sessions_created == 2
    assert lm.created[0].destroyed and not lm.created[1].destroyed
    assert all(s.destroyed for s in lm.sessions)  # every step's clone
    assert all(s.clone_options is not None and "signal" in s.clone_options for s in lm.sessions)


def test_reset_and_a_hidden_page_destroy_the_base_session() -> None:
    document = Target()
    document.visibilityState = "visible"  # type: ignore[attr-defined]
    lm = FakeLanguageModel(replies=[{"type": "answer", "text": "hi"}] * 4)
    model = chrome_built_in(language_model=lm, document=document)
    agent = sa.create_site_agent(model=model, tools=[shop_tool()])

    async def main() -> None:
        await agent.run("hi").done
        agent.reset()  # a new conversation
        assert lm.created[0].destroyed
        await agent.run("hi").done
        assert len(lm.created) == 2 and not lm.created[1].destroyed
        document.visibilityState = "hidden"  # type: ignore[attr-defined]
        document.dispatch("visibilitychange")
        assert lm.created[1].destroyed
        await agent.run("hi").done
        assert len(lm.created) == 3

    run(main())
    assert len(document.listeners["visibilitychange"]) == 1
    baseline = ffi.live_callbacks()
    model.close()
    assert document.listeners["visibilitychange"] == [] and lm.created[2].destroyed
    assert ffi.live_callbacks() == baseline - 1


def test_a_base_session_the_browser_dropped_is_made_again() -> None:
    lm = FakeLanguageModel(
        replies=[{"type": "answer", "text": "a"}, {"type": "answer", "text": "b"}]
    )
    model = chrome_built_in(language_model=lm)
    assert run(model.respond(request()))["text"] == "a"
    lm.created[0].destroyed = True  # e.g. the model process went away
    assert run(model.respond(request()))["text"] == "b"
    assert len(lm.created) == 2


# -- schemas: $defs/$ref, recursion, the argument structure -----------------------------------

TREE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "size": {"type": "string", "enum": ["S", "M", "L"]},
        "node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["label"],
        },
    },
    "properties": {
        "size": {"$ref": "#/$defs/size", "description": "shirt size"},
        "tree": {"$ref": "#/$defs/node"},
    },
    "required": ["size"],
}


def test_refs_are_inlined_and_recursion_is_cut_at_the_documented_depth() -> None:
    from pysite_agent.models.chrome import REF_DEPTH, inline_refs

    out = inline_refs(TREE_SCHEMA)
    assert "$defs" not in json.dumps(out) and "$ref" not in json.dumps(out)
    assert out["properties"]["size"] == {
        "type": "string",
        "enum": ["S", "M", "L"],
        "description": "shirt size",
    }
    depth, node = 0, out["properties"]["tree"]
    while node:
        depth += 1
        node = node["properties"]["children"]["items"]
    assert depth == REF_DEPTH  # then {} (any value)
    jsonschema.Draft202012Validator.check_schema(out)
    # the constraint now carries the structure: a wrong size is outside it
    v = jsonschema.Draft202012Validator(
        response_constraint([{"name": "t", "inputSchema": TREE_SCHEMA}])
    )
    assert v.is_valid({"type": "tool", "name": "t", "arguments": {"size": "M"}})
    assert not v.is_valid({"type": "tool", "name": "t", "arguments": {"size": "XXL"}})
    assert inline_refs({"$ref": "https://example.com/x.json"}) == {}


def test_the_prompt_tells_each_tools_argument_structure() -> None:
    from pysite_agent.models.chrome import argument_structure

    assert argument_structure(TREE_SCHEMA) == (
        '(size: "S"|"M"|"L", tree?: {label: string, children?: {label: string, children?: '
        "object[]}[]})"
    )
    text, _ = build_prompt(
        [user_message("hi")], request().tools, max_history=12, max_prompt_chars=6000
    )
    assert "- add_to_cart(id: string, qty?: integer): Add a product to the cart" in text


# -- constraint mode: streaming only answer text ----------------------------------------------


def test_answer_stream_decodes_escapes_split_across_chunks() -> None:
    from pysite_agent.models.chrome import AnswerStream

    reply = json.dumps({"type": "answer", "text": 'Two "mugs"\\n — ok ☕ 𝄞\n'})
    for size in (1, 2, 3, 5, 100):
        stream = AnswerStream()
        out = "".join(stream.feed(reply[i : i + size]) for i in range(0, len(reply), size))
        assert out == json.loads(reply)["text"], size
    tool = json.dumps({"type": "tool", "name": "a", "arguments": {"text": "x"}})
    stream = AnswerStream()
    assert "".join(stream.feed(c) for c in tool) == ""
    other_order = '{"text": "hi", "type": "answer"}'
    stream = AnswerStream()
    assert "".join(stream.feed(c) for c in other_order) == ""


def test_constraint_mode_streams_the_answer_only() -> None:
    lm = FakeLanguageModel(
        replies=[
            {"type": "answer", "text": "Your cart has two mugs."},
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "answer"}},
        ]
    )
    model = chrome_built_in(language_model=lm)
    fragments: list[str] = []
    reply = run(model.respond(request(on_text=fragments.append)))
    assert reply == {"type": "answer", "text": "Your cart has two mugs."}
    assert len(fragments) > 2 and "".join(fragments) == reply["text"]
    assert model.last_mode == "constraint"
    (_, options) = lm.sessions[0].prompts[0]
    assert options["responseConstraint"]["anyOf"][0]["properties"]["type"] == {"const": "answer"}
    fragments.clear()
    assert run(model.respond(request(on_text=fragments.append)))["type"] == "tool"
    assert fragments == []  # never tool-call JSON


# -- native tool use --------------------------------------------------------------------------


def native_model(lm: FakeLanguageModel, **kw: Any) -> ChromeBuiltIn:
    return chrome_built_in(language_model=lm, tool_types=TOOL_TYPES, **kw)


def call_part(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool-call",
        "value": ToolCall({"callID": "", "name": name, "arguments": arguments}),
    }


def test_native_tools_are_declared_at_create_and_calls_read_from_the_stream() -> None:
    lm = FakeLanguageModel(
        replies=[["Let me ", "add it. ", call_part("add_to_cart", {"id": "mug"})]]
    )
    model = native_model(lm)
    fragments: list[str] = []
    tools = [{"name": "t", "title": "Tree", "description": "A tree", "inputSchema": TREE_SCHEMA}]
    reply = run(model.respond(request(tools=tools, on_text=fragments.append)))
    assert reply == {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}}
    assert fragments == ["Let me ", "add it. "]
    assert model.last_mode == "native"
    (base,) = lm.created
    (declared,) = base.options["tools"]
    assert declared["name"] == "t" and declared["description"] == "Tree. A tree"
    assert "$ref" not in json.dumps(declared["inputSchema"])
    kinds = [e["type"] for e in base.options["expectedOutputs"]]
    assert kinds == ["text", "tool-call"]
    assert [e["type"] for e in base.options["expectedInputs"]] == [
        "text",
        "tool-call",
        "tool-response",
    ]
    (value, options) = lm.sessions[0].prompts[0]
    assert "responseConstraint" not in options
    assert value == [{"role": "user", "content": "add two mugs"}]


def test_native_several_calls_use_the_first_and_refuse_the_rest() -> None:
    lm = FakeLanguageModel(
        replies=[[call_part("add_to_cart", {"id": "mug"}), "x", call_part("checkout", {})]]
    )
    model = native_model(lm)
    fragments: list[str] = []
    reply = run(model.respond(request(on_text=fragments.append)))
    assert reply["name"] == "add_to_cart" and model.last_refused == ["checkout"]
    assert fragments == []  # text after a call is not the answer


def test_native_history_uses_the_browser_classes_and_no_null_reaches_a_result() -> None:
    from pysite_agent.models.chrome import NULL_PLACEHOLDER

    messages = [
        user_message("what is in my cart?"),
        tool_call_message("call_1", "view_cart", {"note": None}),
        tool_result_message(
            "call_1", "view_cart", json.dumps({"items": ["mug", None], "coupon": None})
        ),
        tool_call_message("call_2", "add_to_cart", {"id": "x"}),
        tool_result_message("call_2", "add_to_cart", "denied", is_error=True, denied=True),
        tool_call_message("call_3", "read_reviews", {}),
        tool_result_message(
            "call_3",
            "read_reviews",
            '<untrusted-data tool="read_reviews">{"a": null}</untrusted-data>',
            untrusted=True,
        ),
    ]
    lm = FakeLanguageModel(replies=[["You have a mug."]])
    model = native_model(lm)
    reply = run(model.respond(request(messages)))
    assert reply == {"type": "answer", "text": "You have a mug."}
    (value, _) = lm.sessions[0].prompts[0]
    assert value[0] == {"role": "user", "content": "what is in my cart?"}
    call = value[1]["content"][0]["value"]
    assert isinstance(call, ToolCall) and call.arguments == {} and call.callID == "call_1"
    result = value[2]["content"][0]["value"]
    assert isinstance(result, ToolSuccess) and result.callID == "call_1"
    assert result.result == [{"type": "object", "value": {"items": ["mug", NULL_PLACEHOLDER]}}]
    denied = value[4]["content"][0]["value"]
    assert isinstance(denied, ToolError) and "Denied by the visitor" in denied.errorMessage
    untrusted = value[6]["content"][0]["value"]
    assert (
        untrusted.result[0]["type"] == "text" and "<untrusted-data" in untrusted.result[0]["value"]
    )


def test_native_is_used_only_when_the_browser_offers_it() -> None:
    reply = {"type": "answer", "text": "hi"}
    lm = FakeLanguageModel(replies=[reply])
    lm.tool_state = "unavailable"  # availability() with tool-call types
    model = native_model(lm)
    run(model.respond(request()))
    assert model.last_mode == "constraint" and "tools" not in lm.created[0].options
    lm = FakeLanguageModel(replies=[reply])
    model = chrome_built_in(language_model=lm)  # no tool classes
    run(model.respond(request()))
    assert model.last_mode == "constraint"
    lm = FakeLanguageModel(replies=[reply])
    model = native_model(lm, tool_use=False)
    run(model.respond(request()))
    assert model.last_mode == "constraint"


def test_a_whole_native_run_with_the_agent() -> None:
    added: list[Any] = []
    tool = sa.Tool(
        "add_to_cart",
        "Add a product",
        lambda args: added.append(args) or json.dumps({"cart": ["mug"], "coupon": None}),
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )
    lm = FakeLanguageModel(
        replies=[[call_part("add_to_cart", {"id": "mug"})], ["Added ", "a mug."]]
    )
    agent = sa.create_site_agent(model=native_model(lm), tools=[tool])

    async def main() -> Any:
        run_ = agent.run("add a mug")
        result = await run_.done
        return result, [e.to_json() for e in run_.events]

    result, events = run(main())
    assert result.status == "answered" and result.answer == "Added a mug."
    assert added == [{"id": "mug"}]
    assert [e["text"] for e in events if e["type"] == "text-delta"] == ["Added ", "a mug."]
    assert len(lm.created) == 1 and len(lm.sessions) == 2


def test_native_abort_stops_the_stream_and_destroys_the_clone() -> None:
    lm = FakeLanguageModel(replies=["WAIT"])
    model = native_model(lm)

    async def main() -> None:
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.2, controller.abort, "stop")
        with pytest.raises(AbortedError):
            await model.respond(request(signal=controller.signal))

    run(main())
    assert lm.sessions[0].destroyed and not lm.created[0].destroyed


# -- the context window -----------------------------------------------------------------------


def test_a_prompt_is_trimmed_to_the_context_window() -> None:
    lm = FakeLanguageModel(replies=[{"type": "answer", "text": "ok"}])
    lm.context_window = 600  # tokens; 4 characters each in the fake
    model = chrome_built_in(language_model=lm, max_prompt_chars=20_000)
    messages = [*conversation(6, result_chars=2000), *current_turn(500)]
    run(model.respond(request(messages)))
    (text, _) = lm.sessions[0].prompts[0]
    assert len(text) // 4 <= (600 - 50) * 0.8
    assert any("context window" in note for note in model.last_cut)
    assert "Visitor: add two mugs to my cart" in text


def test_a_context_overflow_makes_later_prompts_smaller() -> None:
    lm = FakeLanguageModel(replies=[["fine"], ["fine"]])
    lm.overflow_on_prompt = True
    model = native_model(lm, max_prompt_chars=4000)
    messages = [*conversation(6, result_chars=2000), *current_turn(500)]
    run(model.respond(request(messages)))
    assert "contextoverflow" in model.last_cut[-1]
    first = lm.measured[-1]
    run(model.respond(request(messages)))
    assert lm.measured[-1] < first


def test_a_step_without_tools_uses_the_constraint_even_with_native_tool_use() -> None:
    messages = [
        user_message("add a mug"),
        tool_call_message("call_1", "add_to_cart", {"id": "mug"}),
        tool_result_message("call_1", "add_to_cart", "added"),
    ]
    lm = FakeLanguageModel(replies=[{"type": "answer", "text": "Done."}])
    model = native_model(lm)
    assert run(model.respond(request(messages, tools=[]))) == {"type": "answer", "text": "Done."}
    assert model.last_mode == "constraint" and "tools" not in lm.created[0].options
    (text, _) = lm.sessions[0].prompts[0]
    assert "Result of add_to_cart: added" in text  # earlier calls as text


def test_stopping_a_run_after_its_step_leaves_the_base_session() -> None:
    lm = FakeLanguageModel(
        replies=[{"type": "answer", "text": "a"}, {"type": "answer", "text": "b"}]
    )
    model = chrome_built_in(language_model=lm)
    controller = AbortController()
    run(model.respond(request(signal=controller.signal)))
    controller.abort("stopped by the visitor")  # after the step: the run is stopped
    assert not lm.created[0].destroyed
    assert run(model.respond(request()))["text"] == "b"
    assert len(lm.created) == 1
