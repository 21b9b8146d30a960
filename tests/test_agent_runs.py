"""Runs: event order, errors (item 8), abort (rule 7), busy, binding (item 2), trace (item 7)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call, types

import pysite_agent as sa
from pysite_agent.core.wire import problems, validator


def shop_agent(replies: list[Any], **options: Any) -> tuple[sa.SiteAgent, ScriptedModel, Shop]:
    shop = Shop()
    model = ScriptedModel(replies)
    return sa.create_site_agent(model=model, tools=shop.tools(), **options), model, shop


def assert_pairs_valid(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is followed at once by exactly one result for its id."""
    for i, message in enumerate(messages):
        assert validator("protocol-v1", "message").is_valid(message), message
        if "toolCall" in message:
            following = messages[i + 1]
            assert following["role"] == "tool"
            assert following["toolCallId"] == message["toolCall"]["id"]


def test_event_order_for_a_confirmed_call() -> None:
    agent, _, shop = shop_agent(
        [tool_call("add_to_cart", {"product": "mug", "quantity": 2}), answer("done")],
        confirm=lambda r: True,
    )
    events, result = run(ask(agent, "add two mugs"))
    assert types(events) == [
        "thinking",
        "tool-call",
        "confirm-request",
        "confirm-result",
        "tool-result",
        "thinking",
        "answer",
        "done",
    ]
    assert result.status == "answered" and result.answer == "done"
    request = events[2].request.to_json()
    assert request["reason"] == "not-read-only"
    assert request["lines"] == [
        {"key": "product", "label": "Product", "value": "mug"},
        {"key": "quantity", "label": "Quantity", "value": "2"},
    ]
    assert request["tool"]["annotations"] == {"readOnlyHint": False}
    for event in events:
        data = event.to_json()
        assert data["type"] == event.type
        json.dumps(data)
    assert events[-1].to_json()["result"]["status"] == "answered"


def test_trace_v1_is_valid_json_and_round_trips_through_replay() -> None:
    agent, _, shop = shop_agent(
        [
            tool_call("search_products", {"query": "mug"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": "x"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": 2}),
            tool_call("checkout", {}),
            answer("ok"),
        ],
        confirm=lambda r: r.tool.name != "checkout",
    )
    _, result = run(ask(agent, "buy two mugs"))
    trace = json.loads(json.dumps(result.trace))
    assert problems("trace-v1", trace) == []
    assert trace["version"] == 1 and trace["status"] == "answered" and trace["model"] == "scripted"
    kinds = [s["kind"] for s in trace["steps"]]
    assert kinds[0] == "user" and kinds[-1] == "answer"
    assert {"model", "tool-call", "invalid-call", "decision", "tool-result"} <= set(kinds)
    assert all(
        s["durationMs"] >= 0 for s in trace["steps"] if s["kind"] in ("model", "tool-result")
    )
    assert trace["startedAt"].endswith("Z") and trace["endedAt"] >= trace["startedAt"]
    fresh = Shop()
    replayed = run(
        sa.replay(json.dumps(trace), tools=fresh.tools(), confirm=sa.recorded_decisions(trace))
    )
    assert [s.status for s in replayed.steps] == ["ran", "ran", "denied"]
    assert replayed.differences == 0
    assert fresh.cart == {"mug": 2} and fresh.orders == 0


@pytest.mark.parametrize(
    "reply",
    [
        "just text",
        None,
        42,
        ["type", "answer"],
        {"type": "weird"},
        {"type": "tool"},
        {"type": "tool", "name": ""},
        {"type": "tool", "name": 5, "arguments": {}},
        {"type": "answer"},
        {"type": "answer", "text": 7},
        {"type": "tool", "name": "x", "arguments": {}, "meta": "nope"},
    ],
)
def test_malformed_reply_is_bad_reply_and_agent_can_run_again(reply: Any) -> None:
    agent, _, shop = shop_agent([reply, answer("second time")])
    events, result = run(ask(agent, "hi"))
    assert result.status == "error"
    assert result.error is not None and result.error.code == "bad-reply"
    assert types(events)[-2:] == ["error", "done"]
    assert problems("trace-v1", result.trace) == []
    assert result.trace["steps"][-1]["kind"] == "error"
    assert any(s["kind"] == "model" for s in result.trace["steps"])
    _, again = run(ask(agent, "again"))
    assert again.status == "answered" and again.answer == "second time"


