"""A tool's ``outputSchema`` (WebMCP, spec PR #254) reaches each provider's model.

No provider's tool format has a field for it, so the proxy adds it to the tool's description.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import PROVIDERS, Proxy, request_body
from stub_upstream import Reply, StubUpstream, text_reply

OUTPUT = {"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}


def _descriptions(provider: str, body: dict[str, Any]) -> list[str]:
    if provider == "anthropic":
        return [t["description"] for t in body["tools"]]
    if provider == "openai":
        return [t["function"]["description"] for t in body["tools"]]
    return [d["description"] for d in body["tools"][0]["functionDeclarations"]]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_output_schema_is_added_to_the_description(
    proxy: Any, stub: StubUpstream, provider: str
) -> None:
    stub.responder = lambda r: Reply(200, text_reply(provider, "ok"))
    p: Proxy = proxy(provider)
    tools = [
        {"name": "cart_total", "description": "The cart's total.", "outputSchema": OUTPUT},
        {"name": "plain", "description": "No output schema."},
    ]
    for tool in tools:
        tool["inputSchema"] = {"type": "object"}
    assert p.post(request_body(tools=tools)).status_code == 200
    with_schema, plain = _descriptions(provider, stub.last().json())
    assert with_schema.startswith("The cart's total.\n\nReturns JSON matching: ")
    assert json.loads(with_schema.split("Returns JSON matching: ", 1)[1]) == OUTPUT
    assert plain == "No output schema."
