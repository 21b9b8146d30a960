"""ModelContextSource over a Python fake of ``document.modelContext`` .

The fake follows what Chromium 156 does (docs/webmcp-native.md): ``getTools()`` returns fresh
plain objects sorted by name, ``executeTool`` looks the tool up by *name*, ``toolchange`` fires
once per register and per unregister. The same module runs inside Pyodide (``--rt node``); the
real browser objects are covered by ``tests/pyodide/test_browser_model_context.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aio import run

import pysite_agent as sa
from pysite_agent import ffi
from pysite_agent.agent import _gateway as gateway
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import ToolCall
from pysite_agent.tools.model_context import ModelContextSource, read_input_schema

WINDOW = object()
OTHER_WINDOW = object()


class DOMError(Exception):
    """What a JS error looks like from Python: a ``name`` and a ``message``."""

    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class FakeModelContext:
    """A Python stand-in for ``document.modelContext`` (Chromium 156 semantics)."""

    def __init__(self, *, events: bool = True, string_args_only: bool = False) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self.listeners: list[Any] = []
        self.calls: list[tuple[str, Any, Any]] = []
        self.string_args_only = string_args_only
        self.deferred_events = False
        self.pending_events = 0
        if events:
            self.addEventListener = self._add
            self.removeEventListener = self._remove

    def _add(self, kind: str, fn: Any) -> None:
        assert kind == "toolchange"
        self.listeners.append(fn)

    def _remove(self, kind: str, fn: Any) -> None:
        self.listeners.remove(fn)

    def fire(self) -> None:
        for fn in list(self.listeners):
            fn({"type": "toolchange"})

    def _changed(self) -> None:
        if self.deferred_events:
            self.pending_events += 1
        else:
            self.fire()

    def flush(self) -> None:
        while self.pending_events:
            self.pending_events -= 1
            self.fire()

    def register(self, name: str, execute: Any = None, **fields: Any) -> None:
        assert name not in self.tools, "InvalidStateError: Duplicate tool name"
        self.tools[name] = {"name": name, "execute": execute or (lambda args: "ok"), **fields}
        self._changed()

    def unregister(self, name: str) -> None:
        del self.tools[name]
        self._changed()

    async def getTools(self) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self.tools):
            entry = self.tools[name]
            tool = {k: v for k, v in entry.items() if k != "execute"}
            tool.setdefault("description", "")
            tool.setdefault("title", "")
            tool.setdefault("window", WINDOW)
            out.append(tool)
        return out

    async def executeTool(self, tool: Any, args: Any, options: Any = None) -> Any:
        self.calls.append((tool["name"], args, options))
        if self.string_args_only and not isinstance(args, str):
            raise DOMError("TypeError", "invalid input: value is not a string")
        entry = self.tools.get(tool["name"])
        if entry is None:
            raise DOMError("UnknownError", "no such tool")
        value = json.loads(args) if isinstance(args, str) else args
        result = entry["execute"](value)
        if asyncio.iscoroutine(result):
            result = await result
        return result


def source_for(mc: FakeModelContext, window: Any = WINDOW) -> ModelContextSource:
    return ModelContextSource(mc, window=window)


# -- listing ----------------------------------------------------------------------------------


def test_lists_sorted_and_skips_tools_of_another_window() -> None:
    mc = FakeModelContext()
    mc.register("b_tool", description="B")
    mc.register("a_tool", description="A", title="Tool A")
    mc.register("framed", description="from a frame", window=OTHER_WINDOW)
    mc.register("windowless", description="no window member", window=None)
    tools = run(source_for(mc).get_tools())
    assert [t.name for t in tools] == ["a_tool", "b_tool", "windowless"]
    assert tools[0].title == "Tool A"
    assert tools[1].title is None  # Chromium gives "" when the page gave no title


def test_without_a_current_window_nothing_is_skipped_for_its_window() -> None:
    mc = FakeModelContext()
    mc.register("framed", description="x", window=OTHER_WINDOW)
    source = ModelContextSource(mc, window=None)
    if ffi.IN_PYODIDE and ffi.global_object("window") is not None:
        pytest.skip("in a browser page the default window is the page's own")
    assert [t.name for t in run(source.get_tools())] == ["framed"]


def test_input_schema_as_object_or_json_string() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    mc = FakeModelContext()
    mc.register("as_object", inputSchema=schema)
    mc.register("as_string", inputSchema=json.dumps(schema))
    mc.register("no_schema")
    tools = {t.name: t for t in run(source_for(mc).get_tools())}
    assert tools["as_object"].input_schema == schema
    assert tools["as_string"].input_schema == schema
    assert tools["no_schema"].input_schema is None


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('{"type": "object",', "not JSON"),
        ('["a"]', "must be a JSON object, not list"),
        ("null", "must be a JSON object, not null"),
        (42, "must be a JSON object, not int"),
    ],
)
def test_an_unusable_input_schema_makes_the_tool_uncallable_with_a_clear_error(
    raw: Any, why: str
) -> None:
    mc = FakeModelContext()
    mc.register("broken", inputSchema=raw)
    (tool,) = run(source_for(mc).get_tools())
    checked = gateway.check_call(ToolCall("c1", "broken", {}), [tool])
    assert isinstance(checked, gateway.InvalidCall)
    assert checked.code == "invalid-schema"
    assert why in checked.message
    assert "cannot be called" in checked.model_text


def test_read_input_schema_never_raises() -> None:
    assert read_input_schema(None) is None
    assert read_input_schema('{"type":"object"}') == {"type": "object"}
    assert "unusable" in read_input_schema("{")["type"]  # type: ignore[index]


def test_annotations_become_a_plain_dict_or_none() -> None:
    mc = FakeModelContext()
    mc.register("hinted", annotations={"readOnlyHint": True, "consequentialHint": False})
    mc.register("bare")
    tools = {t.name: t for t in run(source_for(mc).get_tools())}
    assert tools["hinted"].annotations == {"readOnlyHint": True, "consequentialHint": False}
    assert type(tools["hinted"].annotations) is dict
    assert tools["hinted"].read_only
    assert tools["bare"].annotations is None


def test_entries_without_a_name_are_ignored() -> None:
    class Odd(FakeModelContext):
        async def getTools(self) -> list[dict[str, Any]]:
            return [{"description": "no name"}, {"name": "", "description": "empty"}]

    assert run(source_for(Odd()).get_tools()) == []


# -- identity and revision --------------------------------------------------------------------


def test_keys_are_stable_until_the_page_registers_the_tool_again() -> None:
    mc = FakeModelContext()
    mc.register("cart", description="Add")
    mc.register("other", description="Other")
    source = source_for(mc)
    first = {t.name: t.key for t in run(source.get_tools())}
    again = {t.name: t.key for t in run(source.get_tools())}
    assert first == again
    # Unregister and register with identical content, between two listings: the events say so.
    mc.unregister("cart")
    mc.register("cart", description="Add")
    after = {t.name: t.key for t in run(source.get_tools())}
    assert after["cart"] != first["cart"]


def test_a_listing_between_unregister_and_register_gives_a_new_key() -> None:
    mc = FakeModelContext()
    mc.register("cart", description="Add")
    source = source_for(mc)
    (before,) = run(source.get_tools())
    mc.unregister("cart")
    assert run(source.get_tools()) == []
    mc.register("cart", description="Add")
    (after,) = run(source.get_tools())
    assert after.key != before.key
    assert after.fingerprint() == before.fingerprint()


def test_a_change_seen_before_its_event_does_not_renew_other_keys_later() -> None:
    mc = FakeModelContext()
    mc.deferred_events = True  # like the shim: toolchange fires in a later task
    mc.register("a", description="A")
    mc.flush()
    source = source_for(mc)
    keys = {t.name: t.key for t in run(source.get_tools())}
    mc.register("b", description="B")  # listed before its event arrives
    listed = {t.name: t.key for t in run(source.get_tools())}
    assert listed["a"] == keys["a"]
    mc.flush()
    later = {t.name: t.key for t in run(source.get_tools())}
    assert later == listed


def test_revision_rises_on_every_toolchange_event() -> None:
    mc = FakeModelContext()
    mc.register("a")
    source = source_for(mc)
    run(source.get_tools())
    r0 = source.revision
    mc.fire()  # e.g. a re-registration with the same name and schema
    assert source.revision == r0 + 1
    mc.unregister("a")
    mc.register("a")
    assert source.revision == r0 + 3


def test_revision_rises_when_the_listing_changes_without_events() -> None:
    mc = FakeModelContext(events=False)  # a JS tools object without addEventListener
    mc.register("a", description="one")
    source = source_for(mc)
    run(source.get_tools())
    r0 = source.revision
    run(source.get_tools())
    assert source.revision == r0
    mc.tools["a"]["description"] = "two"
    (tool,) = run(source.get_tools())
    assert source.revision == r0 + 1
    assert tool.description == "two"


def test_on_change_runs_after_the_revision_rose_and_unsubscribes() -> None:
    mc = FakeModelContext()
    source = source_for(mc)
    seen: list[int] = []
    unsubscribe = source.on_change(lambda: seen.append(source.revision))
    mc.register("a")
    assert seen == [1]
    unsubscribe()
    mc.register("b")
    assert seen == [1]


def test_close_removes_the_listener_and_releases_it() -> None:
    baseline = ffi.live_callbacks()
    mc = FakeModelContext()
    source = source_for(mc)
    assert len(mc.listeners) == 1
    assert ffi.live_callbacks() == baseline + 1
    source.close()
    source.close()
    assert mc.listeners == []
    assert ffi.live_callbacks() == baseline


def test_a_failing_on_change_callback_does_not_break_the_event() -> None:
    mc = FakeModelContext()
    source = source_for(mc)
    source.on_change(lambda: 1 / 0)
    calls: list[int] = []
    source.on_change(lambda: calls.append(1))
    mc.register("a")
    assert calls == [1]


def test_construction_checks_the_object() -> None:
    with pytest.raises(TypeError, match="getTools"):
        ModelContextSource(object())


def test_no_model_context_outside_a_browser_is_no_tools() -> None:
    if ffi.IN_PYODIDE and ffi.field(ffi.global_object("document"), "modelContext") is not None:
        pytest.skip("this page has a document.modelContext")
    with pytest.raises(sa.SiteAgentError) as info:
        ModelContextSource()
    assert info.value.code == "no-tools"


# -- execution --------------------------------------------------------------------------------


def test_execute_passes_an_object_and_a_signal() -> None:
    mc = FakeModelContext()
    mc.register("echo", execute=lambda args: f"got {args['n']}")
    source = source_for(mc)
    (tool,) = run(source.get_tools())
    assert run(source.execute_tool(tool, {"n": 2, "x": None})) == "got 2"
    name, args, options = mc.calls[0]
    assert args == {"n": 2, "x": None}
    assert "signal" in options and options["signal"].aborted is False


@pytest.mark.parametrize(
    "error",
    [
        DOMError("TypeError", "invalid input: value is not a string"),
        DOMError("UnknownError", "Could not parse input arguments"),
    ],
)
def test_a_refused_input_is_one_attempt_and_an_error_result(error: DOMError) -> None:
    """One decision, at most one execution: the arguments are never resent as a JSON string."""
    mc = FakeModelContext()
    ran: list[Any] = []
    mc.register("echo", execute=ran.append)

    async def refuse(tool: Any, args: Any, options: Any = None) -> Any:
        mc.calls.append((tool["name"], args, options))
        raise error

    mc.executeTool = refuse  # type: ignore[method-assign]
    source = source_for(mc)
    (tool,) = run(source.get_tools())
    with pytest.raises(ffi.BrowserError, match="so the tool did not run"):
        run(source.execute_tool(tool, {"n": 1}))
    assert [type(c[1]) for c in mc.calls] == [dict]

    execution = run(
        gateway.execute(
            source,
            tool,
            {"n": 2},
            timeout_ms=1000,
            max_result_chars=4000,
            signal=AbortController().signal,
        )
    )
    assert execution.outcome == "threw" and execution.is_error
    assert "could not take these arguments, so the tool did not run" in execution.text
    assert [type(c[1]) for c in mc.calls] == [dict, dict]  # one call per execution
    assert ran == []


def test_results_null_envelope_and_plain_strings() -> None:
    envelope = {"content": [{"type": "text", "text": "hi"}], "isError": True}
    mc = FakeModelContext()
    mc.register("nav", execute=lambda args: None)
    mc.register("mcp", execute=lambda args: json.dumps(envelope))
    mc.register("text", execute=lambda args: '{"content": "not an envelope"}')
    mc.register("data", execute=lambda args: {"n": 1})
    source = source_for(mc)
    tools = {t.name: t for t in run(source.get_tools())}
    assert run(source.execute_tool(tools["nav"], {})) is None
    assert run(source.execute_tool(tools["mcp"], {})) == envelope
    assert run(source.execute_tool(tools["text"], {})) == '{"content": "not an envelope"}'
    assert run(source.execute_tool(tools["data"], {})) == {"n": 1}


def test_a_failing_tool_raises_a_readable_error() -> None:
    def fail(args: Any) -> Any:
        raise DOMError("UnknownError", "Tool was executed but the invocation failed")

    mc = FakeModelContext()
    mc.register("bad", execute=fail)
    source = source_for(mc)
    (tool,) = run(source.get_tools())
    with pytest.raises(Exception, match="UnknownError: Tool was executed"):
        run(source.execute_tool(tool, {}))


def test_executing_a_registration_that_is_gone_raises_lookup_error() -> None:
    mc = FakeModelContext()
    mc.register("cart")
    source = source_for(mc)
    (old,) = run(source.get_tools())
    mc.unregister("cart")
    mc.register("cart")
    with pytest.raises(LookupError, match="no longer registered"):
        run(source.execute_tool(old, {}))
    assert mc.calls == []


def test_abort_reaches_the_browser_call() -> None:
    seen: dict[str, Any] = {}

    mc = FakeModelContext()

    async def slow(args: Any) -> str:
        await asyncio.sleep(60)
        return "late"

    async def execute(tool: Any, args: Any, options: Any = None) -> Any:
        signal = options["signal"]
        seen["signal"] = signal
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        signal.add_listener(lambda: done.set_exception(DOMError("AbortError", "aborted")))
        return await done

    mc.register("slow", execute=slow)
    mc.executeTool = execute  # type: ignore[method-assign]
    source = source_for(mc)

    async def main() -> None:
        (tool,) = await source.get_tools()
        controller = AbortController()
        loop = asyncio.get_running_loop()
        loop.call_later(1.0, controller.abort, "stop")
        with pytest.raises(AbortedError):
            await source.execute_tool(tool, {}, signal=controller.signal)
        assert seen["signal"].aborted

    run(main())


def test_cancelling_the_awaiting_task_aborts_the_browser_call() -> None:
    seen: dict[str, Any] = {}
    mc = FakeModelContext()

    async def execute(tool: Any, args: Any, options: Any = None) -> Any:
        seen["signal"] = options["signal"]
        await asyncio.sleep(60)
        return "late"

    mc.register("slow")
    mc.executeTool = execute  # type: ignore[method-assign]
    source = source_for(mc)

    async def main() -> None:
        (tool,) = await source.get_tools()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(source.execute_tool(tool, {}), 5)
        assert seen["signal"].aborted

    run(main())


# -- with the bridge --------------------------------------------------------------------------


class Scripted:
    name = "scripted"

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.requests: list[Any] = []

    async def respond(self, request: Any) -> Any:
        self.requests.append(request)
        return self.replies.pop(0)


def test_a_run_over_the_source_asks_and_runs() -> None:
    mc = FakeModelContext()
    cart: list[str] = []
    mc.register(
        "add_to_cart",
        description="Add a product",
        inputSchema={"type": "object", "properties": {"id": {"type": "string"}}},
        annotations={"readOnlyHint": False},
        execute=lambda args: cart.append(args["id"]) or "added",
    )
    model = Scripted(
        [
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug"}},
            {"type": "answer", "text": "done"},
        ]
    )
    agent = sa.create_site_agent(model=model, tools=source_for(mc), confirm=lambda request: True)

    async def main() -> Any:
        return await agent.run("add a mug").done

    result = run(main())
    assert result.status == "answered"
    assert cart == ["mug"]
    assert model.requests[0].tools[0]["name"] == "add_to_cart"


def test_a_re_registration_while_the_visitor_decides_is_stale() -> None:
    mc = FakeModelContext()
    ran: list[str] = []
    mc.register("buy", description="Buy", execute=lambda args: ran.append("old") or "ok")

    def confirm(request: Any) -> bool:
        mc.unregister("buy")
        mc.register("buy", description="Buy", execute=lambda args: ran.append("new") or "ok")
        return True

    model = Scripted(
        [{"type": "tool", "name": "buy", "arguments": {}}, {"type": "answer", "text": "ok"}]
    )
    agent = sa.create_site_agent(model=model, tools=source_for(mc), confirm=confirm)

    async def main() -> Any:
        return await agent.run("buy").done

    result = run(main())
    assert ran == []
    results = [s for s in result.trace["steps"] if s["kind"] == "tool-result"]
    assert results[0]["outcome"] == "stale-tools"


def _route_change_page(on_confirm: Any) -> tuple[FakeModelContext, list[str], Any]:
    """A single-page app: ``open_search`` moves to the search route, whose component registers
    ``search``; ``toolchange`` fires in a later task (like the shim), so the agent's next listing
    sees ``search`` before its event arrives. ``on_confirm`` runs while the visitor decides."""
    mc = FakeModelContext()
    mc.deferred_events = True
    ran: list[str] = []

    def open_search(args: Any) -> str:
        mc.register("search", description="Search", execute=lambda a: ran.append("search") or "3")
        return "on the search page"

    mc.register("open_search", description="Open search", execute=open_search)
    mc.flush()

    def confirm(request: Any) -> bool:
        if request.call.name == "search":
            on_confirm(mc)
        return True

    model = Scripted(
        [
            {"type": "tool", "name": "open_search", "arguments": {}},
            {"type": "tool", "name": "search", "arguments": {}},
            {"type": "answer", "text": "3 mugs"},
        ]
    )
    agent = sa.create_site_agent(model=model, tools=source_for(mc), confirm=confirm)
    return mc, ran, agent


def test_an_allow_survives_the_late_event_of_a_change_the_listing_already_saw() -> None:
    # The search tool's own toolchange arrives while the visitor decides: the listing the
    # decision was made on already showed it, so the allowed call runs (no stale-tools).
    _mc, ran, agent = _route_change_page(lambda mc: mc.flush())

    async def main() -> Any:
        return await agent.run("find mugs").done

    result = run(main())
    outcomes = [s["outcome"] for s in result.trace["steps"] if s["kind"] == "tool-result"]
    assert outcomes == ["ran", "ran"]
    assert ran == ["search"]
    assert result.status == "answered"


def test_a_real_change_behind_a_late_event_is_still_stale() -> None:
    # Besides the late event, the page registers the search tool again (same content) while the
    # visitor decides: that change was never listed, so the call is not run.
    def re_register(mc: FakeModelContext) -> None:
        mc.unregister("search")
        mc.register("search", description="Search", execute=lambda a: "other")
        mc.flush()

    _mc, ran, agent = _route_change_page(re_register)

    async def main() -> Any:
        return await agent.run("find mugs").done

    result = run(main())
    outcomes = [s["outcome"] for s in result.trace["steps"] if s["kind"] == "tool-result"]
    assert outcomes == ["ran", "stale-tools"]
    assert ran == []