@pytest.mark.parametrize("arguments", [None, "not json", "[1, 2]", 5, [1], "null", '"a string"'])
def test_arguments_that_are_not_an_object_are_invalid_calls(arguments: Any) -> None:
    agent, model, shop = shop_agent(
        [{"type": "tool", "name": "search_products", "arguments": arguments}, answer()]
    )
    events, result = run(ask(agent, "x"))
    assert shop.calls == []
    assert result.status == "answered"
    assert "must be a JSON object" in model.requests[1].messages[-1]["content"]


def test_json_string_arguments_that_parse_to_an_object_are_accepted() -> None:
    agent, _, shop = shop_agent(
        [{"type": "tool", "name": "search_products", "arguments": '{"query": "mug"}'}, answer()]
    )
    run(ask(agent, "x"))
    assert shop.calls == [("search_products", {"query": "mug"})]


def test_booleans_are_not_integers() -> None:
    agent, model, shop = shop_agent(
        [tool_call("add_to_cart", {"product": "mug", "quantity": True}), answer()],
        confirm=lambda r: True,
    )
    run(ask(agent, "x"))
    assert shop.cart == {}
    assert '"/quantity"' in model.requests[1].messages[-1]["content"]


def test_invalid_schema_makes_the_tool_uncallable_not_a_crash() -> None:
    tool = sa.Tool(
        "bad", "Bad schema.", lambda a: "ran", {"type": "nonsense"}, {"readOnlyHint": True}
    )
    model = ScriptedModel([tool_call("bad", {}), answer()])
    agent = sa.create_site_agent(model=model, tools=[tool])
    _, result = run(ask(agent, "x"))
    assert result.status == "answered"
    assert "cannot be called" in model.requests[1].messages[-1]["content"]
    step = next(s for s in result.trace["steps"] if s["kind"] == "invalid-call")
    assert step["error"]["code"] == "invalid-schema"


def test_model_that_raises_gives_model_error() -> None:
    agent, _, _ = shop_agent([RuntimeError("provider down"), answer("back")])
    events, result = run(ask(agent, "x"))
    assert result.status == "error" and result.error is not None
    assert result.error.code == "model-error" and "provider down" in result.error.message
    _, again = run(ask(agent, "again"))
    assert again.status == "answered"


def test_model_site_agent_error_code_is_kept() -> None:
    agent, _, _ = shop_agent([sa.SiteAgentError("model-download-required", "download first")])
    _, result = run(ask(agent, "x"))
    assert result.error is not None and result.error.code == "model-download-required"


def test_busy_on_second_run() -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def slow(request: Any) -> Any:
            await gate.wait()
            return answer()

        agent = sa.create_site_agent(model=sa.custom(slow), tools=[])
        first = agent.run("one")
        assert agent.running
        with pytest.raises(sa.SiteAgentError) as info:
            agent.run("two")
        assert info.value.code == "busy"
        gate.set()
        result = await first.done
        assert result.status == "answered" and not agent.running
        assert (await agent.run("three").done).status == "answered"

    run(main())


def test_events_are_buffered_for_late_iteration() -> None:
    async def main() -> None:
        agent, _, _ = shop_agent([tool_call("search_products", {"query": "a"}), answer()])
        r = agent.run("x")
        await r.done
        late = [e.type async for e in r]
        assert late[0] == "thinking" and late[-1] == "done"
        again = [e.type async for e in r]
        assert again == late

    run(main())


