"""Mounting declared tools on a model context, on CPython, against a Python stand-in for
Chromium 156's ``document.modelContext`` (the real one and the JS shim are in
``tests/pyodide/test_mount.py``).

The stand-in follows what platform.md measured: ``registerTool`` registers at once and returns an
awaitable that fails for a bad or duplicate name or an empty description; aborting the signal
unregisters; ``executeTool`` calls ``execute(input_copy, {signal})`` and turns the result into a
string (``""`` -> ``"Operation succeeded"``, objects -> JSON text); a throwing tool becomes
``UnknownError`` with a generic message.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Literal

import pytest
from aio import run
from helpers import ScriptedModel, answer, tool_call

import pysite_agent as sa
from pysite_agent import ffi
from pysite_agent.tools.declare import EMPTY_RESULT, ToolRegistry, tool
from pysite_agent.tools.model_context import ModelContextSource
from pysite_agent.tools.mount import Mount, error_result, js_result, mount

NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class DOMError(Exception):
    """A DOMException as Pyodide shows it: ``name`` and ``message``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


async def _resolved() -> None:
    await asyncio.sleep(0)


async def _rejected(error: Exception) -> None:
    await asyncio.sleep(0)
    raise error


class FakeModelContext:
    """Chromium 156's ``document.modelContext``, in Python (see the module docstring)."""

    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self.toolchanges = 0
        self._listeners: list[Any] = []

    def addEventListener(self, kind: str, fn: Any) -> None:
        self._listeners.append(fn)

    def removeEventListener(self, kind: str, fn: Any) -> None:
        self._listeners.remove(fn)

    def _changed(self) -> None:
        self.toolchanges += 1
        for fn in list(self._listeners):
            fn()

    def registerTool(self, tool: dict[str, Any], options: Any = None) -> Any:
        name = str(tool["name"])
        signal = (options or {}).get("signal")
        if not NAME.match(name):
            return _rejected(DOMError("InvalidStateError", "Invalid tool name"))
        if name in self.tools:
            return _rejected(DOMError("InvalidStateError", "Duplicate tool name"))
        if not tool.get("description"):
            return _rejected(DOMError("InvalidStateError", "Description is required"))
        if signal is not None and signal.aborted:
            return _rejected(DOMError("AbortError", "aborted"))
        entry = dict(tool)
        self.tools[name] = entry
        if signal is not None:
            signal.add_listener(lambda: self._unregister(name, entry))
        self._changed()
        return _resolved()

    def _unregister(self, name: str, entry: dict[str, Any]) -> None:
        if self.tools.get(name) is entry:
            del self.tools[name]
            self._changed()

    async def getTools(self) -> list[dict[str, Any]]:
        return [
            {"title": ""} | {k: v for k, v in self.tools[n].items() if k != "execute"}
            for n in sorted(self.tools)
        ]

    async def executeTool(self, tool: Any, args: Any, options: Any = None) -> str:
        entry = self.tools.get(tool["name"])
        if entry is None:
            raise DOMError("UnknownError", "The operation failed for an unknown transient reason")
        signal = (options or {}).get("signal")
        try:
            value = await entry["execute"](json.loads(json.dumps(args)), {"signal": signal})
        except Exception:  # noqa: BLE001 - what Chromium does with a throwing tool
            raise DOMError("UnknownError", "Tool was executed but the invocation failed.") from None
        if isinstance(value, str):
            return value or EMPTY_RESULT
        return json.dumps(value, separators=(",", ":"))


class Board:
    """A task board: the page's state and its Python tools."""

    def __init__(self) -> None:
        self.tasks: list[str] = []
        self.registry = ToolRegistry()
        registry = self.registry

        @registry.tool(read_only=True)
        def list_tasks() -> str:
            """Show the tasks on the board, with their numbers."""
            return "; ".join(f"{i}. {t}" for i, t in enumerate(self.tasks, 1)) or "No tasks."

        @registry.tool(title="Add a task")
        def add_task(title: str, priority: Literal["low", "normal", "high"] = "normal") -> str:
            """Put a new task on the board.

            Args:
                title: what to do.
                priority: how urgent it is.
            """
            self.tasks.append(title if priority == "normal" else f"{title} ({priority})")
            return f"Added task {len(self.tasks)}: {title}"

        @registry.tool(available=lambda: True if self.tasks else "There are no tasks to finish.")
        def finish_task(number: int) -> dict[str, Any]:
            """Mark a task as done by its number."""
            if not 1 <= number <= len(self.tasks):
                return error_result(f"There is no task {number}.")
            done = self.tasks.pop(number - 1)
            return {"content": [{"type": "text", "text": f"Finished: {done}"}]}

        @registry.tool
        def clear_board() -> None:
            """Remove every task."""
            self.tasks.clear()

        @registry.tool
        def explode(reason: str) -> str:
            """Fail on purpose."""
            raise KeyError(reason)


# ---------------------------------------------------------------------------- results


