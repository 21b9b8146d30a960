"""Translation to each provider over real HTTP: what the stub upstream receives, what comes back."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from conftest import ORIGIN, PROVIDERS, Proxy, request_body
from stub_upstream import (
    KEY,
    MODEL,
    Recorded,
    Reply,
    StubUpstream,
    anthropic_text,
    anthropic_tool,
    gemini_text,
    gemini_tool,
    openai_text,
    openai_tool,
    text_reply,
    tool_reply,
)

from pysite_agent.core import wire

CALL = {
    "role": "assistant",
    "toolCall": {
        "id": "call_1",
        "name": "add_to_cart",
        "arguments": {"product": "mug", "quantity": 2},
    },
}
RESULT = {
    "role": "tool",
    "toolCallId": "call_1",
    "name": "add_to_cart",
    "content": "Added 2 mugs.",
    "isError": False,
    "untrusted": False,
}


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "add two mugs"},
        CALL,
        RESULT,
        {"role": "assistant", "content": "Added two mugs."},
        {"role": "user", "content": "and check out"},
        {"role": "assistant", "toolCall": {"id": "call_2", "name": "checkout", "arguments": {}}},
        {
            "role": "tool",
            "toolCallId": "call_2",
            "name": "checkout",
            "content": "The visitor denied this call.",
            "isError": True,
            "untrusted": False,
            "denied": True,
        },
        {"role": "user", "content": "ok then show reviews"},
    ]


def tools(*names: str) -> list[dict[str, Any]]:
    return [
        {
            "name": n,
            "description": f"Tool {n}.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for n in names
    ]


def declared(provider: str, body: dict[str, Any]) -> list[str]:
    if provider == "anthropic":
        return [t["name"] for t in body["tools"]]
    if provider == "openai":
        return [t["function"]["name"] for t in body["tools"]]
    return [d["name"] for d in body["tools"][0]["functionDeclarations"]]


# Anthropic Messages API.


def test_anthropic_request_shape(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("anthropic", max_tokens=333, instructions="Server rules first.")
    stub.responder = lambda r: Reply(200, anthropic_text("ok"))
    assert (
        p.post(
            request_body(messages=conversation(), tools=tools("add_to_cart", "checkout"))
        ).status_code
        == 200
    )
    sent = stub.last()
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.json()
    assert body["model"] == MODEL
    assert body["max_tokens"] == 333
    assert body["system"] == "Server rules first.\n\nYou are an assistant embedded in a web page."
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["tools"][0] == {
        "name": "add_to_cart",
        "description": "Tool add_to_cart.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    assert [t["role"] for t in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert body["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "call_1",
            "name": "add_to_cart",
            "input": {"product": "mug", "quantity": 2},
        }
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "is_error": False,
            "content": "Added 2 mugs.",
        },
    ]
    assert body["messages"][3]["content"] == [{"type": "text", "text": "Added two mugs."}]
    assert body["messages"][5]["content"] == [
        {"type": "tool_use", "id": "call_2", "name": "checkout", "input": {}},
    ]
    last = body["messages"][6]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["is_error"] is True
    assert last[1] == {"type": "text", "text": "ok then show reviews"}
    assert_anthropic_valid(body)


def assert_anthropic_valid(body: dict[str, Any]) -> None:
    """Pairing and text rules of the Messages API."""
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"]
    for i, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] == "text":
                assert block["text"].strip()
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            assert message["role"] == "assistant"
            assert len(uses) == 1
            following = messages[i + 1]["content"]
            results = [b for b in following if b["type"] == "tool_result"]
            assert [b["tool_use_id"] for b in results] == uses
            assert following[0]["type"] == "tool_result"
        results_here = [b for b in message["content"] if b["type"] == "tool_result"]
        if results_here:
            previous = messages[i - 1]["content"]
            assert [b["tool_use_id"] for b in results_here] == [
                b["id"] for b in previous if b["type"] == "tool_use"
            ]


def test_anthropic_pairing_is_repaired(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(200, anthropic_text("ok"))
    messages = [
        # A trimmed history: starts with a result and an answer before the first user text.
        {
            "role": "tool",
            "toolCallId": "old",
            "name": "add_to_cart",
            "content": "x",
            "isError": False,
            "untrusted": False,
        },
        {"role": "assistant", "content": "earlier"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "toolCall": {"id": "a b/c", "name": "add_to_cart", "arguments": "not an object"},
        },
        # call without its result, then a result for an unknown call, then empty texts
        {
            "role": "tool",
            "toolCallId": "zzz",
            "name": "add_to_cart",
            "content": "stray",
            "isError": False,
            "untrusted": False,
        },
        {"role": "assistant", "content": "  "},
        {"role": "user", "content": ""},
        {"role": "assistant", "toolCall": {"id": "a b/c", "name": "add_to_cart", "arguments": {}}},
        {
            "role": "tool",
            "toolCallId": "a b/c",
            "name": "add_to_cart",
            "content": "",
            "isError": False,
            "untrusted": False,
        },
        {"role": "assistant", "toolCall": {"id": "last", "name": "add_to_cart", "arguments": {}}},
    ]
    assert p.post(request_body(messages=messages)).status_code == 200
    body = stub.last().json()
    assert_anthropic_valid(body)
    flat = json.dumps(body)
    assert "earlier" not in flat
    assert "No result: this call did not complete." in flat
    assert "Result of the tool add_to_cart: stray" in flat
    ids = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids)) == 3
    assert all(c.isalnum() or c in "_-" for i in ids for c in i)
    uses = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert uses[0]["input"] == {"value": "not an object"}
    empty = [
        b
        for m in body["messages"]
        for b in m["content"]
        if b["type"] == "tool_result" and b["tool_use_id"] == ids[1]
    ]
    # An empty result reaches Anthropic as a non-empty placeholder, never an empty block.
    assert empty[0]["content"] == "(The tool finished and returned no text.)"


def test_anthropic_max_tokens_on_a_half_made_tool_call_is_an_error(
    proxy: Any, stub: StubUpstream
) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(
        200, anthropic_tool("add_to_cart", {"product": "mu"}, stop_reason="max_tokens")
    )
    response = p.post(request_body())
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream-error"
    assert "tool call" in response.json()["error"]["message"]
    # A text answer cut by max_tokens is still an answer.
    stub.responder = lambda r: Reply(200, anthropic_text("A long answ", stop_reason="max_tokens"))
    assert p.post(request_body()).json() == {"type": "answer", "text": "A long answ"}


def test_anthropic_reply_shapes(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("anthropic")
    stub.responder = lambda r: Reply(
        200, anthropic_tool("add_to_cart", {"product": "mug"}, call_id="toolu_X")
    )
    assert p.post(request_body()).json() == {
        "type": "tool",
        "name": "add_to_cart",
        "arguments": {"product": "mug"},
        "id": "toolu_X",
    }
    thinking = anthropic_text("Done.")
    thinking["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "s"})
    stub.responder = lambda r: Reply(200, thinking)
    assert p.post(request_body()).json() == {"type": "answer", "text": "Done."}
    stub.responder = lambda r: Reply(200, {**anthropic_text(""), "content": []})
    empty = p.post(request_body())
    assert empty.status_code == 502
    assert (
        empty.json()["error"]["message"]
        == "No answer came from the model: it returned an empty reply."
    )


# OpenAI Chat Completions.


def test_openai_request_shape(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy(
        "openai", max_tokens=77, instructions="Server.", allow_client_instructions=False
    )
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    assert (
        p.post(
            request_body(messages=conversation(), tools=tools("add_to_cart", "checkout"))
        ).status_code
        == 200
    )
    sent = stub.last()
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.json()
    assert body["model"] == MODEL
    assert body["max_completion_tokens"] == 77
    assert body["parallel_tool_calls"] is False
    assert body["tool_choice"] == "auto"
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "add_to_cart"
    assert body["messages"][0] == {"role": "system", "content": "Server."}
    call = body["messages"][2]
    assert call["role"] == "assistant" and call["content"] is None
    assert call["tool_calls"][0]["id"] == "call_1"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {
        "product": "mug",
        "quantity": 2,
    }
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Added 2 mugs.",
    }
    assert body["messages"][7]["content"].startswith("Error: ")


def test_openai_without_tools_sends_no_tool_fields(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    assert p.post(request_body(messages=conversation(), tools=[])).status_code == 200
    body = stub.last().json()
    for key in ("tools", "tool_choice", "parallel_tool_calls"):
        assert key not in body
    assert all("tool_calls" not in m and m["role"] != "tool" for m in body["messages"])
    assert any("I called the tool add_to_cart" in (m["content"] or "") for m in body["messages"])


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"product": "mug", "quantity": 2}', {"product": "mug", "quantity": 2}),
        ("{}", {}),
        ("", {}),  # some compatible servers send "" for a tool without parameters
        ("   ", {}),
        ("[1, 2]", "[1, 2]"),
        ('"text"', '"text"'),
        ("null", "null"),
        ("42", "42"),
        ('{"product": "mug"', '{"product": "mug"'),
        ('{"a": NaN}', '{"a": NaN}'),
        ('{"a": Infinity}', '{"a": Infinity}'),
        ("[" * 3000 + "]" * 3000, "[" * 3000 + "]" * 3000),
        ('{"a":' * 100 + "1" + "}" * 100, '{"a":' * 100 + "1" + "}" * 100),
        ('{"n": 1' + "0" * 5000 + "}", '{"n": 1' + "0" * 5000 + "}"),
    ],
)
def test_openai_arguments_string_parsed_safely(
    proxy: Any, stub: StubUpstream, arguments: str, expected: Any
) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(200, openai_tool("add_to_cart", arguments))
    response = p.post(request_body())
    assert response.status_code == 200
    reply = response.json()
    assert wire.problems("protocol-v1", reply, "reply") == []
    assert reply["arguments"] == expected
    wire.parse_reply(reply)  # the browser's own check accepts it (arguments are checked later)


def test_openai_reply_shapes(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai")
    stub.responder = lambda r: Reply(
        200, openai_tool("add_to_cart", '{"a": 1}', finish_reason="length")
    )
    response = p.post(request_body())
    assert response.status_code == 502
    assert "tool call" in response.json()["error"]["message"]
    stub.responder = lambda r: Reply(200, openai_text(None, refusal="I can't help with that."))
    assert p.post(request_body()).json() == {"type": "answer", "text": "I can't help with that."}
    parts = openai_text(None)
    parts["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]
    stub.responder = lambda r: Reply(200, parts)
    assert p.post(request_body()).json() == {"type": "answer", "text": "ab"}
    two = openai_tool("add_to_cart", "{}")
    first_call = two["choices"][0]["message"]["tool_calls"][0]
    two["choices"][0]["message"]["tool_calls"].append({**first_call, "id": "call_second"})
    stub.responder = lambda r: Reply(200, two)
    assert p.post(request_body()).json()["id"] == "call_abc123"
    nameless = openai_tool("", "{}")
    stub.responder = lambda r: Reply(200, nameless)
    assert p.post(request_body()).status_code == 502


def test_openai_compatible_base_url(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("openai", base_url=f"{stub.url}/compat/api/v1/")
    stub.responder = lambda r: Reply(200, openai_text("ok"))
    assert p.post(request_body()).status_code == 200
    assert stub.last().path == "/compat/api/v1/chat/completions"


# Gemini generateContent.


def test_gemini_key_in_header_never_in_url(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("gemini", max_tokens=55)
    stub.responder = lambda r: Reply(200, gemini_text("ok"))
    assert (
        p.post(
            request_body(messages=conversation(), tools=tools("add_to_cart", "checkout"))
        ).status_code
        == 200
    )
    sent = stub.last()
    assert sent.headers["x-goog-api-key"] == KEY
    assert KEY not in sent.path
    assert "key=" not in sent.path
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    body = sent.json()
    assert body["generationConfig"] == {"maxOutputTokens": 55}
    assert body["systemInstruction"] == {
        "parts": [{"text": "You are an assistant embedded in a web page."}]
    }
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    roles = ["user", "model", "user", "model", "user", "model", "user"]
    assert [c["role"] for c in body["contents"]] == roles
    assert body["contents"][1]["parts"] == [
        {
            "functionCall": {"name": "add_to_cart", "args": {"product": "mug", "quantity": 2}},
            # A call from another model has no signature: Google's documented fallback.
            "thoughtSignature": "skip_thought_signature_validator",
        }
    ]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "add_to_cart", "response": {"output": "Added 2 mugs."}}}
    ]
    assert body["contents"][6]["parts"][0]["functionResponse"]["response"] == {
        "error": "The visitor denied this call."
    }


def test_gemini_model_with_prefix_and_odd_characters(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("gemini", model="models/gemini-2.5-flash")
    stub.responder = lambda r: Reply(200, gemini_text("ok"))
    p.post(request_body())
    assert stub.last().path == "/v1beta/models/gemini-2.5-flash:generateContent"


def test_gemini_thought_signature_round_trip(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("gemini")
    stub.responder = lambda r: Reply(
        200, gemini_tool("add_to_cart", {"product": "mug"}, signature="c2lnbmF0dXJlLTE=")
    )
    reply = p.post(request_body()).json()
    assert reply["meta"] == {"thoughtSignature": "c2lnbmF0dXJlLTE="}
    assert reply["id"].startswith("call_")
    # The browser sends the call back with its meta and the result.
    messages = [
        {"role": "user", "content": "add a mug"},
        {
            "role": "assistant",
            "toolCall": {
                "id": reply["id"],
                "name": reply["name"],
                "arguments": reply["arguments"],
                "meta": reply["meta"],
            },
        },
        {
            "role": "tool",
            "toolCallId": reply["id"],
            "name": "add_to_cart",
            "content": "Added.",
            "isError": False,
            "untrusted": False,
        },
    ]
    stub.responder = lambda r: Reply(200, gemini_text("Added a mug."))
    assert p.post(request_body(messages=messages)).json()["text"] == "Added a mug."
    part = stub.last().json()["contents"][1]["parts"][0]
    assert part == {
        "functionCall": {"name": "add_to_cart", "args": {"product": "mug"}},
        "thoughtSignature": "c2lnbmF0dXJlLTE=",
    }
    # Without a signature there is no meta, and none is invented on the way back.
    stub.responder = lambda r: Reply(
        200, gemini_tool("add_to_cart", {}, signature=None, call_id="fc-1")
    )
    reply = p.post(request_body()).json()
    assert "meta" not in reply
    assert reply["id"] == "fc-1"


def test_gemini_only_the_first_call_is_used(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("gemini")
    reply = gemini_tool("add_to_cart", {"product": "mug"}, signature="c2ln")
    reply["candidates"][0]["content"]["parts"].insert(0, {"text": "thinking", "thought": True})
    reply["candidates"][0]["content"]["parts"].append(
        {"functionCall": {"name": "checkout", "args": {}}}
    )
    stub.responder = lambda r: Reply(200, reply)
    result = p.post(request_body(tools=tools("add_to_cart", "checkout"))).json()
    assert result["name"] == "add_to_cart"
    assert result["meta"] == {"thoughtSignature": "c2ln"}


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (gemini_tool("add_to_cart", {"product": "m"}, finish_reason="MAX_TOKENS"), 502),
        ({"promptFeedback": {"blockReason": "SAFETY"}}, 502),
        ({"candidates": [{"finishReason": "SAFETY", "index": 0}]}, 502),
        (
            {
                "candidates": [
                    {
                        "content": {"parts": [], "role": "model"},
                        "finishReason": "MALFORMED_FUNCTION_CALL",
                    }
                ]
            },
            502,
        ),
        (
            {
                "candidates": [
                    {"content": {"parts": [], "role": "model"}, "finishReason": "RECITATION"}
                ]
            },
            502,
        ),
        (gemini_text("cut sho", finish_reason="MAX_TOKENS"), 200),
        # STOP without parts: no answer came (tests/server/test_server_provider_answers.py).
        ({"candidates": [{"content": {"role": "model"}, "finishReason": "STOP"}]}, 502),
    ],
)
def test_gemini_finish_reasons(proxy: Any, stub: StubUpstream, reply: Any, status: int) -> None:
    p: Proxy = proxy("gemini")
    stub.responder = lambda r: Reply(200, reply)
    response = p.post(request_body())
    assert response.status_code == status
    if status == 502:
        assert response.json()["error"]["upstreamStatus"] == 200


def test_gemini_schema_reduction_keeps_required(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy("gemini")
    stub.responder = lambda r: Reply(200, gemini_text("ok"))
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {"qty": {"type": "integer", "minimum": 1, "default": 1}},
        "properties": {
            "product": {"type": "string", "title": "Product", "enum": ["mug", "plate"]},
            "quantity": {"$ref": "#/$defs/qty"},
            "note": {"type": ["string", "null"], "maxLength": 200},
            "options": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["product", "quantity", "ghost"],
    }
    body = request_body(
        tools=[
            {"name": "add_to_cart", "description": "Add.", "inputSchema": schema},
            {"name": "list_cart", "description": "List.", "inputSchema": {"type": "object"}},
        ]
    )
    assert p.post(body).status_code == 200
    declarations = stub.last().json()["tools"][0]["functionDeclarations"]
    assert declarations[0]["parameters"] == {
        "type": "object",
        "properties": {
            "product": {"type": "string", "enum": ["mug", "plate"]},
            "quantity": {"type": "integer", "minimum": 1},
            "note": {"type": "string", "maxLength": 200, "nullable": True},
            "options": {},
        },
        "required": ["product", "quantity"],
    }
    assert declarations[1] == {"name": "list_cart", "description": "List."}


# Tool names a provider refuses: mapped there, mapped back, never confused.


@pytest.mark.parametrize("provider", PROVIDERS)
def test_name_mapping_collisions_map_back_to_the_right_tool(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    long_a = "shop.catalog." + "x" * 90 + ".a"
    long_b = "shop.catalog." + "x" * 90 + ".b"
    names = [
        "cart.add",
        "cart_add",
        "cart-add",
        "cart..add",
        "1cart",
        long_a,
        long_b,
    ]  # WebMCP charset only (":" is refused, test_server_boundaries.py)
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, text_reply(provider, "ok"))
    assert p.post(request_body(tools=tools(*names))).status_code == 200
    provider_names = declared(provider, stub.last().json())
    assert len(set(provider_names)) == len(names)
    assert provider_names[1] == "cart_add"  # a name the provider accepts keeps itself
    assert provider_names[2] == "cart-add"
    for provider_name in provider_names:
        assert len(provider_name) <= (63 if provider == "gemini" else 64)
        assert all(c.isalnum() or c in "_-" for c in provider_name)
    for original, provider_name in zip(names, provider_names, strict=True):

        def choose(r: Recorded, name: str = provider_name) -> Reply:
            return Reply(200, tool_reply(provider, name, {"q": "x"}))

        stub.responder = choose
        reply = p.post(request_body(tools=tools(*names))).json()
        assert reply["name"] == original, (provider_name, reply)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_history_names_use_the_same_mapping(proxy: Any, stub: StubUpstream, provider: str) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, text_reply(provider, "ok"))
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "toolCall": {"id": "c1", "name": "cart.add", "arguments": {}}},
        {
            "role": "tool",
            "toolCallId": "c1",
            "name": "cart.add",
            "content": "ok",
            "isError": False,
            "untrusted": False,
        },
        {"role": "assistant", "toolCall": {"id": "c2", "name": "gone.tool", "arguments": {}}},
        {
            "role": "tool",
            "toolCallId": "c2",
            "name": "gone.tool",
            "content": "ok",
            "isError": False,
            "untrusted": False,
        },
    ]
    assert p.post(request_body(messages=messages, tools=tools("cart.add", "cart_add")))
    body = stub.last().json()
    mapped = declared(provider, body)[0]
    flat = json.dumps(body).replace("Tool cart.add.", "")
    assert '"cart.add"' not in flat and '"gone.tool"' not in flat
    assert flat.count(f'"{mapped}"') >= (3 if provider == "gemini" else 2)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_names_from_the_model_pass_through_unchanged(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    p: Proxy = proxy(provider)
    stub.responder = lambda r: Reply(200, tool_reply(provider, "delete_everything", {}))
    reply = p.post(request_body(tools=tools("cart.add"))).json()
    assert reply["name"] == "delete_everything"  # the browser refuses it: no such tool


# Options that shape every provider's request.


@pytest.mark.parametrize("provider", PROVIDERS)
def test_instructions_options(proxy: Any, stub: StubUpstream, provider: str) -> None:
    def system_of(body: dict[str, Any]) -> str | None:
        if provider == "anthropic":
            return body.get("system")
        if provider == "openai":
            first = body["messages"][0]
            return first["content"] if first["role"] == "system" else None
        instruction = body.get("systemInstruction")
        return instruction["parts"][0]["text"] if instruction else None

    stub.responder = lambda r: Reply(200, text_reply(provider, "ok"))
    p: Proxy = proxy(provider, instructions="S", allow_client_instructions=False)
    p.post(request_body(instructions="C"))
    assert system_of(stub.last().json()) == "S"
    p = proxy(provider)
    p.post(request_body(instructions=""))
    assert system_of(stub.last().json()) is None
    p = proxy(provider, instructions="S")
    p.post(request_body(instructions="C"))
    assert system_of(stub.last().json()) == "S\n\nC"


def test_client_ip_default_cf_header_and_custom(
    proxy: Any, stub: StubUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    from pysite_agent.server import client_ip_from_header

    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))

    def buckets() -> list[str]:
        return [
            json.loads(r.getMessage())["client"]
            for r in caplog.records
            if r.name == "pysite_agent.server" and '"request"' in r.getMessage()
        ]

    p: Proxy = proxy()
    caplog.clear()
    p.post(request_body(), headers={"x-forwarded-for": "203.0.113.9"})
    p.post(request_body(), headers={"cf-connecting-ip": "198.51.100.7"})
    p.post(request_body(), headers={"cf-connecting-ip": ""})
    assert buckets() == ["127.0.0.1", "198.51.100.7", "127.0.0.1"]
    p = proxy(client_ip=client_ip_from_header("X-Forwarded-For"))
    caplog.clear()
    p.post(request_body(), headers={"x-forwarded-for": "203.0.113.9, 192.0.2.1"})
    p.post(request_body(), headers={"cf-connecting-ip": "198.51.100.7"})
    assert buckets() == ["192.0.2.1", "127.0.0.1"]
    p = proxy(client_ip=lambda scope: None)
    caplog.clear()
    p.post(request_body())
    assert buckets() == ["shared"]
    p = proxy(client_ip=lambda scope: "x" * 500)
    caplog.clear()
    p.post(request_body())
    assert buckets() == ["x" * 64]


def test_origin_header_reaches_nothing_upstream(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy()
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))
    p.post(request_body(), headers={"cookie": "session=abc", "x-site": "1"})
    sent = stub.last().headers
    assert "cookie" not in sent and "origin" not in sent and "x-site" not in sent
    assert ORIGIN not in json.dumps(sent)


def test_a_providers_cookies_are_never_kept_or_sent_on(proxy: Any, stub: StubUpstream) -> None:
    # The app's own client has no cookie jar: what one visitor's request brought back
    # (Set-Cookie, e.g. a load balancer's affinity cookie) never rides on the next request.
    p: Proxy = proxy()
    stub.responder = lambda r: Reply(
        200, text_reply("openai", "ok"), headers={"set-cookie": "affinity=visitor-1; Path=/"}
    )
    assert p.post(request_body()).status_code == 200
    assert p.post(request_body()).status_code == 200
    assert len(stub.requests) == 2
    assert "cookie" not in stub.requests[1].headers
    for sent in stub.requests:
        assert sent.headers["user-agent"] == "pysite-agent"
        assert sent.headers["authorization"] == f"Bearer {KEY}"


def test_an_egress_proxy_from_the_environment_is_used(
    proxy: Any, stub: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HTTP_PROXY / HTTPS_PROXY (and NO_PROXY) are honoured, as by httpx's own client: here the
    # stub plays the egress proxy and receives the request for the provider's host.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", stub.url)
    stub.responder = lambda r: Reply(200, text_reply("openai", "via the egress proxy"))
    p: Proxy = proxy(base_url="http://provider.invalid/v1")
    response = p.post(request_body())
    assert response.status_code == 200, response.text
    assert response.json() == {"type": "answer", "text": "via the egress proxy"}
    assert stub.last().path == "http://provider.invalid/v1/chat/completions"
    assert stub.last().headers["authorization"] == f"Bearer {KEY}"
