"""Turning a tool's return value into the text the model reads (README, safety rules 6 and 7).

- An MCP-style result ``{"content": [{"type": "text", "text": ...}, ...], "isError"?: bool}``:
  the text blocks are joined with newlines; other block types are named (``[image omitted]``,
  ``[audio omitted]``, ``[resource omitted]``, ``[resource link: URI]``); ``isError: true``
  marks an error result.
- A string passes through as is.
- ``None`` means the page navigated while the tool ran (WebMCP's ``executeTool`` resolves
  ``null`` then): the text says so and ``navigated`` is true.
- Anything else is JSON-encoded (``str()`` for what JSON cannot hold; a value that cannot be
  shown at all is named by its type).

Texts are cut to ``max_result_chars`` *code points* (Python ``str`` length), with a visible marker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NAVIGATED_TEXT = (
    "The page navigated away while this tool ran, so its result is unknown. "
    "The tools on the new page may differ."
)


@dataclass(frozen=True, slots=True)
class ResultText:
    """A tool result as text: ``is_error`` from MCP's ``isError``; ``navigated`` for ``None``."""

    text: str
    is_error: bool = False
    navigated: bool = False


def is_mcp_result(value: Any) -> bool:
    """Whether ``value`` is an MCP ``CallToolResult``-like dict with a ``content`` list."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("content"), list)
        and all(isinstance(block, dict) for block in value["content"])
    )


def parse_mcp_envelope(text: str) -> dict[str, Any] | None:
    """The MCP result inside ``text`` when ``text`` is exactly a JSON MCP envelope, else ``None``.

    Chromium's native ``executeTool`` JSON-stringifies a tool's ``{content: [...]}`` return value
    (measured on Chromium 156); reading it back keeps ``isError`` and the block types.
    """
    stripped = text.strip()
    if not (stripped.startswith("{") and '"content"' in stripped):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if not is_mcp_result(value):
        return None
    allowed = {"content", "isError", "structuredContent", "_meta"}
    if not set(value) <= allowed:
        return None
    return value  # type: ignore[no-any-return]


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    if kind == "resource_link":
        uri = block.get("uri")
        return f"[resource link: {uri}]" if isinstance(uri, str) else "[resource link omitted]"
    if kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("text"), str):
            return str(resource["text"])
        return "[resource omitted]"
    if isinstance(kind, str) and kind:
        safe = "".join(ch for ch in kind if ch.isalnum() or ch in "_-")[:40] or "content"
        return f"[{safe} omitted]"
    return "[content omitted]"


def result_text(value: Any) -> ResultText:
    """Convert a tool's return value to a :class:`ResultText` (rules in the module docstring)."""
    if value is None:
        return ResultText(NAVIGATED_TEXT, is_error=False, navigated=True)
    if isinstance(value, str):
        return ResultText(value)
    if is_mcp_result(value):
        text = "\n".join(_block_text(block) for block in value["content"])
        return ResultText(text, is_error=value.get("isError") is True)
    try:
        return ResultText(json.dumps(value, ensure_ascii=False, default=str))
    except Exception:  # noqa: BLE001 - a value that cannot be shown must not end the run
        pass
    try:
        return ResultText(repr(value))
    except Exception:  # noqa: BLE001
        return ResultText(f"[a {type(value).__name__} result that cannot be shown as text]")


def truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` code points and append a marker saying how much was cut.

    Raises:
        ValueError: when ``max_chars`` is less than 1.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n[… cut: showed {max_chars} of {len(text)} characters]"
