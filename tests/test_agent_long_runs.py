"""Long conversations and loops through the bridge: the trim step, the safety state
that trimming never touches, and the loop breaker."""

from __future__ import annotations

import json
from typing import Any

from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call, types
from test_models_chrome import FakeLanguageModel

import pysite_agent as sa
from pysite_agent.__main__ import main as cli_main
from pysite_agent.core.wire import problems
from pysite_agent.models.chrome import chrome_built_in
from pysite_agent.models.proxy import proxy


class Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self._body = json.dumps(body)
        self.headers: dict[str, str] = {}

    async def text(self) -> str:
        return self._body


class ScriptedEndpoint:
    """A ``fetch`` for ``proxy()`` that answers from a script and records each body."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, url: str, init: dict[str, Any]) -> Response:
        body = json.loads(init["body"])
        self.bodies.append(body)
        reply = self.replies.pop(0) if self.replies else answer("ok")
        if callable(reply):
            reply = reply(body)
        return reply if isinstance(reply, Response) else Response(200, reply)


def step_kinds(result: sa.RunResult) -> list[str]:
    return [s["kind"] for s in result.trace["steps"]]


def test_a_trim_is_a_trace_step_that_validates() -> None:
    shop = Shop()
    endpoint = ScriptedEndpoint([])
    agent = sa.create_site_agent(
        model=proxy("/api", fetch=endpoint, max_messages=6), tools=shop.tools()
    )

    async def main() -> list[sa.RunResult]:
        return [(await ask(agent, f"question {n}"))[1] for n in range(5)]

    results = run(main())
    assert [len(b["messages"]) for b in endpoint.bodies] == [1, 3, 5, 5, 5]
    assert "trim" not in step_kinds(results[1])
    steps = results[4].trace["steps"]
    trim = next(s for s in steps if s["kind"] == "trim")
    assert trim["step"] == 1
    assert trim["droppedMessages"] == 4 and trim["sentMessages"] == 5
    assert trim["reason"] == "max-messages" and trim["maxMessages"] == 6
    assert step_kinds(results[4]) == ["user", "trim", "model", "answer"]
    for result in results:
        assert problems("trace-v1", result.trace) == []
    assert len(agent.messages) == 10  # the agent's own conversation is never trimmed


def test_trimming_never_clears_the_untrusted_state() -> None:
    """The untrusted result leaves the model's view; every non-read-only call still asks."""
    shop = Shop()
    asked: list[sa.ConfirmRequest] = []
    endpoint = ScriptedEndpoint(
        [
            tool_call("get_reviews", {"product": "mug"}),
            answer("Reviews read."),
            answer("a"),
            answer("b"),
            answer("c"),
            tool_call("add_to_cart", {"product": "mug", "quantity": 1}),
            answer("done"),
        ]
    )
    agent = sa.create_site_agent(
        model=proxy("/api", fetch=endpoint, max_messages=4),
        tools=shop.tools(),
        pre_approved=["add_to_cart"],
        confirm=lambda request: asked.append(request) or True,
    )

    async def main() -> sa.RunResult:
        for text in ("reviews?", "x", "y", "z"):
            await ask(agent, text)
        return (await ask(agent, "add a mug"))[1]

    result = run(main())
    last_bodies = endpoint.bodies[-2:]
    for body in last_bodies:
        assert all(not m.get("untrusted") for m in body["messages"])  # trimmed away
    assert [r.reason for r in asked] == ["after-untrusted"]
    assert agent.after_untrusted is True
    decision = next(s for s in result.trace["steps"] if s["kind"] == "decision")
    assert decision["reason"] == "after-untrusted" and decision["by"] == "visitor"


# --- the loop breaker ---------------------------------------------------------------------


def failing_search(shop: Shop) -> list[sa.Tool]:
    """The shop's tools, with a search that fails (a failed call is not "already done")."""

    def search(args: dict[str, Any]) -> str:
        shop.calls.append(("search_products", args))
        raise RuntimeError("the search index is down")

    tools = [t for t in shop.tools() if t.name != "search_products"]
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    return [sa.Tool("search_products", "Search.", search, schema, {"readOnlyHint": True}), *tools]


