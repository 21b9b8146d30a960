"""ModelContextSource over fakes of Chrome 153-160's WebMCP.

The Chromium on the test machines is 156, so what Chrome 159 and 160 do can only be tested
here, against fakes that follow the documented shapes (Chrome's "WebMCP API updates" page of
2026-11-26 and spec PR #348, summarized in ``docs/webmcp-native.md``):

- 160: ``getTools()`` returns instances of a ``Tool`` interface: ``source`` instead of
  ``window``, empty ``inputSchema``/``outputSchema``/``annotations`` are ``null``,
  ``JSON.stringify(tool)`` is ``{}``, ``structuredClone(tool)`` throws, and ``executeTool``
  finds the tool by an internal id, so only the very object ``getTools()`` returned works.
- 159: ``outputSchema`` is accepted and listed.
- 156: the ``debugging`` annotation; 153: ``execute(input, {signal})`` per call.

The 156 behaviour itself is tested against the real browser in ``tests/browser/``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from typing import Any

import pytest
from aio import run

import pysite_agent as sa
from pysite_agent.agent import _gateway as gateway
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import RegisteredTool
from pysite_agent.tools.model_context import ModelContextSource

WINDOW = object()
FRAME = object()


class DOMError(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class Tool:
    """Chrome 160's ``Tool``: read-only attributes, no own data to serialize or clone."""

    __slots__ = ("_fields", "_id")

    def __init__(self, tool_id: int, fields: dict[str, Any]) -> None:
        object.__setattr__(self, "_id", tool_id)
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if name in ("name", "title", "description", "origin", "source"):
            return fields[name]
        if name in ("inputSchema", "outputSchema", "annotations"):
            return fields.get(name)  # null when the page gave none
        raise AttributeError(name)  # e.g. ``window``: renamed to ``source``

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("Tool attributes are read-only")

    def __deepcopy__(self, memo: Any) -> Any:
        raise DOMError("DataCloneError", "Tool object could not be cloned.")

    def toJSON(self) -> dict[str, Any]:
        return {}