def test_js_result_normalizes_like_the_core() -> None:
    assert js_result("text") == "text"
    assert js_result("") == ""
    assert js_result(None) == EMPTY_RESULT == "Operation succeeded"
    mcp = {"content": [{"type": "text", "text": "hi"}], "isError": True}
    copied = js_result(mcp)
    assert copied == mcp and copied is not mcp
    assert js_result({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    assert js_result(3) == "3"
    assert error_result("why") == {"content": [{"type": "text", "text": "why"}], "isError": True}


def test_a_none_result_reads_as_success_through_tools_too() -> None:
    @tool
    def noop() -> None:
        """Do nothing."""

    assert run(noop.tool.execute({}, None)) == "Operation succeeded"
    assert run(noop.execute({})) is None  # the declared function's own value is unchanged


# ---------------------------------------------------------------------------- registering


def test_mount_registers_available_tools_and_unmount_releases_everything() -> None:
    board = Board()
    mc = FakeModelContext()
    before = ffi.live_callbacks()

    async def main() -> Mount:
        return await board.registry.mount(mc)

    mounted = run(main())
    # finish_task's predicate says no (no tasks): not registered.
    assert mounted.names == ["add_task", "clear_board", "explode", "list_tasks"]
    assert sorted(mc.tools) == mounted.names
    assert ffi.live_callbacks() == before + 4
    assert board.registry.mounts == [mounted]
    add = mc.tools["add_task"]
    assert add["title"] == "Add a task"
    assert add["description"] == "Put a new task on the board."
    assert add["annotations"] == {
        "readOnlyHint": False,
        "untrustedContentHint": False,
        "consequentialHint": False,
    }
    assert add["inputSchema"] == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "what to do."},
            "priority": {
                "enum": ["low", "normal", "high"],
                "type": "string",
                "description": "how urgent it is.",
                "default": "normal",
            },
        },
        "additionalProperties": False,
        "required": ["title"],
    }
    assert "title" not in mc.tools["list_tasks"]
    assert mc.tools["list_tasks"]["annotations"]["readOnlyHint"] is True
    assert callable(add["execute"])

    board.registry.unmount()
    assert mc.tools == {}
    assert ffi.live_callbacks() == before
    assert board.registry.mounts == [] and mounted.closed
    board.registry.unmount()  # idempotent
    mounted.unmount()
    assert ffi.live_callbacks() == before


def test_a_refused_registration_rolls_back_and_raises_a_readable_error() -> None:
    board = Board()
    mc = FakeModelContext()
    run(_register_plain(mc, "list_tasks"))  # the page already has a tool of that name
    before = ffi.live_callbacks()
    with pytest.raises(ffi.BrowserError, match="InvalidStateError: Duplicate tool name"):
        run(mount(board.registry, mc))
    assert sorted(mc.tools) == ["list_tasks"]  # only the page's own tool is left
    assert ffi.live_callbacks() == before
    assert board.registry.mounts == []


async def _register_plain(mc: FakeModelContext, name: str) -> None:
    await mc.registerTool({"name": name, "description": "d", "execute": lambda *a: "x"})


def test_mount_errors_before_registering_anything() -> None:
    registry = ToolRegistry()

    @registry.tool
    def nameless() -> str:
        return "no docstring, no description"

    mc = FakeModelContext()
    with pytest.raises(ValueError, match="no description"):
        run(registry.mount(mc))
    assert mc.tools == {}
    with pytest.raises(TypeError, match="registerTool"):
        run(registry.mount(object()))
    with pytest.raises(RuntimeError, match=r"document\.modelContext"):
        run(registry.mount())  # CPython: no document

    board = Board()
    other = FakeModelContext()

    async def twice() -> None:
        await board.registry.mount(other)
        await board.registry.mount(other)

    with pytest.raises(RuntimeError, match="already mounted"):
        run(twice())
    board.registry.unmount()


def test_refresh_follows_the_predicates_and_calls_refresh_by_themselves() -> None:
    board = Board()
    mc = FakeModelContext()

    async def main() -> list[list[str]]:
        mounted = await board.registry.mount(mc)
        seen = [mounted.names]
        # The page's own code changes the state and refreshes.
        board.tasks.append("water the plants")
        await mounted.refresh()
        seen.append(sorted(mc.tools))
        # A call through the mount refreshes afterwards: the board is empty again.
        source = ModelContextSource(mc)
        tools = {t.name: t for t in await source.get_tools()}
        text = await source.execute_tool(tools["finish_task"], {"number": 1})
        assert text == {"content": [{"type": "text", "text": "Finished: water the plants"}]}
        seen.append(sorted(mc.tools))
        # A tool added to the registry later is mounted at once; a removed one goes away.

        @board.registry.tool(read_only=True)
        def count_tasks() -> int:
            """Count the tasks."""
            return len(board.tasks)

        board.registry.remove("explode")
        await mounted.settled()
        seen.append(sorted(mc.tools))
        source.close()
        return seen

    seen = run(main())
    assert seen == [
        ["add_task", "clear_board", "explode", "list_tasks"],
        ["add_task", "clear_board", "explode", "finish_task", "list_tasks"],
        ["add_task", "clear_board", "explode", "list_tasks"],
        ["add_task", "clear_board", "count_tasks", "list_tasks"],
    ]
    board.registry.unmount()
    assert mc.tools == {}


