"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), and compatible servers.

Request: a ``system`` message, ``user``/``assistant`` messages, assistant ``tool_calls`` with
``function.arguments`` as a JSON string, ``tool`` messages with ``tool_call_id``; ``tools`` as
``{"type": "function", "function": {...}}`` with ``parallel_tool_calls: false`` (one call per
step) and ``max_completion_tokens``. Reply: the first tool call of ``choices[0].message`` (its
``arguments`` string parsed safely: anything but a JSON object is passed on as the string, which
the browser refuses as an invalid call), else its ``content`` (or ``refusal``). A tool call cut
off by ``finish_reason: "length"`` is refused, never passed on.
"""

from __future__ import annotations

import json
from typing import Any

from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server.names import OPENAI_NAMES, NameMap, NameRule
from pysite_agent.server.providers._base import (
    TRUNCATED_CALL,
    UNREADABLE,
    Prepared,
    Unusable,
    UpstreamRequest,
    answer_reply,
    obj,
    parse_arguments,
    root_object_schema,
    tool_reply,
)


def _arguments_string(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, allow_nan=False)


def _messages(prepared: Prepared) -> list[dict[str, Any]]:
    names = prepared.names
    out: list[dict[str, Any]] = []
    if prepared.instructions:
        out.append({"role": "system", "content": prepared.instructions})
    for item in prepared.items:
        if isinstance(item, UserText):
            out.append({"role": "user", "content": item.text})
        elif isinstance(item, AssistantText):
            out.append({"role": "assistant", "content": item.text})
        elif isinstance(item, Call):
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": item.id,
                            "type": "function",
                            "function": {
                                "name": names.provider(item.name),
                                "arguments": _arguments_string(item.arguments),
                            },
                        }
                    ],
                }
            )
        else:
            assert isinstance(item, Result)
            content = f"Error: {item.content}" if item.is_error else item.content
            out.append({"role": "tool", "tool_call_id": item.id, "content": content})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some compatible servers send content parts
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


class OpenAI:
    name = "openai"
    name_rule: NameRule = OPENAI_NAMES

    def build(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        body: dict[str, Any] = {
            "model": prepared.model,
            "messages": _messages(prepared),
            "max_completion_tokens": prepared.max_tokens,
        }
        if prepared.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": prepared.names.provider(tool["name"]),
                        "description": tool["description"],
                        "parameters": root_object_schema(tool["inputSchema"]),
                    },
                }
                for tool in prepared.tools
            ]
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = False
        headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
        return UpstreamRequest(f"{base_url}/chat/completions", headers, body)

    def parse(self, data: Any, names: NameMap) -> dict[str, Any]:
        data = obj(data, "the reply")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise Unusable(UNREADABLE, "no choices")
        choice = obj(choices[0], "a choice")
        message = obj(choice.get("message"), "the message")
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            if choice.get("finish_reason") == "length":
                raise Unusable(TRUNCATED_CALL, "tool_calls with finish_reason length")
            call = obj(calls[0], "a tool call")
            function = obj(call.get("function"), "a tool call's function")
            name = function.get("name")
            return tool_reply(
                names.original(name) if isinstance(name, str) else "",
                parse_arguments(function.get("arguments")),
                call.get("id"),
                None,
            )
        text = _text(message.get("content"))
        if not text and isinstance(message.get("refusal"), str):
            text = message["refusal"]
        return answer_reply(text)


OPENAI = OpenAI()