class Chrome160ModelContext:
    """``document.modelContext`` as documented for Chrome 160 (no toolchange listener here)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.entries: dict[str, dict[str, Any]] = {}
        self.issued: dict[int, Tool] = {}
        self.calls: list[tuple[Tool, Any, Any]] = []

    def register(self, name: str, execute: Any = None, **fields: Any) -> None:
        entry = {
            "id": next(self._ids),
            "name": name,
            "title": fields.pop("title", ""),
            "description": fields.pop("description", "a tool"),
            "origin": "http://127.0.0.1",
            "source": fields.pop("source", WINDOW),
            "execute": execute or (lambda args, client: "ok"),
            **fields,
        }
        self.entries[name] = entry

    async def getTools(self) -> list[Tool]:
        out = []
        for name in sorted(self.entries):
            entry = self.entries[name]
            fields = {k: v for k, v in entry.items() if k not in ("id", "execute")}
            tool = Tool(entry["id"], fields)
            self.issued[id(tool)] = tool
            out.append(tool)
        return out

    async def executeTool(self, tool: Any, args: Any, options: Any = None) -> Any:
        if not isinstance(tool, Tool) or self.issued.get(id(tool)) is not tool:
            raise DOMError("TypeError", "The provided value is not of type 'Tool'.")
        if not isinstance(args, dict):
            raise DOMError("TypeError", "invalid input object: value is not an object")
        self.calls.append((tool, args, options))
        tool_id = object.__getattribute__(tool, "_id")
        entry = next((e for e in self.entries.values() if e["id"] == tool_id), None)
        if entry is None:
            raise DOMError("UnknownError", "no such tool")
        result = entry["execute"](args, {"signal": options["signal"]})
        if asyncio.iscoroutine(result):
            result = await result
        return result


def test_the_fake_behaves_like_the_documented_tool_interface() -> None:
    mc = Chrome160ModelContext()
    mc.register("t")
    (tool,) = run(mc.getTools())
    assert json.dumps(tool.toJSON()) == "{}"
    with pytest.raises(DOMError, match="DataCloneError"):
        copy.deepcopy(tool)
    with pytest.raises(AttributeError):
        _ = tool.window
    assert tool.inputSchema is None


def test_tools_are_read_attribute_by_attribute_with_source_and_null_members() -> None:
    mc = Chrome160ModelContext()
    mc.register(
        "search",
        title="Search",
        description="Find products",
        inputSchema={"type": "object", "properties": {"q": {"type": "string"}}},
        outputSchema={"type": "object", "properties": {"hits": {"type": "integer"}}},
        annotations={"readOnlyHint": True},
    )
    mc.register("bare", description="No schema, no annotations")
    mc.register("framed", description="From a frame", source=FRAME)
    source = ModelContextSource(mc, window=WINDOW)
    bare, search = run(source.get_tools())
    assert (bare.name, bare.input_schema, bare.output_schema, bare.annotations) == (
        "bare",
        None,
        None,
        None,
    )
    assert bare.title is None
    assert search.title == "Search"
    assert search.input_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert search.output_schema == {"type": "object", "properties": {"hits": {"type": "integer"}}}
    assert search.read_only
    definition = search.to_definition()
    assert definition["outputSchema"] == search.output_schema
    assert "outputSchema" not in bare.to_definition()


def test_execute_tool_gets_the_very_object_get_tools_returned() -> None:
    mc = Chrome160ModelContext()
    mc.register("echo", execute=lambda args, client: f"got {args['n']}")
    source = ModelContextSource(mc, window=WINDOW)
    (tool,) = run(source.get_tools())
    assert run(source.execute_tool(tool, {"n": 3})) == "got 3"
    (given, args, options) = mc.calls[0]
    assert isinstance(given, Tool) and mc.issued[id(given)] is given
    assert args == {"n": 3}


def test_a_result_that_fails_the_output_schema_is_flagged_to_the_model() -> None:
    mc = Chrome160ModelContext()
    schema = {
        "type": "object",
        "properties": {"hits": {"type": "integer"}},
        "required": ["hits"],
    }
    mc.register("good", outputSchema=schema, execute=lambda a, c: json.dumps({"hits": 2}))
    mc.register("bad", outputSchema=schema, execute=lambda a, c: json.dumps({"hits": "many"}))
    mc.register("none", execute=lambda a, c: "anything")
    source = ModelContextSource(mc, window=WINDOW)

    async def main() -> dict[str, gateway.Execution]:
        out = {}
        for tool in await source.get_tools():
            out[tool.name] = await gateway.execute(
                source,
                tool,
                {},
                timeout_ms=5000,
                max_result_chars=4000,
                signal=AbortController().signal,
            )
        return out

    results = run(main())
    assert results["good"].text == '{"hits": 2}'
    assert "output-schema-mismatch" not in results["none"].text
    bad = results["bad"]
    assert bad.text.startswith('{"hits": "many"}\n[output-schema-mismatch]')
    assert "/hits" in bad.text and "not of type 'integer'" in bad.text
    assert bad.outcome == "ran" and not bad.is_error


def test_an_mcp_result_is_checked_by_its_structured_content() -> None:
    tool = RegisteredTool(
        "t", output_schema={"type": "object", "required": ["n"]}, key="t#1", description="d"
    )

    class Source:
        revision = 0

        async def get_tools(self) -> list[RegisteredTool]:
            return [tool]

        async def execute_tool(self, tool: Any, args: Any, *, signal: Any = None) -> Any:
            return {"content": [{"type": "text", "text": "n is 1"}], "structuredContent": {}}

    execution = run(
        gateway.execute(
            Source(),  # type: ignore[arg-type]
            tool,
            {},
            timeout_ms=5000,
            max_result_chars=4000,
            signal=AbortController().signal,
        )
    )
    assert execution.text.startswith("n is 1\n[output-schema-mismatch]")
    assert "'n' is a required property" in execution.text


def test_debugging_tools_are_hidden_unless_the_site_opts_in() -> None:
    mc = Chrome160ModelContext()
    mc.register("inspect_state", annotations={"debugging": True, "readOnlyHint": True})
    mc.register("not_debug", annotations={"debugging": False})
    mc.register("plain")
    hidden = run(ModelContextSource(mc, window=WINDOW).get_tools())
    assert [t.name for t in hidden] == ["not_debug", "plain"]
    shown = run(ModelContextSource(mc, window=WINDOW, debugging_tools=True).get_tools())
    assert [t.name for t in shown] == ["inspect_state", "not_debug", "plain"]


def test_stop_aborts_the_signal_the_running_tool_received() -> None:
    """Chrome 153: the tool's ``execute(input, {signal})`` signal aborts when the caller's
    ``executeTool`` signal does, which the source aborts when the run is stopped."""
    mc = Chrome160ModelContext()
    seen: dict[str, Any] = {}

    async def slow(args: Any, client: Any) -> str:
        signal = client["signal"]
        seen["signal"] = signal
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        signal.add_listener(lambda: done.set_exception(DOMError("AbortError", "stopped")))
        return await done

    mc.register("slow", execute=slow)
    source = ModelContextSource(mc, window=WINDOW)

    async def main() -> None:
        (tool,) = await source.get_tools()
        controller = AbortController()
        asyncio.get_running_loop().call_later(1.0, controller.abort, "stopped")
        with pytest.raises(AbortedError):
            await source.execute_tool(tool, {}, signal=controller.signal)
        assert seen["signal"].aborted

    run(main())


def test_a_run_carries_the_output_schema_to_the_model() -> None:
    mc = Chrome160ModelContext()
    mc.register(
        "count",
        outputSchema={"type": "integer"},
        annotations={"readOnlyHint": True},
        execute=lambda a, c: "seven",
    )

    class Scripted:
        name = "scripted"

        def __init__(self) -> None:
            self.requests: list[Any] = []
            self.replies: list[Any] = [
                {"type": "tool", "name": "count", "arguments": {}},
                {"type": "answer", "text": "done"},
            ]

        async def respond(self, request: Any) -> Any:
            self.requests.append(request)
            return self.replies.pop(0)

    model = Scripted()
    agent = sa.create_site_agent(model=model, tools=ModelContextSource(mc, window=WINDOW))

    async def main() -> Any:
        return await agent.run("how many?").done

    assert run(main()).status == "answered"
    assert model.requests[0].tools[0]["outputSchema"] == {"type": "integer"}
    last = json.dumps(model.requests[1].messages[-1], ensure_ascii=False)
    assert "output-schema-mismatch" in last


class FakeForm:
    def __init__(self, autosubmit: bool) -> None:
        self.autosubmit = autosubmit

    def hasAttribute(self, name: str) -> bool:
        return name == "toolautosubmit" and self.autosubmit


class FakeDocument:
    def __init__(self, forms: dict[str, FakeForm]) -> None:
        self.forms = forms
        self.queries: list[str] = []

    def querySelector(self, selector: str) -> FakeForm | None:
        self.queries.append(selector)
        prefix = 'form[toolname="'
        if not selector.startswith(prefix):
            return None
        return self.forms.get(selector[len(prefix) : -2])


def test_a_form_tool_that_waits_for_the_visitor_is_marked() -> None:
    mc = Chrome160ModelContext()
    for name in ("send_note", "search_form", "imperative"):
        mc.register(name)
    document = FakeDocument({"send_note": FakeForm(False), "search_form": FakeForm(True)})
    source = ModelContextSource(mc, window=WINDOW, document=document)
    tools = {t.name: t.waits_for_visitor for t in run(source.get_tools())}
    assert tools == {"imperative": False, "search_form": False, "send_note": True}
    assert 'form[toolname="send_note"]' in document.queries


def test_the_visitor_wait_replaces_the_tool_timeout_with_a_clear_message() -> None:
    """Waiting for the visitor's submit does not count as the tool's time (README rule 7)."""
    never: asyncio.Future[str] | None = None

    class Source:
        revision = 0

        async def get_tools(self) -> list[RegisteredTool]:
            return []

        async def execute_tool(self, tool: Any, args: Any, *, signal: Any = None) -> Any:
            nonlocal never
            never = asyncio.get_running_loop().create_future()
            return await never

    def execute(tool: RegisteredTool) -> tuple[gateway.Execution, float]:
        async def main() -> tuple[gateway.Execution, float]:
            loop = asyncio.get_running_loop()
            started = loop.time()
            done = await gateway.execute(
                Source(),  # type: ignore[arg-type]
                tool,
                {},
                timeout_ms=30_000,
                max_result_chars=4000,
                signal=AbortController().signal,
                visitor_wait_ms=120_000,
            )
            return done, loop.time() - started

        return run(main())

    form = RegisteredTool("send_note", description="d", key="k", waits_for_visitor=True)
    waited, seconds = execute(form)
    assert seconds == pytest.approx(120, abs=1)  # virtual time: the visitor limit, not 30 s
    assert waited.outcome == "timeout" and waited.is_error
    assert waited.text == (
        "send_note: the form on the page was filled in, but the visitor did not send it "
        "within 2 minutes, so the agent stopped waiting. The form stays filled in; the "
        "visitor can still check it and send it."
    )
    plain, seconds = execute(RegisteredTool("plain", description="d", key="k"))
    assert seconds == pytest.approx(30, abs=1)
    assert plain.text == "plain did not finish within 30000 ms and was stopped."