def test_abort_while_model_thinks() -> None:
    async def main() -> None:
        never = asyncio.Event()

        async def stuck(request: Any) -> Any:
            await never.wait()

        agent = sa.create_site_agent(model=sa.custom(stuck), tools=[])
        r = agent.run("x")
        await asyncio.sleep(1)
        r.abort()
        result = await r.done
        assert result.status == "aborted" and result.error is not None
        assert result.error.code == "aborted"
        assert [e.type async for e in r][-2:] == ["error", "done"]
        assert not agent.running

    run(main())


def test_abort_while_confirm_pending_closes_the_request_and_runs_nothing() -> None:
    async def main() -> None:
        seen: list[sa.ConfirmRequest] = []
        closed: list[bool] = []
        late = asyncio.Event()

        asked = asyncio.Event()

        async def confirm(request: sa.ConfirmRequest) -> bool:
            seen.append(request)
            asked.set()
            assert request.signal is not None
            request.signal.add_listener(lambda: closed.append(True))
            await late.wait()
            return True

        agent, _, shop = shop_agent(
            [tool_call("add_to_cart", {"product": "mug", "quantity": 1}), answer()], confirm=confirm
        )
        r = agent.run("x")
        await asyncio.wait_for(asked.wait(), 10)
        r.abort()
        result = await r.done
        late.set()
        await asyncio.sleep(1)
        assert result.status == "aborted"
        assert closed == [True]
        assert shop.cart == {}
        assert_pairs_valid(agent.messages)

    run(main())


def test_abort_while_tool_runs_signals_the_tool_and_stops_waiting() -> None:
    async def main() -> None:
        tool_signal: list[sa.AbortSignal] = []
        started = asyncio.Event()
        after: list[str] = []

        async def slow(args: dict[str, Any], signal: sa.AbortSignal) -> str:
            tool_signal.append(signal)
            started.set()
            await asyncio.sleep(100)
            after.append("finished")
            return "late"

        tools = [
            sa.Tool("slow", "Slow.", slow, None, {"readOnlyHint": True}),
            sa.Tool(
                "other", "Other.", lambda a: after.append("other"), None, {"readOnlyHint": True}
            ),
        ]
        model = ScriptedModel([tool_call("slow"), tool_call("other"), answer()])
        agent = sa.create_site_agent(model=model, tools=tools)
        r = agent.run("x")
        await started.wait()
        r.abort()
        result = await r.done
        assert result.status == "aborted"
        assert tool_signal[0].aborted
        await asyncio.sleep(200)
        assert after == []
        assert len(model.requests) == 1
        assert_pairs_valid(agent.messages)
        outcome = next(s for s in result.trace["steps"] if s["kind"] == "tool-result")["outcome"]
        assert outcome == "aborted"

    run(main())


def test_external_signal_aborts_the_run() -> None:
    async def main() -> None:
        controller = sa.AbortController()
        controller.abort("gone")
        agent, model, _ = shop_agent([answer()])
        result = await agent.run("x", signal=controller.signal).done
        assert result.status == "aborted" and model.requests == []

    run(main())


def test_stale_tools_when_the_page_re_registers_during_confirmation() -> None:
    async def main() -> None:
        source = sa.PythonToolSource()
        first_runs: list[int] = []
        second_runs: list[int] = []
        schema = {"type": "object", "properties": {}}
        source.register(sa.Tool("buy", "Buy.", lambda a: first_runs.append(1), schema, {}))

        async def confirm(request: sa.ConfirmRequest) -> bool:
            # While the card is open, the page swaps the tool for another of the same name.
            source.unregister("buy")
            source.register(sa.Tool("buy", "Buy.", lambda a: second_runs.append(1), schema, {}))
            return True

        model = ScriptedModel([tool_call("buy", {}), answer()])
        agent = sa.create_site_agent(model=model, tools=source, confirm=confirm)
        events, result = await ask(agent, "buy")
        assert first_runs == [] and second_runs == []
        tool_msg = model.requests[1].messages[-1]
        assert tool_msg["isError"] is True and tool_msg["content"].startswith("stale-tools")
        assert result.status == "answered"
        assert [s["outcome"] for s in result.trace["steps"] if s["kind"] == "tool-result"] == [
            "stale-tools"
        ]
        assert next(e for e in events if e.type == "confirm-result").decision.allowed

    run(main())