def test_the_third_identical_call_is_not_run() -> None:
    shop = Shop()
    same = tool_call("search_products", {"query": "mug"})
    model = ScriptedModel([same, same, same, answer("never")])
    agent = sa.create_site_agent(model=model, tools=failing_search(shop), max_steps=10)
    events, result = run(ask(agent, "find mugs"))
    assert result.status == "error"
    assert result.error is not None and result.error.code == "repeated-call"
    assert "3 times in a row" in result.error.message
    assert shop.calls == [("search_products", {"query": "mug"})] * 2
    assert len(model.requests) == 3
    assert types(events)[-2:] == ["error", "done"]
    error_event = events[-2]
    assert error_event.to_json()["code"] == "repeated-call"
    assert step_kinds(result)[-2:] == ["model", "error"]
    assert result.trace["steps"][-1]["code"] == "repeated-call"
    assert problems("trace-v1", result.trace) == []
    # the conversation stays well formed: every call has its result
    roles = [m["role"] for m in agent.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    # a new run starts fresh
    model.replies = [same, answer("ok")]
    agent = sa.create_site_agent(model=model, tools=shop.tools(), max_steps=10)
    _, again = run(ask(agent, "again"))
    assert again.status == "answered"


def test_arguments_compare_as_canonical_json() -> None:
    shop = Shop()
    calls = [
        tool_call("search_products", {"query": "mug", "x": [1, {"a": 1, "b": 2}]}),
        tool_call("search_products", {"x": [1, {"b": 2, "a": 1}], "query": "mug"}),
        tool_call("search_products", {"x": [1, {"a": 1, "b": 2}], "query": "mug"}),
    ]
    agent = sa.create_site_agent(
        model=ScriptedModel(calls), tools=failing_search(shop), max_steps=10
    )
    _, result = run(ask(agent, "loop"))
    assert result.error is not None and result.error.code == "repeated-call"


def test_denied_and_invalid_calls_count() -> None:
    shop = Shop()
    add = tool_call("add_to_cart", {"product": "mug", "quantity": 1})
    agent = sa.create_site_agent(
        model=ScriptedModel([add, add, add]),
        tools=shop.tools(),
        confirm=lambda r: False,
        max_steps=10,
    )
    _, result = run(ask(agent, "add"))
    assert result.error is not None and result.error.code == "repeated-call"
    assert shop.calls == []
    bad = tool_call("nope", {"a": 1})
    agent = sa.create_site_agent(model=ScriptedModel([bad] * 3), tools=shop.tools(), max_steps=9)
    _, result = run(ask(agent, "x"))
    assert result.error is not None and result.error.code == "repeated-call"
    assert step_kinds(result).count("invalid-call") == 2


def test_different_or_interleaved_calls_are_not_a_loop() -> None:
    shop = Shop()
    a = tool_call("search_products", {"query": "a"})
    b = tool_call("search_products", {"query": "b"})
    agent = sa.create_site_agent(
        model=ScriptedModel([a, a, b, a, a, answer("ok")]), tools=failing_search(shop), max_steps=10
    )
    _, result = run(ask(agent, "x"))
    assert result.status == "answered"
    assert len(shop.calls) == 5


def test_the_count_starts_again_in_each_run() -> None:
    """Two identical calls in each of two runs: no loop (the count is per run)."""
    shop = Shop()
    same = tool_call("search_products", {"query": "mug"})

    def script() -> list[Any]:
        return [same, same, answer("ok")]

    model = ScriptedModel([*script(), *script()])
    agent = sa.create_site_agent(model=model, tools=failing_search(shop), max_steps=10)

    async def main() -> list[str]:
        return [(await ask(agent, f"q{n}"))[1].status for n in range(2)]

    assert run(main()) == ["answered", "answered"]
    assert len(shop.calls) == 4


def test_chromes_prompt_budget_records_its_cuts_too() -> None:
    model = chrome_built_in(
        max_history=2, language_model=FakeLanguageModel(replies=[json.dumps(answer())] * 4)
    )
    agent = sa.create_site_agent(model=model, tools=Shop().tools())

    async def main() -> sa.RunResult:
        for n in range(3):
            await ask(agent, f"q{n}")
        return (await ask(agent, "last"))[1]

    result = run(main())
    trim = next(s for s in result.trace["steps"] if s["kind"] == "trim")
    assert trim["reason"] == "prompt-chars"
    assert trim["notes"] == model.last_cut == ["5 earlier messages not shown"]
    assert problems("trace-v1", result.trace) == []


# --- the trace schema's versioning rule -------------------------------------------------------


def test_new_step_kinds_are_optional_additions_to_v1(tmp_path: Any) -> None:
    """A trace with trim and page steps and a decision's cause passes the schema, ``trace
    check`` and replay; the same trace without them (as older versions wrote it) does too."""

    shop = Shop()
    agent = sa.create_site_agent(
        model=ScriptedModel([tool_call("add_to_cart", {"product": "mug", "quantity": 1})]),
        tools=shop.tools(),
        confirm=lambda r: True,
    )
    _, result = run(ask(agent, "add a mug"))
    new = json.loads(json.dumps(result.trace))
    at = new["steps"][0]["at"]
    new["steps"][1:1] = [
        {"kind": "page", "at": at, "origin": "http://127.0.0.1:8000", "path": "/shop/mug.html"},
        {"kind": "trim", "at": at, "step": 1, "reason": "max-messages", "droppedMessages": 4},
    ]
    decision = next(s for s in new["steps"] if s["kind"] == "decision")
    decision["cause"] = "navigated"
    old = json.loads(json.dumps(result.trace))
    for trace in (new, old):
        assert problems("trace-v1", trace) == []
        path = tmp_path / "run.json"
        path.write_text(json.dumps(trace), encoding="utf-8")
        assert cli_main(["trace", "check", str(path)]) == 0
        replayed = run(sa.replay(trace, tools=Shop().tools(), confirm=lambda r: True))
        assert replayed.differences == 0
    bad = json.loads(json.dumps(new))
    bad["steps"][1]["path"] = "/shop/mug.html?token=secret"
    assert problems("trace-v1", bad) != []  # a query never goes into a page step
