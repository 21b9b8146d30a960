"""The streaming seam: ``ModelRequest.on_text`` fragments become ``text-delta`` events.

What follows the fragments says what they were: ``answer`` (final text), ``tool-call`` (the text
stays as part of that step) or ``error`` (the text stays, incomplete). The trace is unchanged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call, types

import pysite_agent as sa
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.wire import validator


def streamed(fragments: list[Any], reply: Any) -> Callable[[ModelRequest], Any]:
    """A scripted step that writes ``fragments`` through ``on_text`` (yielding between them)."""

    async def step(request: ModelRequest) -> Any:
        assert request.on_text is not None
        for fragment in fragments:
            request.on_text(fragment)
            await asyncio.sleep(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    return step


def deltas(events: list[Any]) -> list[str]:
    return [e.text for e in events if e.type == "text-delta"]


def test_fragments_become_text_delta_events_before_the_answer() -> None:
    model = ScriptedModel(
        [streamed(["The mug ", "costs ", "8 EUR."], answer("The mug costs 8 EUR."))]
    )
    agent = sa.create_site_agent(model=model, tools=Shop().tools())
    events, result = run(ask(agent, "price of the mug?"))
    assert types(events) == ["thinking"] + ["text-delta"] * 3 + ["answer", "done"]
    assert deltas(events) == ["The mug ", "costs ", "8 EUR."]
    assert next(e.to_json() for e in events if e.type == "text-delta") == {
        "type": "text-delta",
        "text": "The mug ",
    }
    assert result.answer == "The mug costs 8 EUR."
    # The trace records the final text only: no delta appears in it.
    steps = result.trace["steps"]
    assert [s["kind"] for s in steps] == ["user", "model", "answer"]
    assert steps[-1]["text"] == "The mug costs 8 EUR."
    assert "text-delta" not in json.dumps(result.trace)
    assert validator("trace-v1").is_valid(result.trace)


def test_the_final_answer_wins_over_the_fragments() -> None:
    model = ScriptedModel([streamed(["draft"], answer("final"))])
    agent = sa.create_site_agent(model=model, tools=Shop().tools())
    events, result = run(ask(agent, "hi"))
    assert deltas(events) == ["draft"]
    assert [e.text for e in events if e.type == "answer"] == ["final"]
    assert result.answer == "final"


def test_text_then_a_tool_call_in_the_same_step() -> None:
    model = ScriptedModel(
        [
            streamed(["Let me look that up."], tool_call("search", {"query": "mug"})),
            streamed(["Found ", "it."], answer("Found it.")),
        ]
    )
    agent = sa.create_site_agent(model=model, tools=Shop().tools())
    events, result = run(ask(agent, "find a mug"))
    assert types(events) == [
        "thinking",
        "text-delta",
        "tool-call",
        "tool-result",
        "thinking",
        "text-delta",
        "text-delta",
        "answer",
        "done",
    ]
    assert result.status == "answered" and result.answer == "Found it."
    # The conversation the model sees next holds the call, not the preview text.
    assert model.requests[1].messages[1]["toolCall"]["name"] == "search"


def test_a_failure_mid_stream_keeps_the_fragments_and_ends_with_the_error() -> None:
    failure = sa.SiteAgentError("model-error", "The proxy's stream ended early.")
    model = ScriptedModel([streamed(["Half an ", "answ"], failure)])
    agent = sa.create_site_agent(model=model, tools=Shop().tools())
    events, result = run(ask(agent, "hi"))
    assert types(events) == ["thinking", "text-delta", "text-delta", "error", "done"]
    assert deltas(events) == ["Half an ", "answ"]
    assert result.status == "error" and result.error is not None
    assert result.error.code == "model-error"
    # The trace records what it always did for a failed model call: no partial answer.
    assert [s["kind"] for s in result.trace["steps"]] == ["user", "error"]


def test_empty_and_non_text_fragments_are_dropped() -> None:
    model = ScriptedModel([streamed(["", None, 5, "ok"], answer("ok"))])
    agent = sa.create_site_agent(model=model, tools=Shop().tools())
    events, _ = run(ask(agent, "hi"))
    assert deltas(events) == ["ok"]


def test_a_late_fragment_after_the_step_returned_is_dropped() -> None:
    kept: list[Callable[[str], None]] = []

    def step(request: ModelRequest) -> Any:
        assert request.on_text is not None
        kept.append(request.on_text)
        request.on_text("early")
        return tool_call("search", {"query": "mug"})

    def late(request: ModelRequest) -> Any:
        kept[0]("late, from step one")  # after step one's tool-call: must not show
        return answer("done")

    agent = sa.create_site_agent(model=ScriptedModel([step, late]), tools=Shop().tools())
    events, _ = run(ask(agent, "find a mug"))
    assert deltas(events) == ["early"]


def test_no_fragment_after_abort() -> None:
    async def scenario() -> tuple[list[Any], sa.RunResult]:
        started = asyncio.Event()
        holder: list[ModelRequest] = []

        async def step(request: ModelRequest) -> Any:
            holder.append(request)
            assert request.on_text is not None
            request.on_text("before")
            started.set()
            await asyncio.sleep(10)
            return answer("never")

        agent = sa.create_site_agent(model=ScriptedModel([step]), tools=Shop().tools())
        agent_run = agent.run("hi")
        await started.wait()
        agent_run.abort()
        assert holder[0].on_text is not None
        holder[0].on_text("after")
        result = await agent_run.done
        return agent_run.events, result

    events, result = run(scenario())
    assert deltas(events) == ["before"]
    assert result.status == "aborted"


def test_adapters_that_do_not_stream_give_no_delta() -> None:
    agent = sa.create_site_agent(model=ScriptedModel([answer("plain")]), tools=Shop().tools())
    events, _ = run(ask(agent, "hi"))
    assert "text-delta" not in types(events)


def test_on_text_is_not_part_of_equality_or_repr() -> None:
    a = ModelRequest("i", [], [], on_text=lambda t: None)
    b = ModelRequest("i", [], [])
    assert a == b
    assert "on_text" not in repr(a)
    assert a.to_json() == b.to_json()
