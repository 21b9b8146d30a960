"""Chrome's native tool-use shape (Prompt API "Tool use", behind ``prompt-api-tool-use``).

What a session made with ``tools`` takes and gives: the tool declarations
(:func:`tool_declarations`), the conversation as Prompt API messages whose calls and results
are made with the browser's ``LanguageModelToolCall`` / ``LanguageModelToolSuccess`` /
``LanguageModelToolError`` classes (:func:`native_messages`; plain objects are rejected by
Chrome), and the reply read from ``promptStreaming()`` chunks (:class:`NativeReply`). No
session is opened here: the adapter (:mod:`pysite_agent.models.chrome.adapter`) owns them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pysite_agent import ffi
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.wire import not_empty
from pysite_agent.models.chrome.prompt import MIN_BLOCK_CHARS, PromptPlan, cut, render_message
from pysite_agent.models.chrome.schema import constraint_schema, strip_nulls

__all__ = ["TOOL_TYPE_NAMES", "NativeReply", "native_messages", "tool_declarations"]

TOOL_TYPE_NAMES = ("LanguageModelToolCall", "LanguageModelToolSuccess", "LanguageModelToolError")
"""The Prompt API's tool-use classes (behind Chrome's ``prompt-api-tool-use`` flag): native tool
use needs all three."""


def tool_declarations(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tools as ``create({tools})`` takes them: ``{name, description, inputSchema}`` (no
    ``execute``: the page runs tools, through the agent and its rules). A title not in the
    description is put before it; tools without a name are left out."""
    out = []
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        description = str(tool.get("description") or "")
        title = tool.get("title")
        if isinstance(title, str) and title and title not in description:
            description = f"{title}. {description}" if description else title
        out.append(
            {
                "name": name,
                "description": description,
                "inputSchema": strip_nulls(constraint_schema(tool.get("inputSchema"))),
            }
        )
    return out


