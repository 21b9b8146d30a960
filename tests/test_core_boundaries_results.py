"""A tool's result over its whole range (a row of docs/boundaries.md): nothing
(``None`` / ``undefined`` / ``null``) is an empty success, never "the page navigated"; any value
becomes text without raising. Runs on CPython and in Pyodide (tests/pyodide/test_core_suite.py);
JS ``null`` from ``executeTool`` (the page navigated) is tested with real JS values in
tests/pyodide/test_browser_model_context.py."""

from __future__ import annotations

from typing import Any

from aio import run
from generators import NOTHING, hostile_value
from helpers import ScriptedModel, answer, tool_call
from hypothesis import given, settings

import pysite_agent as sa
from pysite_agent.core.results import NAVIGATED, NO_RESULT_TEXT, result_text
from pysite_agent.tools.model_context import _result


@settings(max_examples=100)
@given(hostile_value)
def test_any_value_becomes_text_and_only_the_marker_means_navigated(value: Any) -> None:
    out = result_text(value)
    assert isinstance(out.text, str) and out.text
    assert out.navigated is False


def test_nothing_as_it_arrives_is_no_result() -> None:
    for nothing in NOTHING:
        if nothing == "<missing>":
            continue
        read = _result(nothing)  # executeTool stringifies undefined and null results
        assert read is None, nothing
        out = result_text(read)
        assert out.text == NO_RESULT_TEXT and not out.navigated and not out.is_error
    assert _result("null value") == "null value"
    assert result_text(NAVIGATED).navigated


def test_a_delete_tool_that_returns_nothing_tells_the_model_it_ran() -> None:
    removed: list[str] = []

    def delete(args: dict[str, Any]) -> None:
        removed.append(args["id"])

    tool = sa.Tool(
        "delete_item",
        "Delete an item.",
        delete,
        {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        {"readOnlyHint": True},
    )
    model = ScriptedModel([tool_call("delete_item", {"id": "a"}), answer("Deleted.")])
    agent = sa.create_site_agent(model=model, tools=[tool])

    async def main() -> Any:
        return await agent.run("delete a").done

    result = run(main())
    assert removed == ["a"] and result.status == "answered"
    told = model.requests[1].messages[-1]
    assert told["content"] == NO_RESULT_TEXT and told["isError"] is False
    step = next(s for s in result.trace["steps"] if s["kind"] == "tool-result")
    assert step["navigated"] is False
