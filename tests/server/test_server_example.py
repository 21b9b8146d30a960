"""``examples/proxy_server.py``: its fake model, and its defaults against the demo shop's."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import jsonschema
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The demo shop's tools (examples/demo-shop.js), as the browser sends them.
SHOP_TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_products",
        "description": "Find products in the shop by words (name, colour or material).",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "title": "Search words"}},
            "required": ["query"],
        },
    },
    {
        "name": "add_to_cart",
        "description": "Add a product to the cart, by its name or id, with a quantity.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "product": {"type": "string", "description": "A product name or id"},
                "quantity": {"type": "integer", "minimum": 1, "maximum": 20, "default": 1},
            },
            "required": ["product", "quantity"],
            "additionalProperties": False,
        },
    },
    {
        "name": "get_reviews",
        "description": "Read customer reviews of a product.",
        "inputSchema": {
            "type": "object",
            "properties": {"product": {"type": "string"}},
            "required": ["product"],
        },
    },
    {
        "name": "checkout",
        "description": "Place the order for everything in the cart and pay with the saved card.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "proxy_server_example", EXAMPLES / "proxy_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def openai_body(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """What the proxy sends to OpenAI for these messages and tools."""
    return {
        "model": "fake",
        "messages": [{"role": "system", "content": "Be brief."}, *messages],
        "max_completion_tokens": 1024,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["inputSchema"],
                },
            }
            for t in tools
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
    }


def fake(example: ModuleType, text: str, tools: list[dict[str, Any]] = SHOP_TOOLS) -> Any:
    body = openai_body([{"role": "user", "content": text}], tools)
    message = asyncio.run(example.fake_completion(body))["choices"][0]["message"]
    if message.get("tool_calls"):
        function = message["tool_calls"][0]["function"]
        return function["name"], json.loads(function["arguments"])
    return message["content"]


@pytest.mark.parametrize(
    ("text", "tool", "arguments"),
    [
        ("add two mugs to my cart", "add_to_cart", {"product": "mugs", "quantity": 2}),
        ("Add 3 stickers", "add_to_cart", {"product": "stickers", "quantity": 3}),
        ("add the red mug to the cart", "add_to_cart", {"product": "red mug", "quantity": 1}),
        ("show reviews of the red mug", "get_reviews", {"product": "red mug"}),
        ("find a linen bag", "search_products", {"query": "linen bag"}),
        ("place the order", "checkout", {}),
    ],
)
def test_fake_model_picks_the_matching_tool_and_fills_its_arguments(
    example: ModuleType, text: str, tool: str, arguments: dict[str, Any]
) -> None:
    assert fake(example, text) == (tool, arguments)
    schema = next(t["inputSchema"] for t in SHOP_TOOLS if t["name"] == tool)
    jsonschema.validate(arguments, schema)
    assert fake(example, text) == (tool, arguments)  # deterministic


def test_fake_model_fills_required_numbers_from_the_schema(example: ModuleType) -> None:
    tools = [
        {
            "name": "book_table",
            "description": "Book a table for guests.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "guests": {"type": "integer", "minimum": 2},
                    "high_chairs": {"type": "integer"},
                    "note": {"type": "string"},
                },
                "required": ["guests", "high_chairs", "note"],
            },
        }
    ]
    assert fake(example, "book a table by the window", tools) == (
        "book_table",
        {"guests": 2, "high_chairs": 1, "note": "window"},
    )


def test_fake_model_answers_without_a_match_and_after_a_result(example: ModuleType) -> None:
    answer = fake(example, "hello there")
    assert isinstance(answer, str) and "add_to_cart" in answer and "not AI" in answer
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "add_to_cart", "arguments": '{"product": "mugs", "quantity": 2}'},
    }
    # The demo rules' wording may change: check that the answer quotes the result.
    for content, expected in [
        ("Added 2 × Classic mug.", "Added 2 × Classic mug."),
        ("Error: No product matches.", "No product matches."),
    ]:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "add two mugs to my cart"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": content},
        ]
        body = openai_body(messages, SHOP_TOOLS)
        reply = asyncio.run(example.fake_completion(body))["choices"][0]
        assert reply["finish_reason"] == "stop"
        text = reply["message"]["content"]
        assert expected in text and "Error:" not in text
        assert text.endswith("(fake model, not AI)")


def test_example_defaults_match_the_demo_page(example: ModuleType) -> None:
    html = (EXAMPLES / "demo-shop.html").read_text(encoding="utf-8")
    found = re.search(r'id="proxy-url"[^>]*value="([^"]+)"', html)
    assert found is not None
    assert found.group(1) == f"http://127.0.0.1:{example.DEFAULT_PORT}{example.DEFAULT_PATH}"
    assert "http://localhost:5180" in example.DEMO_ORIGINS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_example_fake_model_over_http_with_the_demo_origins() -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "proxy_server.py"), "--fake-model", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    request: dict[str, Any] = {
        "version": 1,
        "instructions": "You help visitors of the shop.",
        "messages": [{"role": "user", "content": "add two mugs to my cart"}],
        "tools": SHOP_TOOLS,
    }
    try:
        with httpx.Client(trust_env=False, timeout=10) as client:
            deadline = time.monotonic() + 15
            while True:
                try:
                    assert client.get(f"{url}healthz").json()["status"] == "ok"
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise
                    time.sleep(0.05)
            first = client.post(url, json=request, headers={"origin": "http://localhost:5180"})
            assert first.status_code == 200
            call = first.json()
            assert call["type"] == "tool" and call["name"] == "add_to_cart"
            assert call["arguments"] == {"product": "mugs", "quantity": 2}
            request["messages"] += [
                {
                    "role": "assistant",
                    "toolCall": {k: call[k] for k in ("id", "name", "arguments")},
                },
                {
                    "role": "tool",
                    "toolCallId": call["id"],
                    "name": "add_to_cart",
                    "content": "Added 2 × Classic mug ($12.00 each).",
                    "isError": False,
                    "untrusted": False,
                },
            ]
            second = client.post(url, json=request, headers={"origin": "http://127.0.0.1:5180"})
            answer = second.json()
            assert answer["type"] == "answer"
            assert "Added 2 × Classic mug ($12.00 each)." in answer["text"]
            assert answer["text"].endswith("(fake model, not AI)")
            other = client.post(url, json=request, headers={"origin": "http://localhost:8000"})
            assert other.status_code == 403
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=15)
    assert f"http://localhost:5180/?models=proxy&proxy-url={url}\n" in out
    requests = [json.loads(line) for line in err.splitlines() if line.startswith('{"event"')]
    assert [r["status"] for r in requests] == [200, 200, 403]
    # Nothing leaves the machine, and the log does not suggest otherwise.
    assert "api.openai.com" not in err and "HTTP Request" not in err
