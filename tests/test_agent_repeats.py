"""Do not ask twice: a call identical to the one that just ran and succeeded in the same run is
neither shown as a card nor run again (pysite_agent/agent/_repeats.py), for any model."""

from __future__ import annotations

from typing import Any

from aio import run
from generators import hostile_text, hostile_value
from helpers import ScriptedModel, Shop, answer, ask, tool_call, types
from hypothesis import given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.core.trace_view import render_trace_html, trace_text
from pysite_agent.core.wire import problems

ADD = tool_call("add_to_cart", {"product": "mug", "quantity": 2})


def shop_agent(replies: list[Any], shop: Shop, asked: list[Any]) -> sa.SiteAgent:
    def confirm(request: sa.ConfirmRequest) -> bool:
        asked.append(request)
        return True

    return sa.create_site_agent(
        model=ScriptedModel(replies), tools=shop.tools(), confirm=confirm, max_steps=10
    )


def kinds(result: sa.RunResult) -> list[str]:
    return [s["kind"] for s in result.trace["steps"]]


def test_a_repeat_of_an_allowed_call_is_not_asked_again_and_the_model_answers() -> None:
    shop, asked = Shop(), []
    model = ScriptedModel([ADD, ADD, answer("Two mugs are in your cart.")])
    agent = sa.create_site_agent(
        model=model,
        tools=shop.tools(),
        confirm=lambda r: asked.append(r) or True,
        max_steps=10,
    )
    events, result = run(ask(agent, "add two mugs"))
    assert result.status == "answered" and result.answer == "Two mugs are in your cart."
    assert shop.calls == [("add_to_cart", {"product": "mug", "quantity": 2})]
    assert len(asked) == 1  # one card
    assert types(events).count("confirm-request") == 1
    assert types(events).count("tool-call") == 1 and types(events).count("tool-result") == 1
    assert shop.cart == {"mug": 2}
    invalid = [s for s in result.trace["steps"] if s["kind"] == "invalid-call"]
    assert len(invalid) == 1 and invalid[0]["error"]["code"] == "already-done"
    assert invalid[0]["call"]["name"] == "add_to_cart"
    assert problems("trace-v1", result.trace) == []
    # the model was told, with the result, and asked to answer
    told = model.requests[2].messages[-1]
    assert told["role"] == "tool" and "already ran" in told["content"]
    assert "Added 2 x mug" in told["content"] and "answer the visitor" in told["content"]
    roles = [m["role"] for m in agent.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_asked_once_more_the_run_answers_from_the_result() -> None:
    shop, asked = Shop(), []
    model_replies = [ADD, ADD, ADD, answer("never")]
    agent = shop_agent(model_replies, shop, asked)
    events, result = run(ask(agent, "add two mugs"))
    assert result.status == "answered"
    assert result.answer == "Done (add_to_cart): Added 2 x mug"
    assert len(shop.calls) == 1 and len(asked) == 1
    assert kinds(result)[-6:] == [
        *("tool-result", "model", "invalid-call"),
        *("model", "invalid-call", "answer"),
    ]
    last = result.trace["steps"][-1]
    first_call = next(s for s in result.trace["steps"] if s["kind"] == "tool-call")
    assert last == {**last, "kind": "answer", "fromCallId": first_call["call"]["id"]}
    assert types(events)[-2:] == ["answer", "done"]
    assert problems("trace-v1", result.trace) == []
    assert agent.messages[-1] == {"role": "assistant", "content": result.answer}
    # the trace view says where the answer came from
    assert f"from the result of {first_call['call']['id']}" in trace_text(result.trace)
    html = render_trace_html(result.trace)
    assert "already-done" in html and "from the result of" in html
    # a new message may do it again: the memory is per run
    agent.model.replies = [ADD, answer("ok")]  # type: ignore[attr-defined]
    _, again = run(ask(agent, "and two more"))
    assert again.status == "answered" and len(shop.calls) == 2 and len(asked) == 2


def test_an_untrusted_result_is_not_quoted_as_the_answer() -> None:
    shop, asked = Shop(), []
    reviews = tool_call("get_reviews", {"product": "mug"})
    agent = shop_agent([reviews, reviews, reviews], shop, asked)
    _, result = run(ask(agent, "reviews?"))
    assert result.status == "answered" and result.answer is not None
    assert "SYSTEM" not in result.answer and "get_reviews" in result.answer
    assert len(shop.calls) == 1


def test_the_same_call_after_another_one_runs_again() -> None:
    """view, change, view: the second view is not "already done" (the state changed)."""
    shop, asked = Shop(), []
    search = tool_call("search_products", {"query": "mug"})
    agent = shop_agent([search, ADD, search, answer("ok")], shop, asked)
    _, result = run(ask(agent, "x"))
    assert result.status == "answered"
    assert [c[0] for c in shop.calls] == ["search_products", "add_to_cart", "search_products"]
    assert "invalid-call" not in kinds(result)


def test_denied_invalid_and_failed_calls_are_not_already_done() -> None:
    shop = Shop()
    agent = sa.create_site_agent(
        model=ScriptedModel([ADD, ADD, answer("ok")]),
        tools=shop.tools(),
        confirm=lambda r: False,
        max_steps=10,
    )
    events, result = run(ask(agent, "x"))
    assert types(events).count("confirm-request") == 2  # denied: asking again is honest
    assert "invalid-call" not in kinds(result)
    bad = tool_call("add_to_cart", {"product": "mug"})  # no quantity: invalid
    agent = sa.create_site_agent(model=ScriptedModel([bad, bad, answer("ok")]), tools=shop.tools())
    _, result = run(ask(agent, "x"))
    codes = [s["error"]["code"] for s in result.trace["steps"] if s["kind"] == "invalid-call"]
    assert codes == ["invalid-arguments", "invalid-arguments"]


def test_replay_runs_the_call_once() -> None:
    shop, asked = Shop(), []
    _, result = run(ask(shop_agent([ADD, ADD, ADD], shop, asked), "x"))
    fresh = Shop()
    replayed = run(sa.replay(result.trace, tools=fresh.tools(), confirm=lambda r: True))
    assert [s.status for s in replayed.steps] == ["ran"] and replayed.differences == 0
    assert fresh.cart == {"mug": 2}


@settings(max_examples=60, deadline=None)
@given(
    arguments=st.dictionaries(hostile_text(8), hostile_value, max_size=4),
    repeats=st.integers(min_value=1, max_value=4),
)
def test_any_arguments_never_run_or_ask_twice(arguments: dict[str, Any], repeats: int) -> None:
    """``mystery`` has no schema and no annotations: every call asks; any arguments."""
    shop, asked = Shop(), []
    same = tool_call("mystery", arguments)
    agent = shop_agent([same] * (1 + repeats), shop, asked)
    _, result = run(ask(agent, "x"))
    assert len(shop.calls) <= 1 and len(asked) <= 1
    assert result.status in ("answered", "error")
    assert problems("trace-v1", result.trace) == []
    if shop.calls:
        assert result.status == "answered"