def test_a_predicate_that_raises_means_not_available() -> None:
    registry = ToolRegistry()
    state = {"boom": False}

    def predicate() -> bool:
        if state["boom"]:
            raise RuntimeError("broken predicate")
        return True

    @registry.tool(available=predicate)
    def fragile() -> str:
        """Fragile."""
        return "ok"

    mc = FakeModelContext()

    async def main() -> None:
        mounted = await registry.mount(mc)
        assert mounted.names == ["fragile"]
        state["boom"] = True
        mounted.sync()
        assert mounted.names == [] and mc.tools == {}
        registry.unmount()

    run(main())


# ---------------------------------------------------------------------------- calls


def test_results_and_errors_reach_a_webmcp_caller_as_text_it_can_read() -> None:
    board = Board()
    mc = FakeModelContext()

    async def main() -> dict[str, Any]:
        await board.registry.mount(mc)
        execute = {name: entry["execute"] for name, entry in mc.tools.items()}
        out = {
            "list": await mc.executeTool({"name": "list_tasks"}, {}),
            "add": await mc.executeTool({"name": "add_task"}, {"title": "buy milk"}),
            "none": await mc.executeTool({"name": "clear_board"}, {}),
            "bad_args": await mc.executeTool({"name": "add_task"}, {"title": 5}),
            "boom": await mc.executeTool({"name": "explode"}, {"reason": "no such key"}),
            # No arguments at all (WebMCP's input is optional).
            "no_input": await execute["list_tasks"](None, None),
        }
        # finish_task is not registered (no tasks); a stale reference is refused with the reason.
        board.tasks.append("x")
        board.registry.refresh()
        finish = mc.tools["finish_task"]["execute"]
        board.tasks.clear()
        out["refused"] = await finish({"number": 1}, {})
        board.registry.unmount()
        return out

    out = run(main())
    assert out["list"] == "No tasks."
    assert out["add"] == "Added task 1: buy milk"
    assert out["none"] == "Operation succeeded"
    assert out["no_input"] == "No tasks."
    bad = json.loads(out["bad_args"])
    assert bad["isError"] is True
    assert bad["content"][0]["text"].startswith("invalid arguments for add_task: /title: 5 is not")
    boom = json.loads(out["boom"])
    assert boom == error_result("explode failed: KeyError: 'no such key'")
    assert out["refused"] == error_result("There are no tasks to finish.")


def test_an_aborted_call_stops_the_python_task() -> None:
    registry = ToolRegistry()
    seen: dict[str, Any] = {}

    @registry.tool(read_only=True)
    async def slow(signal: sa.AbortSignal | None = None) -> str:
        """Take a long time."""
        seen["signal"] = signal
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise
        return "late"

    mc = FakeModelContext()

    async def main() -> Any:
        await registry.mount(mc)
        controller = sa.AbortController()
        call = asyncio.ensure_future(mc.tools["slow"]["execute"]({}, {"signal": controller.signal}))
        await asyncio.sleep(1)
        controller.abort("stop")
        result = await call
        registry.unmount()
        return result

    result = run(main())
    assert result == error_result("slow: The caller stopped this call before it finished.")
    assert seen["signal"].aborted and seen.get("cancelled") is True


def test_the_agent_drives_mounted_tools_through_the_model_context() -> None:
    """The whole path: demo rules -> bridge -> ModelContextSource -> fake WebMCP -> mount ->
    the Python function, with the confirmation rules of the bridge."""
    board = Board()
    mc = FakeModelContext()
    asked: list[str] = []

    async def confirm(request: sa.ConfirmRequest) -> bool:
        asked.append(request.tool.name)
        return request.tool.name != "clear_board"

    async def main() -> list[sa.RunResult]:
        await board.registry.mount(mc)
        source = ModelContextSource(mc)
        agent = sa.create_site_agent(model=sa.demo_rules(), tools=source, confirm=confirm)
        results = [await agent.run(text).done for text in ("add a task buy milk", "show tasks")]
        model = ScriptedModel([tool_call("explode", {"reason": "gone"}), answer("sorry")])
        scripted = sa.create_site_agent(model=model, tools=source, confirm=lambda r: True)
        results.append(await scripted.run("break it").done)
        results.append(await agent.run("clear the board").done)
        source.close()
        board.registry.unmount()
        return results

    added, listed, exploded, cleared = run(main())
    assert added.answer == "add_task: Added task 1: buy milk"
    assert listed.answer == "list_tasks: 1. buy milk"
    assert asked == ["add_task", "clear_board"]  # the read-only list ran without asking
    [result] = [s for s in exploded.trace["steps"] if s["kind"] == "tool-result"]
    assert result["isError"] is True
    assert result["text"] == "explode failed: KeyError: 'gone'"
    assert cleared.answer == "I did not run clear_board: it was not allowed."
    assert board.tasks == ["buy milk"]
