"""The ``debugging-tools`` attribute / ``debuggingTools`` option: the site opts in to offer
tools annotated ``debugging: true`` (WebMCP, Chrome 156) to the visitor's agent."""

from __future__ import annotations

from typing import Any

import pytest
from aio import run

from pysite_agent.browser._config import ConfigError, parse_config
from pysite_agent.browser.element import build_tools


def test_the_setting_is_off_unless_given_as_a_boolean() -> None:
    assert parse_config({}).debugging_tools is False
    assert parse_config({"debuggingTools": None}).debugging_tools is False
    assert parse_config({"debuggingTools": True}).debugging_tools is True
    assert parse_config({"debuggingTools": False}).debugging_tools is False
    with pytest.raises(ConfigError, match="debugging-tools must be true or false"):
        parse_config({"debuggingTools": "yes"})


class Tools:
    async def getTools(self) -> list[dict[str, Any]]:
        return [
            {"name": "inspect", "description": "d", "annotations": {"debugging": True}},
            {"name": "search", "description": "d", "annotations": {"readOnlyHint": True}},
        ]

    async def executeTool(self, tool: Any, args: Any, options: Any = None) -> str:
        return "ok"


def test_the_tool_source_follows_the_setting() -> None:
    hidden = run(build_tools(Tools()).get_tools())
    shown = run(build_tools(Tools(), debugging_tools=True).get_tools())
    assert [t.name for t in hidden] == ["search"]
    assert [t.name for t in shown] == ["inspect", "search"]
