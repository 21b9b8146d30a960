"""The Python tool source: registration rules, revision, change events, execution."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aio import run

import pysite_agent as sa


def test_names_follow_webmcp_rules() -> None:
    source = sa.PythonToolSource()
    for bad in ["", "has space", "bang!", "x" * 129, "ünï"]:
        with pytest.raises(ValueError):
            source.register(sa.Tool(bad, "d", lambda a: None))
    source.register(sa.Tool("ok_name.v1-2", "d", lambda a: None))
    source.register(sa.Tool("x" * 128, "d", lambda a: None))
    with pytest.raises(ValueError, match="duplicate"):
        source.register(sa.Tool("ok_name.v1-2", "d", lambda a: None))
    with pytest.raises(TypeError):
        source.register(sa.Tool("n", "d", "not callable"))  # type: ignore[arg-type]


def test_revision_and_keys_change_on_re_registration() -> None:
    source = sa.PythonToolSource()
    unregister = source.register(sa.Tool("a", "d", lambda a: None))
    first = run(source.get_tools())[0]
    unregister()
    unregister()  # idempotent
    source.register(sa.Tool("a", "d", lambda a: None))
    second = run(source.get_tools())[0]
    assert first.key != second.key
    assert first.fingerprint() == second.fingerprint()
    assert source.revision == 3
    with pytest.raises(LookupError):
        run(source.execute_tool(first, {}))


def test_old_unregister_does_not_remove_a_newer_tool() -> None:
    source = sa.PythonToolSource()
    old = source.register(sa.Tool("a", "d", lambda a: None))
    source.unregister("a")
    source.register(sa.Tool("a", "d", lambda a: None))
    old()
    assert [t.name for t in run(source.get_tools())] == ["a"]


def test_execute_sync_async_and_signal() -> None:
    seen: list[Any] = []

    async def with_signal(args: dict[str, Any], signal: sa.AbortSignal) -> str:
        seen.append(signal)
        await asyncio.sleep(0)
        return "async"

    source = sa.PythonToolSource(
        [sa.Tool("s", "d", lambda a: a["x"] * 2), sa.Tool("w", "d", with_signal)]
    )
    tools = {t.name: t for t in run(source.get_tools())}
    assert run(source.execute_tool(tools["s"], {"x": 21})) == 42
    controller = sa.AbortController()
    assert run(source.execute_tool(tools["w"], {}, signal=controller.signal)) == "async"
    assert seen == [controller.signal]


def test_listener_errors_do_not_break_registration() -> None:
    source = sa.PythonToolSource()
    source.on_change(lambda: 1 / 0)
    source.register(sa.Tool("a", "d", lambda a: None))
    assert source.revision == 1


def test_registered_tool_views() -> None:
    tool = sa.RegisteredTool(
        "t", "desc", None, {"type": "object"}, {"readOnlyHint": "true", "consequentialHint": 0}
    )
    assert not tool.read_only  # only a strict True counts
    assert tool.consequential  # anything but None/False counts
    assert tool.to_json() == {
        "name": "t",
        "title": "",
        "description": "desc",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": "true", "consequentialHint": 0},
    }
    bare = sa.RegisteredTool("b")
    assert bare.to_definition()["inputSchema"] == {"type": "object"}
    assert "annotations" not in bare.to_json() and bare.hints is None
