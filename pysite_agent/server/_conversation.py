"""The browser's messages (protocol v1) as one provider-neutral conversation.

:func:`normalize` guarantees what every provider wants, whatever the browser sent:

- it starts with a non-blank user message (anything before the first one is dropped: that is
  what trimming a long history from the front leaves behind);
- every :class:`Call` is immediately followed by its :class:`Result` (a call without one gets
  an error result saying it did not complete; a result without its call becomes user text);
- no blank text (blank messages are dropped) and no blank result: a result without text gets
  :data:`EMPTY_RESULT` or :data:`EMPTY_ERROR`, since providers refuse empty content blocks
  (Anthropic's Messages API refuses an empty text block, for instance);
- call ids are unique and made of ``[A-Za-z0-9_-]`` (at most 40 characters);
- without tools in the request, calls and results become plain text (providers refuse tool
  blocks when no tool is declared).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UserText:
    text: str


@dataclass(frozen=True)
class AssistantText:
    text: str


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: Any
    meta: dict[str, Any] | None


@dataclass(frozen=True)
class Result:
    id: str
    name: str
    content: str
    is_error: bool


Item = UserText | AssistantText | Call | Result

NO_RESULT = "No result: this call did not complete."
EMPTY_RESULT = "(The tool finished and returned no text.)"
EMPTY_ERROR = "(The tool failed without a message.)"


def _result_text(content: str, is_error: bool) -> str:
    if content.strip():
        return content
    return EMPTY_ERROR if is_error else EMPTY_RESULT


class NoUserMessage(ValueError):
    """The conversation has no non-blank user message."""


def safe_id(raw: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"call_{digest}"


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def normalize(messages: Sequence[dict[str, Any]], *, with_tools: bool) -> list[Item]:
    """See the module docstring. Raises :class:`NoUserMessage`."""
    start = next(
        (
            i
            for i, m in enumerate(messages)
            if m.get("role") == "user" and str(m.get("content", "")).strip()
        ),
        None,
    )
    if start is None:
        raise NoUserMessage("the conversation needs a non-blank user message")
    items: list[Item] = []
    used_ids: set[str] = set()
    i = start
    while i < len(messages):
        message = messages[i]
        i += 1
        role = message["role"]
        if role == "user":
            if message["content"].strip():
                items.append(UserText(message["content"]))
        elif role == "assistant" and "toolCall" in message:
            call = message["toolCall"]
            call_id = safe_id(call["id"])
            n = 2
            while call_id in used_ids:
                call_id = safe_id(f"{call['id']}#{n}")
                n += 1
            used_ids.add(call_id)
            meta = call.get("meta")
            items.append(Call(call_id, call["name"], call["arguments"], meta))
            following = messages[i] if i < len(messages) else None
            if (
                following is not None
                and following["role"] == "tool"
                and following["toolCallId"] == call["id"]
            ):
                i += 1
                is_error = following["isError"]
                content = _result_text(following["content"], is_error)
                items.append(Result(call_id, call["name"], content, is_error))
            else:
                items.append(Result(call_id, call["name"], NO_RESULT, True))
        elif role == "assistant":
            if message["content"].strip():
                items.append(AssistantText(message["content"]))
        elif role == "tool" and message["content"].strip():
            # A result whose call is not right before it.
            items.append(UserText(f"Result of the tool {message['name']}: {message['content']}"))
    if not with_tools:
        items = [_as_text(item) for item in items]
    return items


def _as_text(item: Item) -> Item:
    if isinstance(item, Call):
        arguments = _arguments_text(item.arguments)
        return AssistantText(f"(I called the tool {item.name} with {arguments})")
    if isinstance(item, Result):
        kind = "error" if item.is_error else "result"
        return UserText(f"(The tool {item.name} returned this {kind}: {item.content})")
    return item


def instructions(server: str, client: str, allow_client: bool) -> str:
    parts = [server.strip()]
    if allow_client:
        parts.append(client.strip())
    return "\n\n".join(p for p in parts if p)


def provider_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The protocol's tool definitions for a provider: a tool's ``outputSchema`` (WebMCP,
    spec PR #254), which no provider's tool format has, is added to its description as
    ``Returns JSON matching: <schema>`` so the model still sees it."""
    out = []
    for tool in tools:
        schema = tool.get("outputSchema")
        if schema is None:
            out.append(tool)
            continue
        text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        note = f"Returns JSON matching: {text}"
        description = tool["description"].rstrip()
        out.append({**tool, "description": f"{description}\n\n{note}" if description else note})
    return out
