"""Anthropic Messages API (``POST {base_url}/messages``).

Request: ``system``, ``messages`` of ``user``/``assistant`` turns made of ``text``,
``tool_use`` and ``tool_result`` blocks, ``tools`` with ``input_schema``, and
``tool_choice: {"type": "auto", "disable_parallel_tool_use": true}`` (one call per step).
The conversation is already normalised (see :mod:`pysite_agent.server._conversation`), so each
``tool_use`` is followed by a user turn that starts with its ``tool_result``, and no text block is
empty. Reply: the first ``tool_use`` block, else the text blocks. A ``tool_use`` cut off by
``stop_reason: "max_tokens"`` is refused (:class:`Unusable`), never passed on as a call.
"""

from __future__ import annotations

from typing import Any

from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server.names import ANTHROPIC_NAMES, NameMap, NameRule
from pysite_agent.server.providers._base import (
    TRUNCATED_CALL,
    UNREADABLE,
    Prepared,
    Unusable,
    UpstreamRequest,
    answer_reply,
    as_object,
    obj,
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
        for block in content:
            block = obj(block, "a content block")
            kind = block.get("type")
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
        return answer_reply("".join(texts))


ANTHROPIC = Anthropic()