def test_tools_and_on_tools_change() -> None:
    async def main() -> None:
        source = sa.PythonToolSource()
        agent = sa.create_site_agent(model=ScriptedModel([]), tools=source)
        changes: list[int] = []
        unsubscribe = agent.on_tools_change(lambda: changes.append(source.revision))
        source.register(sa.Tool("b", "B.", lambda a: None))
        source.register(sa.Tool("a", "A.", lambda a: None))
        assert [t.name for t in await agent.tools()] == ["a", "b"]
        unsubscribe()
        source.unregister("a")
        assert changes == [1, 2]
        assert source.revision == 3

    run(main())


def test_no_tools_outside_the_browser() -> None:
    with pytest.raises(sa.SiteAgentError) as info:
        sa.create_site_agent(model=sa.demo_rules())
    assert info.value.code == "no-tools"


def test_bad_options() -> None:
    with pytest.raises(TypeError):
        sa.create_site_agent(model=object(), tools=[])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sa.create_site_agent(model=sa.demo_rules(), tools=[], tool_timeout_ms=0)
    with pytest.raises(ValueError):
        sa.create_site_agent(model=sa.demo_rules(), tools=[], max_result_chars=0)
    with pytest.raises(TypeError):
        sa.create_site_agent(model=sa.demo_rules(), tools="nope")
    agent = sa.create_site_agent(model=sa.demo_rules(), tools=[])

    async def main() -> None:
        with pytest.raises(TypeError):
            agent.run(None)  # type: ignore[arg-type]

    run(main())


def test_conversation_carries_over_and_reset_clears_it() -> None:
    agent, model, _ = shop_agent([answer("one"), answer("two")])
    run(ask(agent, "first"))
    run(ask(agent, "second"))
    assert [m["content"] for m in model.requests[1].messages] == ["first", "one", "second"]
    agent.reset()
    assert agent.messages == []


def test_model_supplied_ids_are_kept_and_duplicates_replaced() -> None:
    agent, model, _ = shop_agent(
        [
            tool_call("search_products", {"query": "a"}, call_id="abc"),
            tool_call("search_products", {"query": "b"}, call_id="abc"),
            answer(),
        ]
    )
    run(ask(agent, "x"))
    ids = [m["toolCall"]["id"] for m in agent.messages if "toolCall" in m]
    assert ids[0] == "abc" and ids[1] != "abc"
    assert_pairs_valid(agent.messages)


def test_meta_goes_back_to_the_model_unchanged() -> None:
    reply = tool_call("search_products", {"query": "a"})
    reply["meta"] = {"thoughtSignature": "sig=="}
    agent, model, _ = shop_agent([reply, answer()])
    run(ask(agent, "x"))
    assert model.requests[1].messages[1]["toolCall"]["meta"] == {"thoughtSignature": "sig=="}
    for request in model.requests:
        assert problems("protocol-v1", request.to_json(), "request") == []


def test_navigated_result() -> None:
    from pysite_agent.core.results import NAVIGATED

    tool = sa.Tool("go", "Go.", lambda a: NAVIGATED, None, {"readOnlyHint": True})
    agent = sa.create_site_agent(model=ScriptedModel([tool_call("go"), answer()]), tools=[tool])
    events, _ = run(ask(agent, "x"))
    result = next(e for e in events if e.type == "tool-result")
    assert result.navigated and "navigated" in result.text


def test_a_tool_that_returns_nothing_is_an_empty_success_not_a_navigation() -> None:
    tool = sa.Tool("clear", "Clear.", lambda a: None, None, {"readOnlyHint": True})
    agent = sa.create_site_agent(model=ScriptedModel([tool_call("clear"), answer()]), tools=[tool])
    events, _ = run(ask(agent, "x"))
    result = next(e for e in events if e.type == "tool-result")
    assert not result.navigated and not result.is_error
    assert "returned no result" in result.text and "navigat" not in result.text
