"""The shim accepts every tool schema Chromium's own WebMCP accepts (both lanes, same schemas).

Chromium 156 with ``--enable-features=WebMCP`` checks no keyword of a tool's ``inputSchema``:
``$ref``/``$defs``, ``patternProperties``, ``additionalProperties`` as a schema, ``anyOf``/``oneOf``
at the root, ``format`` values, unknown keywords, even an invalid ``pattern`` are registered and
listed as given. The shim once refused them, so a browser without WebMCP lost the tool. Each
schema below is registered, listed unchanged and called in both lanes; only what Chromium itself
refuses (a schema that is not an object, one JSON cannot write) is refused by both. The shim's
own argument check (``web/webmcp/arguments.js``) never fails a call on a keyword it does not know
or a malformed one (what it does check: ``test_webmcp_conformance_shim.py``); the gateway
validates every call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"

#: name -> (schema, arguments that fit it)
SCHEMAS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ref_defs": (
        {
            "type": "object",
            "properties": {"when": {"$ref": "#/$defs/day"}},
            "$defs": {"day": {"type": "string", "format": "date"}},
        },
        {"when": "2026-12-02"},
    ),
    "definitions": (
        {"type": "object", "definitions": {"x": {"type": "string"}}, "properties": {}},
        {},
    ),
    "pattern_properties": (
        {"type": "object", "patternProperties": {"^size_": {"type": "integer"}}},
        {"size_m": 2},
    ),
    "additional_schema": (
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"colour": "red"},
    ),
    "additional_true": ({"type": "object", "additionalProperties": True}, {"x": [1]}),
    "any_of_root": (
        {"anyOf": [{"type": "object", "properties": {"q": {"type": "string"}}}, {"type": "null"}]},
        {"q": "mug"},
    ),
    "one_of_root": (
        {
            "oneOf": [
                {"type": "object", "required": ["sku"]},
                {"type": "object", "required": ["name"]},
            ]
        },
        {"sku": "A1"},
    ),
    "unknown_keywords": (
        {
            "type": "object",
            "x-widget": "calendar",
            "properties": {"q": {"type": "string", "ui:hint": "search", "deprecated": False}},
        },
        {"q": "mug"},
    ),
    "formats": (
        {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "mail": {"type": "string", "format": "email"},
                "odd": {"type": "string", "format": "not-a-format"},
            },
        },
        {"day": "2026-12-02", "mail": "a@b.example", "odd": "x"},
    ),
    "bad_pattern": (
        {"type": "object", "properties": {"q": {"type": "string", "pattern": "(["}}},
        {"q": "anything"},
    ),
    "if_then_else": (
        {"type": "object", "if": {"required": ["a"]}, "then": {}, "else": {}},
        {"a": 1},
    ),
    "unevaluated_dependent": (
        {
            "type": "object",
            "unevaluatedProperties": False,
            "dependentRequired": {"a": ["b"]},
            "propertyNames": {"maxLength": 3},
            "properties": {"a": {}, "b": {}},
        },
        {"a": 1, "b": 2},
    ),
    "content": (
        {
            "type": "object",
            "properties": {"f": {"type": "string", "contentEncoding": "base64"}},
        },
        {"f": "aGk="},
    ),
    "dollar_schema": (
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
        {},
    ),
    "unknown_type_name": ({"type": "object", "properties": {"n": {"type": "int"}}}, {"n": 3}),
    "bad_bounds": (
        {"type": "object", "properties": {"n": {"type": "number", "minimum": "5"}}},
        {"n": 3},
    ),
}

REGISTER_ALL = """
async (schemas) => {
  const mc = window.modelContext;
  const out = {registered: {}, called: {}};
  for (const [name, [inputSchema]] of Object.entries(schemas)) {
    out.registered[name] = await outcome(mc.registerTool({name, description: 'd', inputSchema,
      execute: (args) => JSON.stringify(args)}));
  }
  const tools = await mc.getTools();
  out.listed = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]));
  for (const [name, [, args]] of Object.entries(schemas)) {
    const tool = tools.find((t) => t.name === name);
    out.called[name] = await outcome(mc.executeTool(tool, args));
  }
  return out;
}
"""


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def test_every_schema_chromium_accepts_is_registered_listed_and_called(
    mc_page: Any, lane: str
) -> None:
    got = mc_page.evaluate(REGISTER_ALL, {k: list(v) for k, v in SCHEMAS.items()})
    assert mc_page.evaluate("window.webmcpShim.hasNativeModelContext()") is (lane == "native")
    for name, (schema, args) in SCHEMAS.items():
        assert got["registered"][name] == {"ok": True, "value": "<undefined>"}, (lane, name)
        assert got["listed"][name] == schema, (lane, name)  # listed exactly as given
        assert got["called"][name]["ok"] is True, (lane, name, got["called"][name])
        # Native returns the text; both lanes ran the tool with the arguments given.
        assert args == json.loads(got["called"][name]["value"]), (lane, name)


def test_only_what_chromium_refuses_is_refused(mc_page: Any, lane: str) -> None:
    got = mc_page.evaluate(
        """async () => {
          const mc = window.modelContext;
          const cyclic = {type: 'object'};
          cyclic.self = cyclic;
          const reg = (name, inputSchema) => outcome(mc.registerTool({name, description: 'd',
            inputSchema, execute: () => 'x'}));
          return {
            number: await reg('n', 5),
            nul: await reg('z', null),
            cyclic: await reg('c', cyclic),
            big: await reg('b', {type: 'object', max: 10n}),
            dropped: await reg('f', {type: 'object', fn() {}, u: undefined}),
            listed: (await mc.getTools()).map((t) => [t.name, t.inputSchema]),
          };
        }"""
    )
    for case in ("number", "nul", "cyclic", "big"):
        assert got[case]["ok"] is False and got[case]["type"] == "TypeError", (lane, case, got)
        assert "registerTool" in got[case]["message"], (lane, case)
    assert got["dropped"]["ok"] is True
    assert got["listed"] == [["f", {"type": "object"}]]  # JSON's rules, as native
