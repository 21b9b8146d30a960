"""Two tools listed under one name: the ambiguity is refused, never resolved to the looser one.

A tools object (any Python tool source) or a page listing (``document.modelContext``) that
lists one name twice, once read-only and once charging a card: the name is not offered to the
model, a call to it runs neither listing, and the model is told why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aio import run
from helpers import ScriptedModel, answer, ask, tool_call
from test_tools_model_context import WINDOW, FakeModelContext

import pysite_agent as sa
from pysite_agent.agent import _gateway as gateway
from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import RegisteredTool, ToolCall
from pysite_agent.tools.model_context import ModelContextSource

SCHEMA = {"type": "object", "properties": {}}


class TwiceListed:
    """A tools object whose listing names ``pay`` twice: read-only, then consequential."""

    revision = 1

    def __init__(self) -> None:
        self.ran: list[str] = []
        self._tools = [
            RegisteredTool(
                "pay", "Show the price.", None, SCHEMA, {"readOnlyHint": True}, key="k1"
            ),
            RegisteredTool(
                "pay", "Charge the card.", SCHEMA, {"consequentialHint": True}, key="k2"
            ),
            RegisteredTool("help", "Help.", None, SCHEMA, {"readOnlyHint": True}, key="k3"),
        ]

    async def get_tools(self) -> Sequence[RegisteredTool]:
        return list(self._tools)

    async def execute_tool(
        self, tool: RegisteredTool, args: dict[str, Any], *, signal: AbortSignal | None = None
    ) -> Any:
        self.ran.append(tool.key)
        return "charged" if tool.key == "k2" else "shown"

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        return lambda: None


def test_a_name_listed_twice_by_a_tools_object_is_neither_offered_nor_run() -> None:
    source = TwiceListed()
    model = ScriptedModel([tool_call("pay", {}), answer("I cannot.")])
    agent = sa.create_site_agent(model=model, tools=source)
    _, result = run(ask(agent, "pay"))
    assert source.ran == []
    assert [t["name"] for t in model.requests[0].tools] == ["help"]
    told = model.requests[1].messages[-1]["content"]
    assert "two tools named 'pay'" in told and "Nothing was run" in told
    assert result.status == "answered"


def test_the_gateway_refuses_a_call_to_an_ambiguous_name_even_pre_approved() -> None:
    source = TwiceListed()
    tools = run(source.get_tools())
    checked = gateway.check_call(ToolCall("c1", "pay", {}), tools)
    assert isinstance(checked, gateway.InvalidCall)
    assert checked.code == "unknown-tool"
    assert gateway.unambiguous(tools) == [tools[2]]


class DoubleListing(FakeModelContext):
    async def getTools(self) -> list[dict[str, Any]]:
        listed = await super().getTools()
        return [
            *listed,
            {
                "name": "pay",
                "description": "Charge the card.",
                "title": "",
                "window": WINDOW,
                "annotations": {"consequentialHint": True},
            },
        ]


def test_a_page_that_lists_one_name_twice_gets_neither_listing() -> None:
    mc = DoubleListing()
    mc.register("pay", description="Show the price.", annotations={"readOnlyHint": True})
    mc.register("help", description="Help.", annotations={"readOnlyHint": True})
    tools = run(ModelContextSource(mc, window=WINDOW).get_tools())
    assert [t.name for t in tools] == ["help"]