def native_messages(
    messages: Sequence[Mapping[str, Any]], plan: PromptPlan, types: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The messages ``plan`` shows (:func:`pysite_agent.models.chrome.prompt.plan_prompt`), as
    Prompt API messages; a first user message says what was cut, when anything was."""
    notes = plan.notes()
    out: list[dict[str, Any]] = []
    if notes:
        out.append({"role": "user", "content": f"[Conversation cut to fit: {'; '.join(notes)}.]"})
    shown = plan.shown()
    for position, i in enumerate(shown):
        message = messages[i]
        limit = plan.limits.get(i)
        previous = messages[shown[position - 1]] if position > 0 else None
        following = messages[shown[position + 1]] if position + 1 < len(shown) else None
        out.append(_native_message(types, message, limit, previous, following))
    return out


def _native_message(
    types: Mapping[str, Any],
    message: Mapping[str, Any],
    limit: int | None,
    previous: Mapping[str, Any] | None,
    following: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One protocol v1 message as a Prompt API message: text, or a ``tool-call`` /
    ``tool-response`` part made with the browser's classes (plain objects are rejected)."""
    role = message.get("role")
    call = message.get("toolCall")
    if role == "assistant" and isinstance(call, Mapping):
        arguments = call.get("arguments")
        if not isinstance(arguments, Mapping):
            arguments = {"value": arguments}
        answered = following is not None and following.get("role") == "tool"
        if not answered:
            return {"role": "assistant", "content": cut(render_message(message), limit or 10**9)}
        value = _construct(
            types["LanguageModelToolCall"],
            {
                "callID": str(call.get("id") or ""),
                "name": str(call.get("name") or ""),
                "arguments": strip_nulls(dict(arguments)),
            },
        )
        return {"role": "assistant", "content": [{"type": "tool-call", "value": value}]}
    if role == "tool":
        content = str(message.get("content", ""))
        if limit is not None:
            overhead = len(render_message(message)) - len(content)
            content = cut(content, max(MIN_BLOCK_CHARS, limit - overhead))
        called = previous is not None and isinstance(previous.get("toolCall"), Mapping)
        if not called:
            return {
                "role": "user",
                "content": cut(render_message({**message, "content": content}), 10**9),
            }
        init: dict[str, Any] = {
            "callID": str(message.get("toolCallId") or message.get("id") or ""),
            "name": str(message.get("name") or ""),
        }
        if previous is not None:
            init["callID"] = str(previous["toolCall"].get("id") or init["callID"])
        if message.get("isError") or message.get("denied"):
            state = "Denied by the visitor, not run: " if message.get("denied") else ""
            value = _construct(
                types["LanguageModelToolError"], {**init, "errorMessage": state + content}
            )
        else:
            value = _construct(
                types["LanguageModelToolSuccess"],
                {**init, "result": [_result_item(content, bool(message.get("untrusted")))]},
            )
        return {"role": "user", "content": [{"type": "tool-response", "value": value}]}
    text = str(message.get("content", ""))
    if limit is not None:
        text = cut(text, max(MIN_BLOCK_CHARS, limit - (len(render_message(message)) - len(text))))
    return {"role": "assistant" if role == "assistant" else "user", "content": text}


def _construct(cls: Any, init: Mapping[str, Any]) -> Any:
    """``new cls(init)`` for a JS class (its init as a plain JS object), ``cls(init)`` for a
    Python one (test fakes)."""
    if ffi.is_js(cls):
        return cls.new(ffi.to_js(dict(init)))
    return cls(ffi.plain_copy(dict(init)))


def _result_item(content: str, untrusted: bool) -> dict[str, Any]:
    """A tool result for ``LanguageModelToolSuccess``: ``{type: "object", value}`` when the
    text is a JSON object (``null`` removed, :func:`strip_nulls`), else ``{type: "text",
    value}``. Untrusted results stay text, inside their fence (README rule 6)."""
    if not untrusted and content.lstrip().startswith("{"):
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return {"type": "object", "value": strip_nulls(value)}
    return {"type": "text", "value": content}


class NativeReply:
    """The reply of a native-tool-use stream, read chunk by chunk with :meth:`take`: text
    chunks (strings) and ``{type: "tool-call", value}`` parts (Prompt API "Tool use"). Text goes
    to ``on_text`` as it arrives, until the first call. The first call is the reply; the others
    are refused (not run, not shown to the model again)."""

    def __init__(self, on_text: Callable[[str], None] | None = None) -> None:
        self._on_text = on_text
        self._calls: list[Any] = []
        self._texts: list[str] = []

    def take(self, chunk: Any) -> None:
        """Read one chunk of ``promptStreaming()``."""
        if isinstance(chunk, str):
            self._texts.append(chunk)
            if self._on_text is not None and not self._calls and chunk:
                self._on_text(chunk)
        elif ffi.field(chunk, "type") == "tool-call":
            self._calls.append(ffi.field(chunk, "value"))

    def refused(self) -> list[str]:
        """The names of the calls after the first (refused: not run), once the stream ended."""
        return [str(ffi.field(c, "name") or "") for c in self._calls[1:]]

    def reply(self) -> dict[str, Any]:
        """The reply, once the stream ended: the first call, else the answer text.

        Raises:
            SiteAgentError: ``bad-reply`` when the first call has no name or arguments nested
                too deeply to read; ``model-error`` when there is no call and no text.
        """
        if not self._calls:
            return not_empty({"type": "answer", "text": "".join(self._texts)}, "Chrome's model")
        first = self._calls[0]
        name = ffi.field(first, "name")
        try:
            arguments = ffi.json_to_py(ffi.field(first, "arguments"))
        except RecursionError:
            message = "Chrome's model called a tool with arguments nested too deeply to read."
            raise SiteAgentError("bad-reply", message) from None
        if not isinstance(name, str) or not name:
            raise SiteAgentError("bad-reply", "Chrome's model called a tool without a name.")
        return {"type": "tool", "name": name, "arguments": {} if arguments is None else arguments}
