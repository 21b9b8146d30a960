"""A pending confirmation that ends without the visitor's answer is a recorded denial.

Stop (``abort()``), ``reset()``, removing the element (``abort("removed")``) and hiding the page
(``deny_pending("hidden")``) each end the card as denied; the ``confirm-result`` event and the
trace's ``decision`` step carry the ``cause``, and a replay with ``recorded_decisions`` reads it
as the visitor's answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, collect, tool_call

import pysite_agent as sa
from pysite_agent.core.wire import problems

ADD = tool_call("add_to_cart", {"product": "mug", "quantity": 2}, call_id="c1")


class Card:
    """A confirmation card that waits until the test (or the request's signal) ends it."""

    def __init__(self) -> None:
        self.shown = asyncio.Event()
        self.closed_by_signal = False
        self.requests: list[sa.ConfirmRequest] = []

    async def __call__(self, request: sa.ConfirmRequest) -> bool:
        self.requests.append(request)
        self.shown.set()
        gone = asyncio.Event()
        assert request.signal is not None
        request.signal.add_listener(self._close)  # as the element's card: closed at once
        request.signal.add_listener(gone.set)
        await gone.wait()
        return False

    def _close(self) -> None:
        self.closed_by_signal = True


def decisions(result: sa.RunResult) -> list[dict[str, Any]]:
    return [s for s in result.trace["steps"] if s["kind"] == "decision"]


async def end_card(
    ending: Callable[[sa.SiteAgent, sa.AgentRun], Any], replies: list[Any]
) -> tuple[list[Any], sa.RunResult, Shop, Card]:
    shop = Shop()
    card = Card()
    agent = sa.create_site_agent(model=ScriptedModel(replies), tools=shop.tools(), confirm=card)
    agent_run = agent.run("add two mugs")
    await asyncio.wait_for(card.shown.wait(), 5)
    ending(agent, agent_run)
    events, result = await collect(agent_run)
    return events, result, shop, card


@pytest.mark.parametrize(
    ("ending", "cause"),
    [
        (lambda agent, r: r.abort(), "stopped"),
        (lambda agent, r: r.abort("stopped by the visitor"), "stopped"),
        (lambda agent, r: agent.reset(), "reset"),
        (lambda agent, r: r.abort("removed"), "removed"),
        (lambda agent, r: r.abort("navigated"), "navigated"),
    ],
)
def test_an_abort_ends_the_card_as_a_recorded_denial(
    ending: Callable[[sa.SiteAgent, sa.AgentRun], Any], cause: str
) -> None:
    events, result, shop, card = run(end_card(ending, [ADD, answer()]))
    assert result.status == "aborted"
    assert shop.calls == []
    assert card.closed_by_signal
    (event,) = [e for e in events if e.type == "confirm-result"]
    assert event.to_json()["decision"] == {
        "allowed": False,
        "by": "visitor",
        "reason": "not-read-only",
        "cause": cause,
    }
    (step,) = decisions(result)
    assert step["allowed"] is False and step["cause"] == cause and step["callId"] == "c1"
    assert problems("trace-v1", result.trace) == []

    # The replay reads the recorded denial as the visitor's answer: denied in both, no difference.
    fresh = Shop()
    replayed = run(
        sa.replay(result.trace, tools=fresh.tools(), confirm=sa.recorded_decisions(result.trace))
    )
    assert [s.status for s in replayed.steps] == ["denied"]
    assert replayed.differences == 0
    assert fresh.calls == []


def test_a_hidden_page_denies_the_card_and_the_run_goes_on() -> None:
    events, result, shop, card = run(
        end_card(lambda agent, r: agent.deny_pending("hidden"), [ADD, answer("Not added.")])
    )
    assert result.status == "answered" and result.answer == "Not added."
    assert shop.calls == []
    assert card.closed_by_signal
    (event,) = [e for e in events if e.type == "confirm-result"]
    assert event.decision.cause == "hidden" and event.decision.allowed is False
    assert decisions(result)[0]["cause"] == "hidden"
    assert problems("trace-v1", result.trace) == []


def test_deny_pending_without_a_card_changes_nothing() -> None:
    async def main() -> tuple[bool, sa.RunResult]:
        agent = sa.create_site_agent(
            model=ScriptedModel([answer()]), tools=Shop().tools(), confirm=lambda r: True
        )
        agent_run = agent.run("hello")
        denied = agent.deny_pending("hidden")
        return denied, await agent_run.done

    denied, result = run(main())
    assert denied is False and result.status == "answered"
    with pytest.raises(ValueError, match="cause must be one of"):
        run(_deny_bad_cause())


async def _deny_bad_cause() -> None:
    agent = sa.create_site_agent(model=ScriptedModel([answer()]), tools=Shop().tools())
    agent_run = agent.run("x")
    try:
        agent_run.deny_pending("whatever")  # type: ignore[arg-type]
    finally:
        await agent_run.done


def test_a_visitor_answer_is_not_given_a_cause() -> None:
    agent = sa.create_site_agent(
        model=ScriptedModel([ADD, answer()]), tools=Shop().tools(), confirm=lambda r: False
    )
    _events, result = run(ask(agent, "x"))
    (step,) = decisions(result)
    assert "cause" not in step


def test_a_cancelled_waiter_stops_the_run_and_its_card() -> None:
    """A task awaiting ``run.done`` is cancelled (a notebook's Interrupt, ``wait_for``'s
    timeout) while the card is up: the run is aborted, the card ends as a denial, and an
    answer that comes later cannot run the tool."""

    async def main() -> tuple[sa.SiteAgent, sa.AgentRun, Shop, Card, bool]:
        shop = Shop()
        card = Card()
        agent = sa.create_site_agent(
            model=ScriptedModel([ADD, answer()]), tools=shop.tools(), confirm=card
        )
        agent_run = agent.run("add two mugs")
        waiter = asyncio.ensure_future(agent_run.done)
        await asyncio.wait_for(card.shown.wait(), 5)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        for _ in range(50):  # the run ends in the background
            if not agent.running:
                break
            await asyncio.sleep(0.01)
        return agent, agent_run, shop, card, agent.running

    agent, agent_run, shop, card, still_running = run(main())
    assert still_running is False
    assert agent_run.done.cancelled()
    assert card.closed_by_signal
    assert shop.calls == []
    trace = agent.last_trace
    assert trace is not None and trace["status"] == "aborted"
    (step,) = [s for s in trace["steps"] if s["kind"] == "decision"]
    assert step["allowed"] is False and step["cause"] == "stopped"
