"""Declared Python tools mounted on a real ``document.modelContext`` inside Pyodide.

Lanes:

- the project's JS shim (``web/webmcp/shim.js`` loaded from source, ``createModelContext()``):
  on Node and in Chromium;
- Chromium's native ``document.modelContext`` (``--enable-features=WebMCP``): Chromium only.

One scenario runs in every lane: mount, list from JS, call from JS (results, ``None``, MCP
results, refusals, bad arguments, exceptions, an abort), follow a predicate, drive an agent
through :class:`ModelContextSource`, unmount, and count PyProxies (Pyodide's own allocation
tracing) and owned callbacks before and after: nothing may be left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_pyodide import get_global_config, run_in_pyodide

ROOT = Path(__file__).resolve().parents[2]

# pytest-pyodide's Node runner evaluates code in a vm context with few globals; the shim needs
# the DOM event classes that Node 20 has.
_NODE_GLOBALS = ("EventTarget", "Event", "DOMException")
_config = get_global_config()
_config.add_node_extra_globals(
    g for g in _NODE_GLOBALS if g not in _config.get_node_extra_globals()
)


@pytest.fixture(scope="module")
def shim() -> str:
    """``web/webmcp/shim.js`` with the implementation it loads on first use inlined, as an
    expression whose value holds its exports (no import())."""
    from test_browser_model_context import shim_source

    return shim_source()


@run_in_pyodide(packages=["pysite-agent"])
async def _scenario(selenium, shim, lane):
    import asyncio
    import json
    from typing import Literal

    from pyodide.code import run_js

    import pysite_agent as sa
    from pysite_agent import ffi
    from pysite_agent.tools.declare import ToolRegistry
    from pysite_agent.tools.model_context import ModelContextSource

    if lane == "native":
        native = run_js(
            """(() => {
            const d = Object.getOwnPropertyDescriptor(Document.prototype, 'modelContext');
            return !!d && typeof d.get === 'function' &&
              /\\{\\s*\\[native code\\]\\s*\\}\\s*$/.test(Function.prototype.toString.call(d.get));
          })()"""
        )
        assert native is True, "document.modelContext is not Chromium's own (run with WebMCP)"
        mc = run_js("document.modelContext")
    else:
        mc = run_js(shim).createModelContext()

    tasks: list[str] = []
    seen: dict = {}
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def list_tasks() -> str:
        """Show the tasks on the board."""
        return "; ".join(f"{i}. {t}" for i, t in enumerate(tasks, 1)) or "No tasks."

    @registry.tool(title="Add a task")
    def add_task(title: str, priority: Literal["low", "normal", "high"] = "normal") -> str:
        """Put a new task on the board.

        Args:
            title: what to do.
        """
        tasks.append(title)
        return f"Added task {len(tasks)}: {title}"

    @registry.tool(available=lambda: True if tasks else "There are no tasks to finish.")
    def finish_task(number: int) -> dict:
        """Mark a task as done by its number."""
        done = tasks.pop(number - 1)
        return {"content": [{"type": "text", "text": f"Finished: {done}"}]}

    @registry.tool(consequential=True)
    def clear_board() -> None:
        """Remove every task."""
        tasks.clear()

    @registry.tool
    def explode(reason: str) -> str:
        """Fail on purpose."""
        raise KeyError(reason)

    @registry.tool(read_only=True)
    async def slow(signal: sa.AbortSignal | None = None) -> str:
        """Take a long time."""
        seen["signal"] = signal
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise
        return "late"

    count = ffi.pyproxy_tracing(True)
    js_call = run_js(
        """(mc, name, args) => mc.getTools().then((tools) => {
          const tool = tools.find((t) => t.name === name);
          if (!tool) throw new Error('not listed: ' + name);
          return mc.executeTool(tool, args);
        })"""
    )
    try:
        baseline = count()
        callbacks = ffi.live_callbacks()
        mounted = await registry.mount(mc)
        assert mounted.names == ["add_task", "clear_board", "explode", "list_tasks", "slow"]
        assert ffi.live_callbacks() == callbacks + 5
        assert count() == baseline + 5  # one execute proxy per registration, nothing else

        # What any WebMCP client sees.
        plain = run_js("(mc) => mc.getTools().then((ts) => ts.map(({window, ...t}) => t))")
        listed = {t["name"]: t for t in ffi.json_to_py(await plain(mc))}
        assert set(mounted.names) <= set(listed)
        add = listed["add_task"]
        assert add["title"] == "Add a task"
        assert add["description"] == "Put a new task on the board."
        assert add["inputSchema"]["required"] == ["title"]
        assert add["inputSchema"]["properties"]["priority"] == {
            "enum": ["low", "normal", "high"],
            "type": "string",
            "default": "normal",
        }
        hints = {k: listed["list_tasks"]["annotations"][k] for k in ("readOnlyHint",)}
        assert hints == {"readOnlyHint": True}
        assert listed["clear_board"]["annotations"]["consequentialHint"] is True
        assert listed["list_tasks"]["title"] == ""

        # Calls from JavaScript: WebMCP turns each result into a string.
        assert await js_call(mc, "list_tasks", ffi.to_js({})) == "No tasks."
        assert await js_call(mc, "add_task", ffi.to_js({"title": "buy milk"})) == (
            "Added task 1: buy milk"
        )
        await mounted.settled()
        assert "finish_task" in mounted.names  # the call refreshed the predicates
        finished = await js_call(mc, "finish_task", ffi.to_js({"number": 1}))
        # Measured: both native and the shim JSON-stringify an MCP result object.
        assert json.loads(finished) == {"content": [{"type": "text", "text": "Finished: buy milk"}]}
        await mounted.settled()
        assert "finish_task" not in mounted.names
        assert "finish_task" not in {t.name for t in await mc.getTools()}
        assert await js_call(mc, "clear_board", ffi.to_js({})) == "Operation succeeded"

        # Errors are results the caller can read, never the generic UnknownError.
        boom = json.loads(await js_call(mc, "explode", ffi.to_js({"reason": "gone"})))
        assert boom == {
            "content": [{"type": "text", "text": "explode failed: KeyError: 'gone'"}],
            "isError": True,
        }
        # Arguments that fail the schema: the shim refuses them before the tool runs, as the
        # WebMCP spec's argument check says (DataError); native Chromium 156 does not check, so
        # the mounted tool's own validation answers with an error result.
        if lane == "shim":
            refused = await run_js(
                """async (mc) => {
                  const tool = (await mc.getTools()).find((t) => t.name === 'add_task');
                  try { await mc.executeTool(tool, {title: 5}); return 'ran'; }
                  catch (e) { return e.name; }
                }"""
            )(mc)
            assert refused == "DataError"
        else:
            bad = json.loads(await js_call(mc, "add_task", ffi.to_js({"title": 5})))
            assert bad["isError"] is True
            assert bad["content"][0]["text"].startswith("invalid arguments for add_task: /title:")

        # An abort from the caller cancels the Python task.
        aborted = await run_js(
            """async (mc) => {
              const tool = (await mc.getTools()).find((t) => t.name === 'slow');
              const c = new AbortController();
              setTimeout(() => c.abort(new DOMException('stop', 'AbortError')), 50);
              try { await mc.executeTool(tool, {}, {signal: c.signal}); return 'finished'; }
              catch (e) { return e.name; }
            }"""
        )(mc)
        assert aborted == "AbortError"
        for _ in range(50):
            if seen.get("cancelled"):
                break
            await asyncio.sleep(0.01)
        assert seen["signal"].aborted and seen["cancelled"] is True

        # The agent, through ModelContextSource: a read-only call runs at once, a changing one
        # asks, an error result reads as an error, a refusal reads as the predicate's reason.
        source = ModelContextSource(mc)
        asked = []

        async def confirm(request):
            asked.append(request.tool.name)
            return True

        replies = [
            {"type": "tool", "name": "list_tasks", "arguments": {}},
            {"type": "tool", "name": "add_task", "arguments": {"title": "water plants"}},
            {"type": "tool", "name": "explode", "arguments": {"reason": "x"}},
            {"type": "answer", "text": "done"},
        ]
        agent = sa.create_site_agent(
            model=sa.custom(lambda request: replies.pop(0), name="scripted"),
            tools=source,
            confirm=confirm,
        )
        result = await agent.run("go").done
        assert result.status == "answered", result
        steps = [s for s in result.trace["steps"] if s["kind"] == "tool-result"]
        assert [(s["text"], s["isError"]) for s in steps] == [
            ("No tasks.", False),
            ("Added task 1: water plants", False),
            ("explode failed: KeyError: 'x'", True),
        ]
        assert asked == ["add_task", "explode"]
        assert tasks == ["water plants"]
        source.close()

        # A stale reference to a tool whose predicate now says no: refused with the reason.
        tasks.clear()
        registry.refresh()
        await mounted.settled()
        assert "finish_task" not in mounted.names

        await asyncio.sleep(0.05)  # let the tasks of earlier calls finish
        assert count() == baseline + len(mounted.names), "calls left PyProxies behind"
        registry.unmount()
        await asyncio.sleep(0)
        assert count() == baseline, "unmount left PyProxies behind"
        assert ffi.live_callbacks() == callbacks
        left = {t.name for t in await mc.getTools()}
        assert not left & {"add_task", "clear_board", "explode", "list_tasks", "slow"}
    finally:
        ffi.pyproxy_tracing(False)
        registry.unmount()


@run_in_pyodide(packages=["pysite-agent"])
async def _refusals(selenium, shim, lane):
    import pytest
    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.tools.declare import ToolRegistry

    mc = run_js("document.modelContext") if lane == "native" else run_js(shim).createModelContext()
    controller = run_js("new AbortController()")
    await mc.registerTool(
        run_js("({name: 'taken', description: 'the page owns it', execute: () => 'js'})"),
        ffi.to_js({"signal": controller.signal}),
    )
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def fine() -> str:
        """Fine."""
        return "ok"

    @registry.tool(name="taken")
    def taken() -> str:
        """Also wants the name."""
        return "py"

    callbacks = ffi.live_callbacks()
    try:
        with pytest.raises(ffi.BrowserError) as info:
            await registry.mount(mc)
        assert info.value.name == "InvalidStateError"
        assert "Duplicate tool name" in info.value.message
        assert registry.mounts == []
        assert ffi.live_callbacks() == callbacks
        names = {t.name for t in await mc.getTools()}
        assert "fine" not in names and "taken" in names  # rolled back; the page's tool stays
        registry.remove("taken")
        mounted = await registry.mount(mc)
        assert mounted.names == ["fine"]
    finally:
        registry.unmount()
        controller.abort()
    assert ffi.live_callbacks() == callbacks


def test_mount_on_the_shim(selenium: Any, shim: str) -> None:
    _scenario(selenium, shim, "shim")


@pytest.mark.runtimes("chrome")
def test_mount_on_native_webmcp(selenium: Any, shim: str) -> None:
    if selenium.browser != "chrome":
        pytest.fail("needs Chromium (native WebMCP); this runtime is " + selenium.browser)
    _scenario(selenium, shim, "native")


def test_refused_registrations_roll_back(selenium: Any, shim: str) -> None:
    _refusals(selenium, shim, "native" if selenium.browser == "chrome" else "shim")
