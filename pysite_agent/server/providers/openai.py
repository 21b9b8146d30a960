"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), and compatible servers.

Request: a ``system`` message, ``user``/``assistant`` messages, assistant ``tool_calls`` with
``function.arguments`` as a JSON string, ``tool`` messages with ``tool_call_id``; ``tools`` as
``{"type": "function", "function": {...}}`` with ``parallel_tool_calls: false`` (one call per
step) and ``max_completion_tokens``. Reply: the first tool call of ``choices[0].message`` (its
``arguments`` string parsed safely: anything but a JSON object is passed on as the string, which
the browser refuses as an invalid call), else its ``content`` (or ``refusal``). A tool call cut
off by ``finish_reason: "length"`` is refused, never passed on.

Streaming (``"stream": true``): ``data:`` events of ``chat.completion.chunk`` objects whose
``choices[0].delta`` holds ``content`` text, ``refusal`` text or ``tool_calls`` pieces (by
``index``: ``id`` and ``function.name`` first, then ``function.arguments`` in fragments),
``finish_reason`` on the last chunk, then ``data: [DONE]``. An ``{"error": ...}`` object in the
stream is a failure. :class:`OpenAIStream` adds the chunks up to the message ``parse`` reads.

Compatible servers and gateways differ, and each of these is read as the call the model made:
``id`` and ``function.name`` sent again in every chunk (kept once, never joined to
``find_planfind_plan``; a name that is a known tool's name repeated is that tool's name), or the
name so far sent again; pieces without ``index`` (they continue the last call, unless they bring
a new ``id``); ``arguments`` already a JSON object; chunks whose ``choices`` is empty or
``null`` (content-filter results, usage) or whose ``delta`` is missing or ``null``; a last
chunk with a whole ``message`` instead of a ``delta``.
"""

from __future__ import annotations

import json
from typing import Any

from pysite_agent.core.sse import ServerSentEvent
from pysite_agent.server._conversation import AssistantText, Call, Result, UserText
from pysite_agent.server.names import OPENAI_NAMES, NameMap, NameRule
from pysite_agent.server.providers._base import (
    STREAM_CUT,
    TRUNCATED_CALL,
    UNREADABLE,
    Prepared,
    StreamFailed,
    Unusable,
    UpstreamRequest,
    answer_or_nothing,
    busy_status,
    capped_description,
    event_json,
    is_keepalive,
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
    if isinstance(content, list):  # Mistral, gpt-oss servers: a list of typed parts
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and part.get("type", "text") in ("text", "output_text")
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
                        "description": capped_description(tool["description"]),
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
        if not text.strip() and isinstance(message.get("refusal"), str):
            text = message["refusal"]
        reason = choice.get("finish_reason")
        if not text.strip() and message.get("refusal") is not None:
            reason = "refusal"
        return answer_or_nothing(text, reason)

    def build_stream(self, prepared: Prepared, base_url: str, api_key: str) -> UpstreamRequest:
        request = self.build(prepared, base_url, api_key)
        return UpstreamRequest(request.url, request.headers, {**request.body, "stream": True})

    def stream_reader(self) -> OpenAIStream:
        return OpenAIStream()


class OpenAIStream:
    """Adds up a Chat Completions stream (see the module docstring)."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: Any = None
        self._ended = False

    def feed(self, event: ServerSentEvent) -> list[str]:
        if event.data.strip() == "[DONE]":
            self._ended = True
            return []
        if is_keepalive(event):
            return []
        data = obj(event_json(event), "a chunk")
        if "error" in data:
            raise StreamFailed(json.dumps(data)[:2000], busy_status(data))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return []  # e.g. the usage chunk
        choice = obj(choices[0], "a choice")
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            # Some compatible servers send the last chunk with a whole ``message`` instead.
            delta = choice.get("message")
            if not isinstance(delta, dict):
                return []
        out: list[str] = []
        content = _text(delta.get("content"))
        if content:
            self._text.append(content)
            out.append(content)
        if isinstance(delta.get("refusal"), str):
            self._refusal.append(delta["refusal"])
        calls = delta.get("tool_calls")
        for piece in calls if isinstance(calls, list) else []:
            self._piece(obj(piece, "a tool call piece"))
        return out

    def _piece(self, piece: dict[str, Any]) -> None:
        """One tool-call piece of a delta, added to its call (rules in the module docstring)."""
        index = piece.get("index")
        piece_id = piece.get("id") if isinstance(piece.get("id"), str) and piece["id"] else None
        if not isinstance(index, int) or isinstance(index, bool):
            # No index: the call the last piece belonged to, unless this one names a new id.
            index = max(self._calls, default=0)
            last = self._calls.get(index)
            if last is not None and piece_id is not None and last["id"] not in (None, piece_id):
                index += 1
        call = self._calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        if piece_id is not None and call["id"] is None:
            call["id"] = piece_id  # resent in every chunk by some servers: kept once
        function = piece.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        if isinstance(name, str) and name:
            current = call["name"]
            if not current or name.startswith(current):
                call["name"] = name  # the first piece, or the name so far sent again
            elif not current.endswith(name):
                call["name"] = current + name  # a name sent in fragments
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            if isinstance(call["arguments"], str):
                call["arguments"] += arguments
        elif isinstance(arguments, dict):
            call["arguments"] = arguments  # already an object (Ollama-, llama.cpp-style)

    def reply(self, names: NameMap) -> dict[str, Any]:
        if not self._ended and self._finish is None:
            raise Unusable(STREAM_CUT, "neither finish_reason nor [DONE]")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) or None,
            "refusal": "".join(self._refusal) or None,
        }
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {
                        "name": names.repeated_name(call["name"]),
                        "arguments": call["arguments"],
                    },
                }
                for _, call in sorted(self._calls.items())
            ]
        data = {"choices": [{"index": 0, "message": message, "finish_reason": self._finish}]}
        return OPENAI.parse(data, names)


OPENAI = OpenAI()
