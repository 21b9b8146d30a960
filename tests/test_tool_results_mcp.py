"""MCP-shaped tool results become text the model can use, within the result cap; never empty.

Shapes from the MCP specification's ``CallToolResult`` (2025-06-18): ``content`` blocks of type
``text``, ``image``, ``audio``, ``resource_link`` and ``resource`` (embedded, ``text`` or
``blob``), ``structuredContent`` and ``isError``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import pysite_agent as sa
from pysite_agent.agent import _gateway as gateway
from pysite_agent.core import results
from pysite_agent.core.signals import AbortController
from pysite_agent.tools.python_source import PythonToolSource


def test_structured_content_with_no_content_blocks_reaches_the_model() -> None:
    value = {"content": [], "structuredContent": {"plan": "Pro", "price": 12.5, "seats": [1, 2]}}
    text = results.result_text(value).text
    assert json.loads(text[text.index("{") :]) == value["structuredContent"]


def test_structured_content_next_to_an_image_only_content_is_kept() -> None:
    value = {
        "content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
        "structuredContent": {"width": 20},
    }
    text = results.result_text(value).text
    assert "image/png" in text and '"width": 20' in text


def test_a_text_block_that_already_holds_the_structured_content_is_not_repeated() -> None:
    data = {"a": 1}
    value = {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
    assert results.result_text(value).text == json.dumps(data)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"type": "image", "data": "QUJD", "mimeType": "image/png"}, ["image", "image/png"]),
        ({"type": "audio", "data": "QUJD", "mimeType": "audio/wav"}, ["audio", "audio/wav"]),
        (
            {
                "type": "resource_link",
                "uri": "https://shop.example/p/1",
                "name": "mug",
                "description": "A mug",
                "mimeType": "text/html",
            },
            ["https://shop.example/p/1", "mug", "A mug"],
        ),
        (
            {
                "type": "resource",
                "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"},
            },
            ["hello", "file:///a.txt"],
        ),
        (
            {
                "type": "resource",
                "resource": {"uri": "file:///a.bin", "mimeType": "application/pdf", "blob": "QUJD"},
            },
            ["file:///a.bin", "application/pdf"],
        ),
    ],
)
def test_each_block_type_is_described(block: dict[str, Any], expected: list[str]) -> None:
    text = results.result_text({"content": [block]}).text
    for part in expected:
        assert part in text, (part, text)


@pytest.mark.parametrize(
    "value",
    [
        {"content": []},
        {"content": [{"type": "text", "text": ""}]},
        "",
        "   ",
        {"content": [], "structuredContent": None},
    ],
)
def test_an_empty_result_is_said_to_be_empty(value: Any) -> None:
    text = results.result_text(value).text
    assert text.strip()
    assert "empty" in text


def test_a_huge_structured_content_stays_within_the_result_cap() -> None:
    async def big(args: dict[str, Any]) -> Any:
        return {"content": [], "structuredContent": {"rows": list(range(5000))}}

    tool = sa.Tool(
        name="rows",
        description="Rows.",
        input_schema={"type": "object"},
        execute=big,
        annotations={"readOnlyHint": True},
    )
    source = PythonToolSource([tool])

    async def go() -> gateway.Execution:
        [registered] = await source.get_tools()
        return await gateway.execute(
            source,
            registered,
            {},
            timeout_ms=1000,
            max_result_chars=300,
            signal=AbortController().signal,
        )

    execution = asyncio.run(go())
    assert '"rows": [0, 1, 2' in execution.text
    assert len(execution.text) < 400 and "cut" in execution.text


def test_an_envelope_from_native_executetool_with_structured_content_is_read() -> None:
    raw = json.dumps({"content": [], "structuredContent": {"ok": True}})
    envelope = results.parse_mcp_envelope(raw)
    assert envelope is not None
    assert '"ok": true' in results.result_text(envelope).text
