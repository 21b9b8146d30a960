"""The decision binding across tool changes (README, decision binding; issue: an Allow lost
after a route change): an Allow is bound to its tool's registration and content, not to the
rest of the page's tools. A card whose tool the page withdraws while it is open ends as a
denial with the cause ``withdrawn``; a card whose tool stays keeps its Allow."""

from __future__ import annotations

import asyncio
from typing import Any

from aio import run
from helpers import ScriptedModel, answer, ask, tool_call
from hypothesis import given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.agent._gateway import WITHDRAWN_TEXT

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def page(runs: list[str]) -> sa.PythonToolSource:
    source = sa.PythonToolSource()
    source.register(sa.Tool("buy", "Buy.", lambda a: runs.append("buy") or "bought", SCHEMA, {}))
    source.register(sa.Tool("browse", "Browse.", lambda a: "items", None, {"readOnlyHint": True}))
    return source


def outcomes(result: sa.RunResult, kind: str = "tool-result") -> list[dict[str, Any]]:
    return [s for s in result.trace["steps"] if s["kind"] == kind]


def agent_for(source: sa.PythonToolSource, confirm: Any) -> tuple[sa.SiteAgent, ScriptedModel]:
    model = ScriptedModel([tool_call("buy", {"n": 1}), answer("done")])
    return sa.create_site_agent(model=model, tools=source, confirm=confirm), model


def test_a_route_that_changes_other_tools_keeps_the_allow() -> None:
    runs: list[str] = []
    source = page(runs)

    async def confirm(request: sa.ConfirmRequest) -> bool:
        # A route change while the card is open: one tool goes, another comes; buy stays.
        source.unregister("browse")
        source.register(sa.Tool("search", "Search.", lambda a: "3", None, {}))
        await asyncio.sleep(0.01)  # the page's change is seen before the visitor answers
        return True

    agent, model = agent_for(source, confirm)
    _, result = run(ask(agent, "buy one"))
    assert runs == ["buy"]
    assert [s["outcome"] for s in outcomes(result)] == ["ran"]
    assert not request_aborted(model)


def request_aborted(model: ScriptedModel) -> bool:
    last = model.requests[-1].messages[-1]
    return bool(last.get("isError"))


def withdrawn_case(change: Any) -> tuple[list[str], list[Any], sa.RunResult, list[bool]]:
    """A card open while ``change`` touches its tool; the visitor allows 50 ms later. Returns
    what ran, the events, the result and whether each card's signal aborted (it closed)."""
    runs: list[str] = []
    source = page(runs)
    asked: list[sa.ConfirmRequest] = []

    async def confirm(request: sa.ConfirmRequest) -> bool:
        asked.append(request)
        change(source, runs)
        await asyncio.sleep(0.05)  # the visitor is slower than the page
        return True  # a late Allow, after the card was withdrawn, must not run anything

    agent, model = agent_for(source, confirm)
    events, result = run(ask(agent, "buy one"))
    assert model.requests[1].messages[-1]["content"] == WITHDRAWN_TEXT
    return runs, events, result, [r.signal.aborted for r in asked]


def unregister(source: sa.PythonToolSource, runs: list[str]) -> None:
    source.unregister("buy")


def replace(source: sa.PythonToolSource, runs: list[str]) -> None:
    source.unregister("buy")
    source.register(sa.Tool("buy", "Buy.", lambda a: runs.append("other") or "x", SCHEMA, {}))


def change_content(source: sa.PythonToolSource, runs: list[str]) -> None:
    source.unregister("buy")
    new_schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 99}}}
    source.register(sa.Tool("buy", "Buy many.", lambda a: runs.append("other"), new_schema, {}))


def test_a_card_whose_tool_is_unregistered_is_withdrawn() -> None:
    runs, events, result, closed = withdrawn_case(unregister)
    assert runs == [] and closed == [True]
    [decision] = outcomes(result, "decision")
    assert [decision[k] for k in ("allowed", "by", "cause")] == [False, "visitor", "withdrawn"]
    [event] = [e for e in events if e.type == "confirm-result"]
    assert event.decision.allowed is False and event.decision.cause == "withdrawn"
    assert outcomes(result) == [] and result.status == "answered"


def test_a_card_whose_tool_is_registered_again_is_withdrawn_and_never_substituted() -> None:
    runs, _, result, closed = withdrawn_case(replace)
    assert runs == [] and closed == [True]
    assert outcomes(result, "decision")[0]["cause"] == "withdrawn"


def test_a_card_whose_tool_changes_is_withdrawn() -> None:
    runs, _, result, closed = withdrawn_case(change_content)
    assert runs == [] and closed == [True]
    assert outcomes(result, "decision")[0]["cause"] == "withdrawn"


