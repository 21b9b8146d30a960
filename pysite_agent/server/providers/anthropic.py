"""Anthropic Messages API (``POST {base_url}/messages``).

Request: ``system``, ``messages`` of ``user``/``assistant`` turns made of ``text``,
``tool_use`` and ``tool_result`` blocks, ``tools`` with ``input_schema``, and
``tool_choice: {"type": "auto", "disable_parallel_tool_use": true}`` (one call per step).
The conversation is already normalised (see :mod:`pysite_agent.server._conversation`), so each
``tool_use`` is followed by a user turn that starts with its ``tool_result``, and no text block is
empty. Reply: the first ``tool_use`` block, else the text blocks. A ``tool_use`` cut off by
``stop_reason: "max_tokens"`` is refused (:class:`Unusable`), never passed on as a call.

Streaming (``"stream": true``): server-sent events ``message_start``, ``content_block_start``,
``content_block_delta`` (``text_delta`` text, ``input_json_delta`` partial JSON of a tool's
input), ``content_block_stop``, ``message_delta`` (``stop_reason``), ``message_stop``, ``ping``
and ``error``. :class:`AnthropicStream` adds them up to the message ``parse`` reads; text
deltas are passed on as they come. A ``tool_use`` block without any ``input_json_delta`` keeps
the ``input`` its ``content_block_start`` gave (some compatible gateways send it whole there;
Anthropic sends ``{}``).
"""

from __future__ import annotations

import json
from typing import Any

from pysite_agent.core.sse import ServerSentEvent
from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server.names import ANTHROPIC_NAMES, NameMap, NameRule
from pysite_agent.server.providers._base import (
    STREAM_CUT,
    TRUNCATED_CALL,
    UNREADABLE,
    Prepared,
    StreamFailed,
    Unusable,
    UpstreamRequest,
    answer_or_nothing,
    as_object,
    busy_status,
    event_json,
    is_keepalive,
    obj,
    parse_arguments,
    root_object_schema,
    tool_reply,
)

API_VERSION = "2023-06-01"


def _turns(prepared: Prepared) -> list[dict[str, Any]]:
    names = prepared.names
    turns: list[dict[str, Any]] = []
    for item in prepared.items:
        block: dict[str, Any]
        if isinstance(item, UserText):
            role, block = "user", {"type": "text", "text": item.text}
        elif isinstance(item, AssistantText):
            role, block = "assistant", {"type": "text", "text": item.text}
        elif isinstance(item, Call):
            role = "assistant"
            block = {
                "type": "tool_use",
                "id": item.id,
                "name": names.provider(item.name),
                "input": as_object(item.arguments),
            }
        else:
            assert isinstance(item, Result)
            role = "user"
            block = {
                "type": "tool_result",
                "tool_use_id": item.id,
                "is_error": item.is_error,
                "content": item.content,  # never blank (normalize gives a placeholder)
            }
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})
    # The API refuses a final assistant turn whose text ends in whitespace.
    last = turns[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        last["content"][-1]["text"] = last["content"][-1]["text"].rstrip()
    return turns


class Anthropic:
    name = "anthropic"
    name_rule: NameRule = ANTHROPIC_NAMES

    def build(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        body: dict[str, Any] = {
            "model": prepared.model,
            "max_tokens": prepared.max_tokens,
            "messages": _turns(prepared),
        }
        if prepared.instructions:
            body["system"] = prepared.instructions
        if prepared.tools:
            body["tools"] = [
                {
                    "name": prepared.names.provider(tool["name"]),
                    "description": tool["description"],
                    "input_schema": root_object_schema(tool["inputSchema"]),
                }
                for tool in prepared.tools
            ]
            body["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        headers = {
            "x-api-key": api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        return UpstreamRequest(f"{base_url}/messages", headers, body)

    def parse(self, data: Any, names: NameMap) -> dict[str, Any]:
        data = obj(data, "the reply")
        content = data.get("content")
        if not isinstance(content, list):
            raise Unusable(UNREADABLE, "no content list")
        stop = data.get("stop_reason")
        texts: list[str] = []
        thought = False
        for block in content:
            block = obj(block, "a content block")
            kind = block.get("type")
            thought = thought or kind in ("thinking", "redacted_thinking")
            if kind == "tool_use":
                if stop == "max_tokens":
                    raise Unusable(TRUNCATED_CALL, "tool_use with stop_reason max_tokens")
                arguments = block.get("input")
                if not isinstance(arguments, dict):
                    arguments = {} if arguments is None else arguments
                name = block.get("name")
                return tool_reply(
                    names.original(name) if isinstance(name, str) else "",
                    arguments,
                    block.get("id"),
                    None,
                )
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
        reason = "thinking" if thought and stop in (None, "end_turn") else stop
        return answer_or_nothing("".join(texts), reason)

    def build_stream(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        request = self.build(prepared, base_url, api_key)
        return UpstreamRequest(request.url, request.headers, {**request.body, "stream": True})

    def stream_reader(self) -> AnthropicStream:
        return AnthropicStream()


class AnthropicStream:
    """Adds up an Anthropic message stream (see the module docstring)."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial: dict[int, list[str]] = {}
        self._stop_reason: Any = None
        self._ended = False

    def feed(self, event: ServerSentEvent) -> list[str]:
        if is_keepalive(event):
            return []
        data = obj(event_json(event), "a stream event")
        kind = data.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise StreamFailed(json.dumps(data)[:2000], busy_status(data))
        if kind == "content_block_start":
            index, start = data.get("index"), obj(data.get("content_block"), "a content block")
            if not isinstance(index, int):
                raise Unusable(UNREADABLE, "content_block_start without an index")
            self._blocks[index] = dict(start)
            if start.get("type") == "tool_use":
                self._partial[index] = []
            text = start.get("text")
            return [text] if start.get("type") == "text" and isinstance(text, str) and text else []
        if kind == "content_block_delta":
            index, delta = data.get("index"), obj(data.get("delta"), "a delta")
            current = self._blocks.get(index) if isinstance(index, int) else None
            if current is None:
                raise Unusable(UNREADABLE, "a delta for a block that did not start")
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                current["text"] = current.get("text", "") + delta["text"]
                return [delta["text"]] if delta["text"] else []
            if delta.get("type") == "input_json_delta" and isinstance(index, int):
                partial = delta.get("partial_json")
                if isinstance(partial, str):
                    self._partial.setdefault(index, []).append(partial)
            return []
        if kind == "message_delta":
            change = data.get("delta")
            if isinstance(change, dict) and "stop_reason" in change:
                self._stop_reason = change["stop_reason"]
        elif kind == "message_stop":
            self._ended = True
        return []

    def reply(self, names: NameMap) -> dict[str, Any]:
        if not self._ended:
            raise Unusable(STREAM_CUT, "no message_stop")
        content = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.get("type") == "tool_use":
                text = "".join(self._partial.get(index, []))
                if text.strip():
                    block = {**block, "input": parse_arguments(text)}
                elif not isinstance(block.get("input"), dict):
                    block = {**block, "input": {}}
                # else: the whole input came in content_block_start (no input_json_delta)
            content.append(block)
        return ANTHROPIC.parse({"content": content, "stop_reason": self._stop_reason}, names)


ANTHROPIC = Anthropic()
