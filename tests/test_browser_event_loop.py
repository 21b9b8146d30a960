"""pysite_agent.browser.event_loop: batched ready callbacks keep asyncio's guarantees.

These run on CPython's own loop (the batcher changes any loop the same way); the Pyodide lane
runs an agent on Pyodide's WebLoop with it (tests/pyodide/test_browser_ffi.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import time

import pytest

from pysite_agent import Tool, create_site_agent, custom
from pysite_agent.browser import event_loop


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        event_loop.uninstall(loop)
        loop.close()


def _drains(loop) -> list[int]:
    """Counts the browser tasks the batcher asks for (its call_later(0, drain) calls)."""
    counts = [0]
    original = loop.call_later

    def counting(delay, callback, *args, **kwargs):
        if delay == 0:
            counts[0] += 1
        return original(delay, callback, *args, **kwargs)

    loop.call_later = counting
    return counts


def test_install_once_and_uninstall(loop):
    assert not event_loop.batching(loop)
    assert event_loop.install(loop) is True
    assert event_loop.batching(loop)
    assert event_loop.install(loop) is False  # a second call changes nothing
    assert event_loop.uninstall(loop) is True
    assert not event_loop.batching(loop)
    assert event_loop.uninstall(loop) is False


@pytest.mark.parametrize("budget", [0, -1, float("nan"), "5"])
def test_budget_must_be_positive(loop, budget):
    with pytest.raises(ValueError, match="budget_ms"):
        event_loop.install(loop, budget_ms=budget)
    assert not event_loop.batching(loop)


def test_callbacks_run_in_order_in_one_drain(loop):
    drains = _drains(loop)
    event_loop.install(loop)
    seen: list[int] = []

    async def main():
        for i in range(50):
            loop.call_soon(seen.append, i)
        await asyncio.sleep(0)  # queued behind the 50
        seen.append(-1)

    loop.run_until_complete(main())
    assert seen == [*range(50), -1]
    # The 50 callbacks and the wake-up after sleep(0) shared one drain (plus the few the
    # task itself needed), where the plain loop would have needed one task each.
    assert drains[0] <= 3


def test_cancelled_handles_are_skipped_and_contexts_kept(loop):
    event_loop.install(loop)
    seen: list[str] = []
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="none")

    async def main():
        handle = loop.call_soon(seen.append, "cancelled")
        handle.cancel()
        ctx = contextvars.copy_context()
        ctx.run(var.set, "inside")
        loop.call_soon(lambda: seen.append(var.get()), context=ctx)
        loop.call_soon_threadsafe(seen.append, "threadsafe")
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    loop.run_until_complete(main())
    assert seen == ["inside", "threadsafe"]


def test_an_exception_goes_to_the_handler_and_the_rest_still_run(loop):
    event_loop.install(loop)
    errors: list[BaseException] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context["exception"]))
    seen: list[str] = []

    def boom():
        raise RuntimeError("boom")

    async def main():
        loop.call_soon(boom)
        loop.call_soon(seen.append, "after")
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    loop.run_until_complete(main())
    assert seen == ["after"]
    assert [str(e) for e in errors] == ["boom"]


def test_a_drain_yields_after_its_budget(loop):
    drains = _drains(loop)
    event_loop.install(loop, budget_ms=1)
    seen: list[int] = []

    async def main():
        finished = asyncio.Event()

        def slow(i: int) -> None:
            time.sleep(0.002)  # longer than the budget: each drain runs one, then yields
            seen.append(i)
            if len(seen) == 4:
                finished.set()

        for i in range(4):
            loop.call_soon(slow, i)
        await finished.wait()

    loop.run_until_complete(main())
    assert seen == [0, 1, 2, 3]
    assert drains[0] >= 4


def test_timers_keep_their_delay(loop):
    event_loop.install(loop)

    async def main():
        started = loop.time()
        await asyncio.sleep(0.05)
        return loop.time() - started

    assert loop.run_until_complete(main()) >= 0.045


def test_an_agent_run_is_the_same_with_batching(loop):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    def respond(request):
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done >= 5:
            return {"type": "answer", "text": f"done {done}"}
        return {"type": "tool", "name": "ping", "arguments": {"n": done}}

    async def run():
        tools = [
            Tool(
                "ping",
                "Ping.",
                lambda args: f"pong {args['n']}",
                input_schema=schema,
                annotations={"readOnlyHint": True},
            )
        ]
        agent = create_site_agent(model=custom(respond), tools=tools)
        result = await agent.run("go").done
        kinds = [step["kind"] for step in result.trace["steps"]]
        return result.status, result.answer, kinds

    plain = loop.run_until_complete(run())
    event_loop.install(loop)
    batched = loop.run_until_complete(run())
    assert batched == plain
    assert plain[:2] == ("answered", "done 5")


def test_abort_still_stops_a_waiting_run(loop):
    event_loop.install(loop)
    started = asyncio.Event()

    async def never(args, signal=None):
        started.set()
        await asyncio.Event().wait()

    def respond(request):
        return {"type": "tool", "name": "wait", "arguments": {}}

    async def main():
        tools = [Tool("wait", "Waits.", never, annotations={"readOnlyHint": True})]
        agent = create_site_agent(model=custom(respond), tools=tools)
        run = agent.run("go")
        await started.wait()
        run.abort()
        return await asyncio.wait_for(run.done, 2)

    result = loop.run_until_complete(main())
    assert result.status == "aborted"