def test_a_withdrawn_decision_validates_against_the_trace_schema() -> None:
    from pysite_agent.core.wire import problems

    _, _, result, _ = withdrawn_case(unregister)
    assert problems("trace-v1", result.trace) == []


def test_a_change_between_allow_and_execution_is_still_stale() -> None:
    runs: list[str] = []
    source = page(runs)

    def confirm(request: sa.ConfirmRequest) -> bool:
        replace(source, runs)  # in the same task as the Allow: no time to withdraw the card
        return True

    agent, _ = agent_for(source, confirm)
    _, result = run(ask(agent, "buy one"))
    assert runs == []
    assert [s["outcome"] for s in outcomes(result)] == ["stale-tools"]


OTHER_CHANGES = st.lists(
    st.tuples(st.sampled_from(["register", "unregister"]), st.sampled_from(["a", "b", "browse"])),
    max_size=6,
)


@settings(max_examples=40, deadline=None)
@given(changes=OTHER_CHANGES, touch_buy=st.sampled_from([None, "unregister", "replace", "change"]))
def test_the_allowed_call_runs_exactly_when_its_own_tool_stayed(
    changes: list[tuple[str, str]], touch_buy: str | None
) -> None:
    runs: list[str] = []
    source = page(runs)

    async def confirm(request: sa.ConfirmRequest) -> bool:
        for op, name in changes:
            if op == "unregister":
                source.unregister(name)
            elif name not in {t.name for t in await source.get_tools()}:
                source.register(sa.Tool(name, f"{name}.", lambda a: None, None, {}))
        if touch_buy is not None:
            {"unregister": unregister, "replace": replace, "change": change_content}[touch_buy](
                source, runs
            )
        await asyncio.sleep(0.01)
        return True

    agent, _ = agent_for(source, confirm)
    _, result = run(ask(agent, "buy one"))
    if touch_buy is None:
        assert runs == ["buy"]
    else:
        assert runs == []  # never the replacement either
        assert outcomes(result, "decision")[0].get("cause") == "withdrawn"


# -- document.modelContext: a route that registers its tools twice (React's StrictMode) -------


def strict_mode_route(numbered: bool) -> tuple[list[str], sa.RunResult]:
    """A card for the app's ``add_to_cart`` is open while the page moves to a route whose
    component registers ``track`` twice (mount, cleanup, mount): toolchange events that the
    listings alone cannot explain. With the loader's registration numbers the agent knows that
    ``add_to_cart`` stayed; without them it cannot, and withdraws the card."""
    from test_tools_model_context import FakeModelContext, source_for

    class Page(FakeModelContext):
        def __init__(self) -> None:
            super().__init__()
            self.numbers: dict[str, int] = {}
            self.count = 0
            if numbered:  # what web/webmcp/shim.js recordRegistrations adds to the page's
                self.siteAgentRegistrationOf = lambda name: self.numbers.get(name)

        def register(self, name: str, execute: Any = None, **fields: Any) -> None:
            self.count += 1
            self.numbers[name] = self.count
            super().register(name, execute, **fields)

        def unregister(self, name: str) -> None:
            self.numbers.pop(name, None)
            super().unregister(name)

    mc = Page()
    ran: list[str] = []
    mc.register("add_to_cart", description="Add", execute=lambda a: ran.append("add") or "ok")
    mc.register("browse", description="Browse", execute=lambda a: "cakes")

    async def confirm(request: sa.ConfirmRequest) -> bool:
        mc.unregister("browse")  # the catalog route goes
        mc.register("track", description="Track", execute=lambda a: "open")  # first mount
        mc.unregister("track")  # StrictMode's cleanup
        mc.register("track", description="Track", execute=lambda a: "open")  # second mount
        await asyncio.sleep(0.05)
        return True

    model = ScriptedModel([tool_call("add_to_cart", {}), answer("added")])
    agent = sa.create_site_agent(model=model, tools=source_for(mc), confirm=confirm)
    _, result = run(ask(agent, "add a tart"))
    return ran, result


def test_with_the_loaders_numbers_a_strict_mode_route_keeps_the_allow() -> None:
    ran, result = strict_mode_route(numbered=True)
    assert ran == ["add"]
    assert [s["outcome"] for s in outcomes(result)] == ["ran"]


def test_without_them_the_same_route_withdraws_the_card_rather_than_guess() -> None:
    ran, result = strict_mode_route(numbered=False)
    assert ran == []
    assert outcomes(result, "decision")[0]["cause"] == "withdrawn"
