"""A conversation across pages, in Python: the conversation state that
crosses any channel as JSON, restored whole or not at all; a run that a page change
interrupted, taken up on the next page within the same max_steps; and the element
controller's restore() and state() over a fake bridge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call

import pysite_agent as sa
from pysite_agent.browser.element import create_controller
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.visit import check_conversation, end_run, page_of
from pysite_agent.core.wire import problems

PAGE1 = {"origin": "http://127.0.0.1:8000", "path": "/demo-shop.html"}
PAGE2 = {"origin": "http://127.0.0.1:8000", "path": "/product.html"}


def agent_for(shop: Shop, replies: list[Any], **kw: Any) -> tuple[sa.SiteAgent, ScriptedModel]:
    model = ScriptedModel(replies)
    return sa.create_site_agent(model=model, tools=shop.tools(), **kw), model


def over_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_export_import_round_trip_keeps_the_safety_state() -> None:
    shop = Shop()
    one, _ = agent_for(shop, [tool_call("get_reviews", {"product": "mug"}), answer("read")])
    run(ask(one, "reviews?"))
    state = over_json(one.export_state())
    assert state["version"] == 1 and state["afterUntrusted"] is True
    asked: list[Any] = []
    two, model = agent_for(
        Shop(),
        [tool_call("add_to_cart", {"product": "mug", "quantity": 1}), answer("added")],
        pre_approved=["add_to_cart"],
        confirm=lambda r: asked.append(r) or True,
    )
    two.import_state(state)
    assert two.after_untrusted is True and two.messages == one.messages
    run(ask(two, "add it to my cart"))
    assert [r.reason for r in asked] == ["after-untrusted"]  # rule 5 holds on the new page
    assert model.requests[0].messages[:4] == state["messages"]


@pytest.mark.parametrize(
    "state",
    [
        None,
        {"version": 2, "messages": [], "afterUntrusted": False},
        {"version": 1, "messages": []},  # no safety state: never the conversation without it
        {"version": 1, "messages": [], "afterUntrusted": "no"},
        {"version": 1, "messages": [{"role": "user"}], "afterUntrusted": False},
        {
            "version": 1,
            "messages": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "toolCall": {"id": "c1", "name": "t", "arguments": {}}},
            ],
            "afterUntrusted": False,
        },
        {
            "version": 1,
            "messages": [
                {
                    "role": "tool",
                    "toolCallId": "c1",
                    "name": "t",
                    "content": "r",
                    "isError": False,
                    "untrusted": False,
                }
            ],
            "afterUntrusted": False,
        },
    ],
)
def test_a_bad_state_is_refused_whole(state: Any) -> None:
    agent, _ = agent_for(Shop(), [tool_call("get_reviews", {}), answer("ok")])
    run(ask(agent, "reviews"))
    before = (agent.messages, agent.after_untrusted)
    with pytest.raises(ValueError):
        agent.import_state(state)
    assert (agent.messages, agent.after_untrusted) == before


def test_page_of_keeps_origin_and_path_only() -> None:
    assert page_of("https://Shop.example:8443/p/mug.html?token=abc#x") == {
        "origin": "https://shop.example:8443",
        "path": "/p/mug.html",
    }
    assert page_of({"origin": "http://a.test", "path": "/x?y=1"})["path"] == "/x"
    for bad in ("ftp://a/b", "/relative", 5, {"origin": 1}):
        with pytest.raises(ValueError):
            page_of(bad)


def interrupted(shop: Shop, replies: list[Any], **kw: Any) -> tuple[sa.SiteAgent, dict[str, Any]]:
    """A run on page 1 that stops while its first tool call runs (the page goes away)."""
    gate: asyncio.Future[None] | None = None

    def navigate(args: dict[str, Any]) -> Any:
        nonlocal gate
        gate = asyncio.get_running_loop().create_future()
        return gate  # never resolves: the page is gone

    tools = [
        *shop.tools(),
        sa.Tool(
            "open_product",
            "Open a product's page.",
            navigate,
            {"type": "object", "properties": {"id": {"type": "string"}}},
            {"readOnlyHint": True},
        ),
    ]
    model = ScriptedModel(replies)
    agent = sa.create_site_agent(model=model, tools=tools, **kw)
    agent.page = PAGE1

    async def main() -> dict[str, Any]:
        started = agent.run("open the mug and add it to my cart")
        for _ in range(50):
            await asyncio.sleep(0)
        saved = over_json({"conversation": agent.export_state(), "run": agent.run_state()})
        started.abort()  # the page is gone; here the test ends the task
        await started.done
        return saved

    return agent, run(main())


def test_a_navigating_call_is_taken_up_on_the_next_page() -> None:
    shop = Shop()
    _, saved = interrupted(shop, [tool_call("open_product", {"id": "mug"})], max_steps=3)
    state = saved["run"]
    assert state["pendingCall"]["name"] == "open_product"
    assert state["stepsUsed"] == 1
    assert "toolCall" not in saved["conversation"]["messages"][-1]  # the open call is in the run
    shop2 = Shop()
    page2, model = agent_for(
        shop2,
        [tool_call("add_to_cart", {"product": "mug", "quantity": 1}), answer("Added.")],
        confirm=lambda r: True,
        max_steps=3,
    )
    page2.page = PAGE2
    page2.import_state(saved["conversation"])

    async def go() -> sa.RunResult:
        return await page2.resume(state).done

    result = run(go())
    assert result.status == "answered" and result.answer == "Added."
    assert shop2.cart == {"mug": 1}
    first = model.requests[0]
    assert isinstance(first, ModelRequest)
    assert "http://127.0.0.1:8000/product.html" in first.instructions
    last = first.messages[-1]
    assert last["role"] == "tool" and "/product.html" in last["content"]
    kinds = [s["kind"] for s in result.trace["steps"]]
    assert kinds[:2] == ["user", "page"]
    assert kinds.count("page") == 2
    assert result.trace["steps"][kinds.index("page", 2)]["path"] == "/product.html"
    navigated = [s for s in result.trace["steps"] if s.get("navigated")]
    assert navigated and navigated[0]["name"] == "open_product"
    assert problems("trace-v1", result.trace) == []
    assert len(model.requests) == 2  # steps 2 and 3 of max 3


def test_the_same_max_steps() -> None:
    _, saved = interrupted(Shop(), [tool_call("open_product", {"id": "mug"})], max_steps=2)
    page2, model = agent_for(
        Shop(), [tool_call("search_products", {"query": "a"}), answer("x")], max_steps=2
    )
    page2.import_state(saved["conversation"])

    async def go() -> sa.RunResult:
        return await page2.resume(saved["run"]).done

    result = run(go())
    assert result.status == "max-steps"
    assert len(model.requests) == 1


def test_a_pending_card_is_denied_with_cause_navigated() -> None:
    shop = Shop()
    gate: list[Any] = []

    def confirm(request: sa.ConfirmRequest) -> Any:
        future = asyncio.get_running_loop().create_future()
        gate.append(future)
        return future  # the visitor never answers: the page goes away

    one, _ = agent_for(
        shop,
        [tool_call("add_to_cart", {"product": "mug", "quantity": 1})],
        confirm=confirm,
    )

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        started = one.run("add a mug")
        for _ in range(50):
            await asyncio.sleep(0)
        assert gate
        saved = over_json((one.run_state(), one.export_state()))
        started.abort()  # the page is gone; here the test ends the task
        await started.done
        return saved[0], saved[1]

    state, conversation = run(main())
    state["cause"] = "navigated"  # the element marks it when the page is hidden
    two, model = agent_for(Shop(), [answer("Not added: you left the page.")])
    two.page = PAGE2
    two.import_state(conversation)

    async def go() -> sa.RunResult:
        return await two.resume(state).done

    result = run(go())
    decision = next(s for s in result.trace["steps"] if s["kind"] == "decision")
    assert decision == {**decision, "allowed": False, "by": "visitor", "cause": "navigated"}
    denied = model.requests[0].messages[-1]
    assert denied["denied"] is True and "left the page" in denied["content"]
    assert shop.calls == [] and problems("trace-v1", result.trace) == []


def test_end_run_records_why_it_stopped() -> None:
    _, saved = interrupted(Shop(), [tool_call("open_product", {"id": "mug"})])
    trace = end_run(saved["run"], "expired", "2026-12-01T04:00:00.000Z")
    assert trace["status"] == "aborted"
    assert trace["steps"][-1]["code"] == "aborted" and "30 s" in trace["steps"][-1]["message"]
    assert problems("trace-v1", trace) == []
    with pytest.raises(ValueError):
        end_run({"message": "x"}, "expired", "2026-12-01T04:00:00.000Z")


def test_check_conversation_copies() -> None:
    messages, flag = check_conversation(
        {"version": 1, "messages": [{"role": "user", "content": "hi"}], "afterUntrusted": False}
    )
    assert messages == [{"role": "user", "content": "hi"}] and flag is False


# --- the element's controller over a fake bridge (CPython) -------------------------------


class Bridge:
    def __init__(self) -> None:
        self.events: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.saved: list[dict[str, Any]] = []
        self.saved_runs: list[int | None] = []

    def emit(self, event: str, extra: str) -> None:
        self.events.append((json.loads(event), json.loads(extra)))

    def started(self, text: str, run_id: int) -> None:
        pass

    def save(self, state: str, run_id: int | None) -> None:
        self.saved.append(json.loads(state))
        self.saved_runs.append(run_id)


def shop_context() -> Any:
    """The shop's search tool on a stand-in for ``document.modelContext``."""
    from test_tools_model_context import FakeModelContext

    context = FakeModelContext()
    context.register(
        "search_products",
        lambda args: "Found: Stoneware mug",
        description="Search the shop's products by keyword.",
        inputSchema={"type": "object", "properties": {"query": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )
    return context


CONFIG = json.dumps(
    {"models": "demo", "pageUrl": "http://127.0.0.1:8000/demo-shop.html?session=secret#top"}
)


def test_controller_saves_after_each_step_and_restores() -> None:
    async def main() -> None:
        bridge = Bridge()
        controller = create_controller(bridge)
        status = json.loads(await controller.configure(CONFIG, {"tools": shop_context()}))
        assert status["ok"], status
        result = json.loads(await controller.run("search mugs", 1))
        assert result["ok"] and result["value"]["status"] == "answered"
        page_steps = [s for s in result["value"]["trace"]["steps"] if s["kind"] == "page"]
        assert page_steps == [{**page_steps[0], **PAGE1}]  # no query, no fragment
        assert "secret" not in json.dumps(result["value"]["trace"])
        assert bridge.saved, "the record is kept up to date after each step"
        assert set(bridge.saved_runs) == {1}  # each save names its run (the page drops stale)
        last = bridge.saved[-1]
        assert last["run"] is None and last["conversation"]["messages"][-1]["role"] == "assistant"
        mid = next(s for s in bridge.saved if s["run"] is not None)
        assert mid["run"]["message"] == "search mugs"

        other = create_controller(Bridge())
        await other.configure(CONFIG, {"tools": shop_context()})
        record = {"conversation": last["conversation"], "run": None}
        answer_ = json.loads(await other.restore(json.dumps(record)))
        assert answer_ == {"ok": True, "value": {"restored": True, "resumed": False, "ended": None}}
        assert json.loads(other.state())["conversation"] == last["conversation"]
        broken = {"conversation": {**last["conversation"], "afterUntrusted": None}}
        refused = json.loads(await other.restore(json.dumps(broken)))
        assert refused["ok"] is False and refused["error"]["code"] == "restore"
        assert json.loads(other.state())["conversation"] == last["conversation"]  # unchanged
        controller.close()
        other.close()

    run(main())


def test_controller_finishes_an_expired_run() -> None:
    _, saved = interrupted(Shop(), [tool_call("open_product", {"id": "mug"})])

    async def main() -> dict[str, Any]:
        controller = create_controller(Bridge())
        await controller.configure(CONFIG, {"tools": shop_context()})
        record = {**saved, "ended": "no-element"}
        return json.loads(await controller.restore(json.dumps(record)))  # type: ignore[no-any-return]

    answer_ = run(main())
    trace = answer_["value"]["ended"]
    assert answer_["value"]["resumed"] is False
    assert trace["status"] == "aborted" and "no assistant" in trace["steps"][-1]["message"]


def test_the_visitor_left_during_a_model_call() -> None:
    """The model call is lost; the run goes on from its last recorded step on the next page."""
    waiting: list[Any] = []

    async def slow(request: ModelRequest) -> Any:
        future = asyncio.get_running_loop().create_future()
        waiting.append(future)
        return await future  # the page goes away before the model answers

    one, _ = agent_for(Shop(), [tool_call("search_products", {"query": "mug"}), slow], max_steps=4)

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        started = one.run("find a mug")
        for _ in range(100):
            await asyncio.sleep(0)
        assert waiting  # step 2's model call is in flight
        saved = over_json((one.run_state(), one.export_state()))
        started.abort()
        await started.done
        return saved[0], saved[1]

    state, conversation = run(main())
    assert state["stepsUsed"] == 1 and state["pendingCall"] is None
    two, model = agent_for(Shop(), [answer("Found a mug.")], max_steps=4)
    two.page = PAGE2
    two.import_state(conversation)

    async def go() -> sa.RunResult:
        return await two.resume(state).done

    result = run(go())
    assert result.answer == "Found a mug."
    assert [s["step"] for s in result.trace["steps"] if s["kind"] == "model"] == [1, 2]
    assert model.requests[0].messages[-1]["role"] == "tool"  # from the last recorded step


@pytest.mark.parametrize("stop", ["reset", "abort"])
def test_a_run_called_before_a_reset_or_stop_does_not_start(stop: str) -> None:
    """The page sends run, then reset (or Stop) at once; in the worker the run's work starts
    in a later task than the call. It must not start on the fresh conversation."""

    async def main() -> None:
        bridge = Bridge()
        controller = create_controller(bridge)
        await controller.configure(CONFIG, {"tools": shop_context()})
        pending = controller.run("search mugs", 1)  # called, not started
        getattr(controller, stop)()
        refused = json.loads(await pending)
        assert refused == {
            "ok": False,
            "error": {"code": "aborted", "message": "Stopped before the message was sent."},
        }
        assert bridge.events == [] and bridge.saved == []
        assert json.loads(controller.state())["conversation"]["messages"] == []
        later = json.loads(await controller.run("search mugs", 2))  # the next one runs
        assert later["ok"] and later["value"]["status"] == "answered"
        controller.close()

    run(main())


def test_the_controller_refuses_deep_json_from_the_page_with_a_clear_error() -> None:
    # Settings, a trace, eval cases or a visit record nested 10,000 deep: a clear error from
    # each entry point, never a RecursionError (or, in Pyodide, a dead interpreter).
    deep = "[" * 10_000 + "]" * 10_000
    deep_object = '{"a": ' * 10_000 + "1" + "}" * 10_000

    async def main() -> None:
        controller = create_controller(Bridge())
        refused = json.loads(await controller.configure(deep_object, {"tools": shop_context()}))
        assert refused["ok"] is False and "nested deeper than" in refused["error"]["message"]
        assert json.loads(await controller.configure(CONFIG, {"tools": shop_context()}))["ok"]
        for answer_ in (
            await controller.restore(deep),
            await controller.replay(deep),
            await controller.evaluate(deep_object),
        ):
            envelope = json.loads(answer_)
            assert envelope["ok"] is False, envelope
            assert "nested deeper than" in envelope["error"]["message"], envelope
        # and the controller still works
        assert json.loads(await controller.run("search mugs", 1))["ok"]
        controller.close()

    run(main())


def test_a_route_change_is_one_page_step_and_the_next_runs_start_there() -> None:
    cart = {**PAGE1, "path": "/cart"}

    async def page_steps(controller: Any, text: str, run_id: int) -> list[dict[str, str]]:
        envelope = json.loads(await controller.run(text, run_id))
        steps = envelope["value"]["trace"]["steps"]
        return [{"origin": s["origin"], "path": s["path"]} for s in steps if s["kind"] == "page"]

    async def main() -> None:
        controller = create_controller(Bridge())

        def moved(_request: ModelRequest) -> Any:  # the app changes its route mid-run
            base = "http://127.0.0.1:8000"
            assert controller.route(f"{base}/demo-shop.html?tab=2#reviews") is False  # same path
            assert controller.route(f"{base}/cart") is True
            assert controller.route(f"{base}/cart#top") is False
            assert controller.route("javascript:void 0") is False  # not a page address
            return answer("moved")

        model = ScriptedModel([moved, answer("here")])
        await controller.configure(CONFIG, {"tools": shop_context(), "model": model})
        assert await page_steps(controller, "go", 1) == [PAGE1, cart]
        assert await page_steps(controller, "and now", 2) == [cart]  # the route it is on
        controller.close()

    run(main())


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u3000"])
def test_an_empty_message_is_refused_and_nothing_reaches_the_model(text: str) -> None:
    """``el.ask('')`` (or ``ask(undefined)``) is refused as the panel's input refuses it: no
    run, no empty message in the conversation."""

    async def main() -> None:
        bridge = Bridge()
        controller = create_controller(bridge)
        await controller.configure(CONFIG, {"tools": shop_context()})
        refused = json.loads(await controller.run(text, 1))
        assert refused == {
            "ok": False,
            "error": {"code": "empty-message", "message": "Nothing to ask: the message is empty."},
        }
        assert bridge.events == [] and bridge.saved == []
        assert json.loads(controller.state())["conversation"]["messages"] == []
        later = json.loads(await controller.run("search mugs", 2))
        assert later["ok"] and later["value"]["status"] == "answered"
        controller.close()

    run(main())
