"""The arguments that run are the arguments approved: copied at the decision, for every path.

A ``confirm`` callback, an event listener (the element's confirmation card reads the
``confirm-request`` event), a pre-approved call's listeners and a replay's ``confirm`` all get
a view of the call; none of them can change what then runs, nor what the trace records.
"""

from __future__ import annotations

import json
from typing import Any

from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call

import pysite_agent as sa

APPROVED = {"product": "mug", "quantity": 2}


def _agent(shop: Shop, **options: Any) -> sa.SiteAgent:
    model = ScriptedModel([tool_call("add_to_cart", dict(APPROVED)), answer("done")])
    return sa.create_site_agent(model=model, tools=shop.tools(), **options)


def _ran(shop: Shop) -> list[dict[str, Any]]:
    return [args for name, args in shop.calls if name == "add_to_cart"]


def _recorded(result: sa.RunResult) -> list[Any]:
    return [s["call"]["arguments"] for s in result.trace["steps"] if s["kind"] == "tool-call"]


def test_an_edit_made_by_the_confirm_callback_does_not_run() -> None:
    shop = Shop()

    def confirm(request: sa.ConfirmRequest) -> bool:
        request.call.arguments["quantity"] = 99
        return True

    agent = _agent(shop, confirm=confirm)
    _, result = run(ask(agent, "add two mugs"))
    assert _ran(shop) == [APPROVED]
    assert shop.cart == {"mug": 2}
    assert _recorded(result) == [APPROVED]


def test_an_edit_made_by_a_listener_of_the_confirmation_card_does_not_run() -> None:
    shop = Shop()
    agent = _agent(shop, confirm=lambda request: True)

    def listener(event: Any) -> None:
        if event.type == "confirm-request":
            event.request.call.arguments["quantity"] = 99

    agent.on_event(listener)
    run(ask(agent, "add two mugs"))
    assert _ran(shop) == [APPROVED]


def test_a_pre_approved_call_runs_what_was_decided_even_if_a_listener_edits_it() -> None:
    shop = Shop()
    agent = _agent(shop, pre_approved=["add_to_cart"])

    def listener(event: Any) -> None:
        if event.type == "confirm-result":
            event.call.arguments["quantity"] = 99

    agent.on_event(listener)
    _, result = run(ask(agent, "add two mugs"))
    assert _ran(shop) == [APPROVED]
    assert _recorded(result) == [APPROVED]


def test_a_tool_that_changes_its_arguments_does_not_change_the_record() -> None:
    shop = Shop()
    tools = shop.tools()
    add = next(t for t in tools if t.name == "add_to_cart")
    inner = add.execute

    def mutating(args: dict[str, Any]) -> Any:
        out = inner(args)
        args["quantity"] = 1000
        return out

    tools[tools.index(add)] = sa.Tool(
        add.name, add.description, mutating, add.input_schema, add.annotations
    )
    model = ScriptedModel([tool_call("add_to_cart", dict(APPROVED)), answer("done")])
    agent = sa.create_site_agent(model=model, tools=tools, pre_approved=["add_to_cart"])
    _, result = run(ask(agent, "add two mugs"))
    assert _recorded(result) == [APPROVED]
    assert json.loads(json.dumps(agent.messages))[1]["toolCall"]["arguments"] == APPROVED


def test_a_replay_runs_the_recorded_arguments_whatever_its_confirm_does() -> None:
    shop = Shop()
    agent = _agent(shop, confirm=lambda request: True)
    _, result = run(ask(agent, "add two mugs"))
    replayed = Shop()

    def confirm(request: sa.ConfirmRequest) -> bool:
        request.call.arguments["quantity"] = 99
        return True

    run(sa.replay(result.trace, tools=replayed.tools(), confirm=confirm))
    assert _ran(replayed) == [APPROVED]
