"""Turning a tool's return value into the text the model reads (README, safety rules 6 and 7).

- An MCP-style result ``{"content": [{"type": "text", "text": ...}, ...], "isError"?: bool,
  "structuredContent"?: ...}`` (MCP ``CallToolResult``): the blocks are joined with newlines;
  ``image`` and ``audio`` are named with their MIME type and size (only text reaches the model),
  ``resource_link`` gives its URI, name and description, an embedded ``resource`` its URI and
  text (or, for a ``blob``, its MIME type and size); ``structuredContent`` follows as JSON
  when no text block has text (MCP asks for the same JSON in a text block, and a tool's own
  text stays what the model reads); ``isError: true`` marks an error result.
- A string passes through as is.
- A result with no text at all (``""``, ``{"content": []}``) reads :data:`EMPTY_TEXT`: the
  model never gets an empty message.
- ``None`` (a Python ``None``, JS ``undefined``/``null``: delete and clear actions) means the
  tool returned nothing: a success that reads :data:`NO_RESULT_TEXT`.
- :data:`NAVIGATED` means the page navigated while the tool ran (WebMCP's ``executeTool``
  resolves ``null`` then; the tool source, which knows, returns this marker): the text says so
  and ``navigated`` is true.
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


NO_RESULT_TEXT = "[The tool returned no result. It ran and reported nothing back.]"
"""What the model reads when a tool returned ``None`` / ``undefined`` / ``null``."""


class Navigated:
    """The type of :data:`NAVIGATED`: a tool source's result when the page navigated while the
    tool ran (not a value any tool returns)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NAVIGATED"


NAVIGATED = Navigated()
"""Returned by a tool source in place of a result when the page navigated during the call."""


@dataclass(frozen=True, slots=True)
class ResultText:
    """A tool result as text: ``is_error`` from MCP's ``isError``; ``navigated`` for
    :data:`NAVIGATED`."""

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


EMPTY_TEXT = "[The tool returned an empty result.]"
"""What the model reads for a result with no text at all (never an empty message)."""


def _size(data: Any) -> str:
    if not isinstance(data, str) or not data:
        return ""
    return f", about {len(data) * 3 // 4} bytes"


def _label(value: Any, limit: int = 200) -> str:
    """A short, single-line string from a block's field ("" when it is not a string)."""
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    mime = _label(block.get("mimeType"), 80)
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    if kind in ("image", "audio"):
        what = f"{kind} ({mime}{_size(block.get('data'))})" if mime else str(kind)
        return f"[{what} omitted: only text reaches the model]"
    if kind == "resource_link":
        uri = _label(block.get("uri"), 500)
        if not uri:
            return "[resource link omitted]"
        extra = [x for x in (_label(block.get("name")), _label(block.get("title"))) if x]
        description = _label(block.get("description"))
        head = f"[resource link: {uri}"
        if extra:
            head += f" ({', '.join(dict.fromkeys(extra))})"
        if mime:
            head += f", {mime}"
        return head + (f": {description}]" if description else "]")
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return "[resource omitted]"
        uri = _label(resource.get("uri"), 500)
        mime = _label(resource.get("mimeType"), 80)
        where = f"{uri} ({mime})" if uri and mime else uri or mime
        if isinstance(resource.get("text"), str):
            return f"[resource {where}]\n{resource['text']}" if where else str(resource["text"])
        size = _size(resource.get("blob"))
        return f"[resource {where}: binary{size}, omitted]" if where else "[resource omitted]"
    if isinstance(kind, str) and kind:
        safe = "".join(ch for ch in kind if ch.isalnum() or ch in "_-")[:40] or "content"
        return f"[{safe} omitted]"
    return "[content omitted]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _mcp_text(value: dict[str, Any]) -> str:
    """The text of an MCP result: its blocks, then ``structuredContent`` as JSON unless a
    text block has text."""
    text = "\n".join(_block_text(block) for block in value["content"])
    structured = value.get("structuredContent")
    if structured is None:
        return text
    try:
        data = _json(structured)
    except Exception:  # noqa: BLE001 - what JSON cannot hold is shown as far as it can be
        data = repr(structured)
    texts = [b.get("text") for b in value["content"] if b.get("type") == "text"]
    if any(isinstance(given, str) and given.strip() for given in texts):
        return text  # MCP: the text blocks carry the result (often the same JSON) already
    return f"{text}\n{data}" if text.strip() else data


def result_text(value: Any) -> ResultText:
    """Convert a tool's return value to a :class:`ResultText` (rules in the module docstring)."""
    if isinstance(value, Navigated):
        return ResultText(NAVIGATED_TEXT, is_error=False, navigated=True)
    if value is None:
        return ResultText(NO_RESULT_TEXT)
    if isinstance(value, str):
        return ResultText(value if value.strip() else EMPTY_TEXT)
    if is_mcp_result(value):
        text = _mcp_text(value)
        return ResultText(
            text if text.strip() else EMPTY_TEXT, is_error=value.get("isError") is True
        )
    try:
        return ResultText(_json(value))
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
