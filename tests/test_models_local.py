"""local_model() over a Python fake of the page's engine host (``web/runtime/local-model.js``).

The fake has the engine's surface (``status``, ``download``, ``load``, ``chat``, ``clear``) and
behaves as the JS host does: a file kept or not, a download with progress that an abort
cancels, a load, and a chat that streams text through ``onText`` and stops when its signal
aborts. Like llama.cpp, it only writes replies the ``response_format`` schema accepts: each
scripted reply is checked against that schema (jsonschema) before it is "generated", so a test
fails when the schema would not let the model write what it must be able to write. The real
engine runs in ``tests/browser/test_local_model.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import gbnf
import jsonschema
import pytest
from aio import run
from generators import hostile_text, hostile_value, scalar
from helpers import Shop, ask
from hypothesis import given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.wire import tool_call_message, tool_result_message, user_message
from pysite_agent.models.local import REPEAT_PENALTY, LocalModel, local_model
from pysite_agent.models.local_grammar import reply_grammar
from pysite_agent.models.local_grounding import said
from pysite_agent.models.local_schema import (
    DROPPED_KEYWORDS,
    REPLY_FORMAT,
    coarse_reply_schema,
    grammar_schema,
    reply_schema,
    with_words,
)
from pysite_agent.models.local_warm import pieces, prompt_fraction

SHA = "ab" * 32


class EngineError(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


Reply = dict[str, Any] | Callable[[dict[str, Any]], Any]


class FakeEngine:
    """The engine host's surface, in Python (see the module docstring)."""

    def __init__(self, replies: list[Reply] | None = None, *, state: str = "cached") -> None:
        self.state = state
        self.size = 98_000_000
        self.replies = list(replies or [])
        self.requests: list[dict[str, Any]] = []
        self.loads = 0
        self.downloads = 0
        self.chunk = 4  # characters per streamed piece
        self.refuse_schema = False
        self.refuse_grammar = False
        self.context_chars: int | None = None  # prompts longer than this raise ContextError
        self.gate: asyncio.Event | None = None  # a chat waits on it between pieces
        self.progress: list[Any] = []  # prompt_progress values sent before the reply
        self.warms = 0

    async def status(self) -> dict[str, Any]:
        stored = self.size if self.state in ("cached", "loaded") else 0
        return {"state": self.state, "size": self.size, "stored": stored}

    async def download(self, options: dict[str, Any]) -> dict[str, Any]:
        on_progress, signal = options["onProgress"], options["signal"]
        self.downloads += 1
        self.state = "downloading"
        for step in range(1, 5):
            await asyncio.sleep(0.01)
            if signal.aborted:
                self.state = "absent"
                raise EngineError("AbortError", "aborted")
            on_progress(step / 4)
        self.state = "cached"
        return await self.status()

    async def load(self, options: dict[str, Any]) -> dict[str, Any]:
        assert self.state == "cached"
        self.loads += 1
        self.state = "loaded"
        return {"contextSize": 2048, "threads": 1, "webgpu": False, "loadMs": 4000}

    async def chat(self, request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if not {"response_format", "grammar"} & set(request):  # warm(): no reply wanted
            assert request["max_tokens"] == 1 and "onText" not in options
            self.warms += 1
            return {"text": "", "timings": {"prompt_n": 90, "predicted_n": 1}}
        on_text, signal = options["onText"], options["signal"]
        grammar = request.get("grammar")
        if grammar is not None:
            assert "response_format" not in request  # llama.cpp takes one or the other
            if self.refuse_grammar:
                raise EngineError("SchemaError", "failed to parse grammar")
            gbnf.parse(grammar)  # llama.cpp refuses a grammar it cannot read
        else:
            fmt = request["response_format"]
            assert fmt["type"] == "json_schema"
            schema = fmt["json_schema"]["schema"]
            if self.refuse_schema and any(
                branch["properties"].get("arguments") != {"type": "object"}
                for branch in schema["anyOf"][1:]
            ):
                raise EngineError("SchemaError", "failed to parse grammar")
        prompt = "".join(m["content"] for m in request["messages"])
        if self.context_chars is not None and len(prompt) > self.context_chars:
            raise EngineError("ContextError", "the request exceeds the available context size")
        for value in self.progress:
            await asyncio.sleep(0)
            options["onProgress"](value)
        reply = self.replies.pop(0)
        value = wire(reply(request) if callable(reply) else reply)
        if grammar is not None:  # the grammar allows the compact spelling, nothing else
            text = json.dumps(value, separators=(",", ":"))
            assert gbnf.allows(grammar, text), text
            assert not gbnf.allows(grammar, json.dumps(value)), "white space was allowed"
        else:
            jsonschema.validate(value, schema)  # llama.cpp's grammar allows nothing else
            text = json.dumps(value)
        for i in range(0, len(text), self.chunk):
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0)
            if signal.aborted:
                raise EngineError("AbortError", "aborted")
            on_text(text[i : i + self.chunk])
        return {
            "text": text,
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 3},
        }

    async def clear(self) -> dict[str, Any]:
        self.state = "absent"
        return await self.status()


def tool(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema}


SHOP_TOOLS = [
    tool(
        "add_to_cart",
        {
            "type": "object",
            "properties": {"product": {"type": "string"}, "quantity": {"type": "integer"}},
            "required": ["product", "quantity"],
        },
        "Add a product to the cart.",
    ),
    tool(
        "search_products",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
]


FIRST = "add two mugs to my cart"


def request(text: str = FIRST, **more: Any) -> ModelRequest:
    return ModelRequest(
        instructions="You help on a shop.",
        messages=[user_message(text)],
        tools=SHOP_TOOLS,
        **more,
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool", "name": name, "arguments": arguments}


def wire(reply: Any) -> Any:
    """Protocol v1's reply as the local model writes it (``local_schema.REPLY_FORMAT``)."""
    if isinstance(reply, dict) and reply.get("type") == "tool":
        return {"tool": reply["name"], "arguments": reply["arguments"]}
    if isinstance(reply, dict) and reply.get("type") == "answer":
        return {"answer": reply["text"]}
    return reply


# ---------------------------------------------------------------------------- the reply schema


def test_reply_schema_has_an_answer_and_one_branch_per_tool() -> None:
    schema = reply_schema(SHOP_TOOLS)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert len(schema["anyOf"]) == 3
    ok = jsonschema.Draft202012Validator(schema)
    assert ok.is_valid({"answer": "hi"})
    assert ok.is_valid(wire(call("add_to_cart", product="mug", quantity=2)))
    assert not ok.is_valid(wire(call("add_to_cart", product="mug")))  # required kept
    assert not ok.is_valid(wire(call("add_to_cart", product="mug", quantity="2")))
    assert not ok.is_valid(wire(call("checkout")))  # not a listed tool
    assert not ok.is_valid(wire(call("add_to_cart", product="mug", quantity=2, note="x")))
    assert not ok.is_valid({"tool": "add_to_cart", "arguments": {}})
    # no redundant keys: protocol v1's shape (Chrome's reply format) is not this format
    assert not ok.is_valid({"type": "answer", "text": "hi"})
    assert not ok.is_valid(call("add_to_cart", product="mug", quantity=2))
    assert not ok.is_valid({"answer": "hi", "tool": "add_to_cart"})
    # the tool's name comes first, then its arguments (llama.cpp writes keys in this order)
    for branch in schema["anyOf"][1:]:
        assert list(branch["properties"]) == ["tool", "arguments"]
        assert branch["required"] == ["tool", "arguments"]


def test_refs_and_defs_are_inlined_and_recursion_is_cut() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "size": {"enum": ["S", "M", "L"]},
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            },
        },
        "properties": {"size": {"$ref": "#/$defs/size"}, "tree": {"$ref": "#/$defs/node"}},
        "required": ["size"],
    }
    out = reply_schema([tool("pick", schema)])
    text = json.dumps(out)
    assert "$ref" not in text and "$defs" not in text
    args = out["anyOf"][1]["properties"]["arguments"]
    assert args["properties"]["size"] == {"enum": ["S", "M", "L"]}
    ok = jsonschema.Draft202012Validator(out)
    assert ok.is_valid(wire(call("pick", size="M", tree={"children": [{"children": []}]})))
    assert not ok.is_valid(wire(call("pick", size="XL")))


def test_enums_nested_objects_and_arrays_keep_their_structure() -> None:
    schema = {
        "type": "object",
        "properties": {
            "address": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["city"],
            },
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"type": "integer", "minimum": 1, "maximum": 9},
                    },
                    "required": ["sku", "qty"],
                },
                "minItems": 1,
                "maxItems": 3,
            },
            "speed": {"type": "string", "enum": ["standard", "express"]},
        },
        "required": ["address", "items", "speed"],
    }
    out = reply_schema([tool("ship", schema)])
    ok = jsonschema.Draft202012Validator(out)
    good = wire(
        call("ship", address={"city": "Lyon"}, items=[{"sku": "a", "qty": 2}], speed="express")
    )
    assert ok.is_valid(good)
    assert not ok.is_valid({**good, "arguments": {**good["arguments"], "speed": "slow"}})
    assert not ok.is_valid({**good, "arguments": {**good["arguments"], "items": []}})
    bad_qty = [{"sku": "a", "qty": 12}]
    assert not ok.is_valid({**good, "arguments": {**good["arguments"], "items": bad_qty}})
    extra = {"city": "Lyon", "floor": 3}  # nested objects get additionalProperties: false
    assert not ok.is_valid({**good, "arguments": {**good["arguments"], "address": extra}})


def test_what_the_grammar_cannot_express_is_dropped_towards_a_looser_schema() -> None:
    schema = {
        "type": "object",
        "title": "Order",
        "description": "An order.",
        "properties": {
            "code": {"type": "string", "pattern": "[A-Z]{3}"},  # unanchored: dropped
            "ref": {"type": "string", "pattern": "^[0-9]+$"},  # anchored: kept
            "price": {"type": "number", "minimum": 0.5, "multipleOf": 0.5},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "when": {"type": "string", "format": "date"},
            "mail": {"type": "string", "format": "email"},
            "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
            "not_x": {"not": {"const": "x"}},
        },
        "patternProperties": {"^x-": {"type": "string"}},
        "if": {"required": ["code"]},
        "then": {"required": ["ref"]},
        "minProperties": 1,
    }
    out = grammar_schema(schema)
    text = json.dumps(out)
    for keyword in (
        'pattern": "[A-Z]',
        "multipleOf",
        "uniqueItems",
        "oneOf",
        '"not"',
        "patternProperties",
        '"if"',
        '"then"',
        "minProperties",
        "email",
        "description",
        "title",
    ):
        assert keyword not in text, keyword
    props = out["properties"]
    assert props["ref"]["pattern"] == "^[0-9]+$"
    assert props["when"]["format"] == "date"
    assert props["kind"] == {"anyOf": [{"const": "a"}, {"const": "b"}]}
    assert "minimum" not in props["price"]  # ranges are kept on integers only
    assert out["additionalProperties"] is False
    # Looser, never stricter: whatever the original accepts, the simplified schema accepts.
    original = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    simplified = jsonschema.Draft202012Validator(out)
    sample = {
        "code": "ABC",
        "ref": "12",
        "price": 1.5,
        "tags": ["a"],
        "when": "2026-12-01",
        "mail": "a@b.example",
        "kind": "a",
        "not_x": "y",
    }
    assert original.is_valid(sample) and simplified.is_valid(sample)
    assert set(DROPPED_KEYWORDS) >= {"not", "if", "then", "else", "uniqueItems", "multipleOf"}


def test_all_of_branches_keep_open_objects() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    }
    out = grammar_schema(schema)
    assert all("additionalProperties" not in part for part in out["allOf"])
    assert jsonschema.Draft202012Validator(out).is_valid({"a": "x", "b": 1})


def test_a_tool_with_a_broken_schema_gets_an_object_branch() -> None:
    out = reply_schema([tool("odd", {"type": "nonsense"}), {"name": "", "inputSchema": {}}])
    assert len(out["anyOf"]) == 2
    assert out["anyOf"][1]["properties"]["arguments"] == {"type": "object"}
    coarse = coarse_reply_schema(SHOP_TOOLS)
    assert [b["properties"]["arguments"] for b in coarse["anyOf"][1:]] == [{"type": "object"}] * 2


# ---------------------------------------------------------------------------- one step


def test_a_step_loads_once_sends_the_schema_and_parses_the_tool_call() -> None:
    engine = FakeEngine(
        [call("add_to_cart", product="mug", quantity=2), call("search_products", query="mug")]
    )
    model = local_model("/models/m.gguf", sha256=SHA, engine=engine)
    assert run(model.availability()) == "available"
    reply = run(model.respond(request()))
    assert reply == call("add_to_cart", product="mug", quantity=2)
    run(model.respond(request("find a mug")))
    assert engine.loads == 1
    sent = engine.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": "You help on a shop."}
    prompt = sent["messages"][1]["content"]
    assert sent["messages"][1]["role"] == "user"
    assert "- add_to_cart: Add a product to the cart." in prompt  # names and descriptions
    assert "Visitor: add two mugs to my cart" in prompt
    assert prompt.index(REPLY_FORMAT) < prompt.index("Visitor:")  # the format before it all
    assert prompt.endswith("Visitor: add two mugs to my cart")
    # the visitor named add_to_cart only; its arguments are grounded in their words
    assert sent["grammar"] == LocalModel.constraint(SHOP_TOOLS, 0, [user_message(FIRST)])["grammar"]
    assert sent["grammar"] == reply_grammar(
        reply_schema(SHOP_TOOLS[:1]), said([user_message(FIRST)])
    )
    assert "response_format" not in sent
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 256
    assert sent["repeat_penalty"] == REPEAT_PENALTY
    assert model.last_usage["promptTokens"] > 0 and model.last_usage["completionTokens"] > 0
    assert model.engine_info["loadMs"] == 4000


def test_answers_stream_and_tool_call_json_never_does() -> None:
    engine = FakeEngine(
        [{"type": "answer", "text": 'Mugs cost "8" EUR.'}, call("search_products", query="mug")]
    )
    model = local_model("/m.gguf", engine=engine)
    pieces: list[str] = []
    reply = run(model.respond(request("price?", on_text=pieces.append)))
    assert reply == {"type": "answer", "text": 'Mugs cost "8" EUR.'}
    assert len(pieces) > 2 and "".join(pieces) == 'Mugs cost "8" EUR.'
    pieces.clear()
    run(model.respond(request("find a mug", on_text=pieces.append)))
    assert pieces == []


def test_stop_aborts_generation_at_once() -> None:
    engine = FakeEngine([{"type": "answer", "text": "x" * 400}])
    engine.gate = asyncio.Event()
    model = local_model("/m.gguf", engine=engine)
    controller = AbortController()
    pieces: list[str] = []

    async def scenario() -> None:
        task = asyncio.ensure_future(
            model.respond(request(signal=controller.signal, on_text=pieces.append))
        )
        engine.gate.set()
        for _ in range(30):
            await asyncio.sleep(0)
        controller.abort("stop")
        with pytest.raises(AbortedError):
            await task

    run(scenario())
    assert 0 < len("".join(pieces)) < 400


def test_not_downloaded_means_download_required_and_prepare_downloads_with_progress() -> None:
    engine = FakeEngine([call("search_products", query="mug")], state="absent")
    model = local_model("/m.gguf", sha256=SHA, engine=engine)
    assert run(model.availability()) == "downloadable"
    assert model.download_bytes == 98_000_000 and model.stored_bytes == 0
    with pytest.raises(SiteAgentError) as info:
        run(model.respond(request()))
    assert info.value.code == "model-download-required"
    assert engine.requests == []
    seen: list[float] = []
    run(model.prepare(seen.append))
    assert seen == [0.25, 0.5, 0.75, 1.0]
    assert run(model.availability()) == "available"
    assert model.stored_bytes == 98_000_000
    assert run(model.respond(request("search for a mug"))) == call("search_products", query="mug")
    run(model.prepare(seen.append))  # already kept: nothing downloads
    assert engine.downloads == 1 and seen[-1] == 1.0


def test_a_cancelled_download_keeps_nothing() -> None:
    engine = FakeEngine(state="absent")
    model = local_model("/m.gguf", engine=engine)
    controller = AbortController()

    def progress(fraction: float) -> None:
        if fraction >= 0.5:
            controller.abort("cancel")

    with pytest.raises(AbortedError):
        run(model.prepare(progress, controller.signal))
    assert run(model.availability()) == "downloadable"


def test_stale_and_damaged_copies_are_offered_again_and_clear_removes_the_copy() -> None:
    for state in ("stale", "damaged"):
        engine = FakeEngine(state=state)
        assert run(local_model("/m.gguf", engine=engine).availability()) == "downloadable"
    engine = FakeEngine()
    model = local_model("/m.gguf", engine=engine)
    assert run(model.availability()) == "available"
    status = run(model.clear())
    assert status["state"] == "absent" and model.stored_bytes == 0
    assert run(model.availability()) == "downloadable"


def test_no_engine_is_unavailable_with_a_reason() -> None:
    model = local_model("/m.gguf")
    assert run(model.availability()) == "unavailable"
    with pytest.raises(SiteAgentError) as info:
        run(model.respond(request()))
    assert info.value.code == "model-unavailable"

    def broken(_options: Any) -> Any:
        raise EngineError("NotSupportedError", "no WebAssembly")

    assert run(local_model("/m.gguf", engine_factory=broken).availability()) == "unavailable"
    engine = FakeEngine(state="unsupported")
    assert run(local_model("/m.gguf", engine=engine).availability()) == "unavailable"


def test_the_factory_receives_the_options_once() -> None:
    made: list[Any] = []

    def factory(options: Any) -> FakeEngine:
        made.append(options)
        return FakeEngine()

    model = local_model("/m.gguf", sha256=SHA.upper(), size=123, engine_factory=factory)
    run(model.availability())
    run(model.availability())
    assert made == [{"url": "/m.gguf", "sha256": SHA, "size": 123, "contextTokens": 2048}]


def test_a_schema_llama_cpp_refuses_is_asked_again_with_object_arguments() -> None:
    engine = FakeEngine([call("add_to_cart", product="mug", quantity=2)])
    engine.refuse_grammar = engine.refuse_schema = True
    model = local_model("/m.gguf", engine=engine)
    assert run(model.respond(request())) == call("add_to_cart", product="mug", quantity=2)
    assert "argument schemas simplified to objects for the grammar" in model.last_cut
    sent = [
        r.get("grammar") or r["response_format"]["json_schema"]["schema"] for r in engine.requests
    ]
    named = SHOP_TOOLS[:1]  # the visitor's words name add_to_cart, at every level
    assert sent == [
        reply_grammar(reply_schema(named), said([user_message(FIRST)])),
        reply_schema(named),
        coarse_reply_schema(named),
    ]


def test_a_grammar_llama_cpp_refuses_is_asked_again_as_a_schema() -> None:
    engine = FakeEngine([call("add_to_cart", product="mug", quantity=2)])
    engine.refuse_grammar = True
    model = local_model("/m.gguf", engine=engine)
    assert run(model.respond(request())) == call("add_to_cart", product="mug", quantity=2)
    assert [sorted(set(r) & {"grammar", "response_format"}) for r in engine.requests] == [
        ["grammar"],
        ["response_format"],
    ]
    assert model.last_cut == []


def test_a_prompt_over_the_context_is_cut_and_asked_again() -> None:
    engine = FakeEngine([call("search_products", query="mug")])
    engine.context_chars = 1400
    model = local_model("/m.gguf", engine=engine)
    history = []
    for i in range(6):
        history += [
            user_message(f"question {i} " + "x" * 300),
            {"role": "assistant", "content": "ok " * 60},
        ]
    history.append(user_message("find a mug"))
    trims: list[Any] = []
    req = ModelRequest("You help.", history, SHOP_TOOLS, on_trim=trims.append)
    assert run(model.respond(req)) == call("search_products", query="mug")
    prompts = [r["messages"][1]["content"] for r in engine.requests]
    first, second = prompts[0], prompts[-1]
    assert 2 <= len(prompts) <= 3
    assert len(second) <= 1400 < len(first)
    assert "Visitor: find a mug" in second
    assert trims and trims[0].reason == "prompt-chars"


def test_the_built_in_rules_are_sent_short_and_the_sites_instructions_whole() -> None:
    from pysite_agent.core.instructions import build_instructions
    from pysite_agent.models.local import RULES

    engine = FakeEngine([call("search_products", query="mug")])
    full = build_instructions("You help visitors of Mugshot Supply Co.")
    run(
        local_model("/m.gguf", engine=engine).respond(
            ModelRequest(full, [user_message("a mug")], SHOP_TOOLS)
        )
    )
    system = engine.requests[0]["messages"][0]["content"]
    assert system.startswith(RULES)
    assert system.endswith("Instructions from this site:\nYou help visitors of Mugshot Supply Co.")
    assert len(system) < len(full) / 2


def test_the_history_budget_follows_the_context_window() -> None:
    small = LocalModel("/m.gguf", context_tokens=512, max_reply_tokens=128)
    big = LocalModel("/m.gguf", context_tokens=8192)
    assert small._budget("") == 1152  # (512 - 128) tokens x 3 characters
    assert big._budget("") == 3000  # max_prompt_chars caps it


def test_engine_errors_become_the_projects_errors() -> None:
    for name, code in (
        ("NetworkError", "model-error"),
        ("IntegrityError", "model-error"),
        ("QuotaExceededError", "model-error"),
        ("Mystery", "model-error"),
    ):

        async def fail(*_a: Any, name: str = name) -> Any:
            raise EngineError(name, "boom")

        engine = FakeEngine(state="absent")
        engine.download = fail  # type: ignore[method-assign]
        with pytest.raises(SiteAgentError) as info:
            run(local_model("/m.gguf", engine=engine).prepare())
        assert info.value.code == code
        assert "boom" in info.value.message


def test_a_reply_that_is_not_json_is_a_bad_reply() -> None:
    engine = FakeEngine()

    async def chat(_request: Any, _options: Any) -> Any:
        return {"text": '{"type": "tool", "name": "add_to', "usage": None}

    engine.chat = chat  # type: ignore[method-assign]
    with pytest.raises(SiteAgentError) as info:
        run(local_model("/m.gguf", engine=engine).respond(request()))
    assert info.value.code == "bad-reply"


@pytest.mark.parametrize("completion", [255, 256, 300, None])
def test_a_reply_cut_at_its_token_limit_says_so(completion: int | None) -> None:
    engine = FakeEngine()
    cut = '{"tool":"find_items","arguments":{"query":"rye rye rye rye'

    async def chat(_request: Any, _options: Any) -> Any:
        return {"text": cut, "usage": {"prompt_tokens": 90, "completion_tokens": completion}}

    engine.chat = chat  # type: ignore[method-assign]
    with pytest.raises(SiteAgentError) as info:
        run(local_model("/m.gguf", engine=engine, max_reply_tokens=256).respond(request()))
    assert info.value.code == "bad-reply" and cut[:40] in info.value.message
    limited = "reached its limit of 256 tokens (max_reply_tokens)" in info.value.message
    assert limited == (completion is not None and completion >= 256)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"url": ""}, "url"),
        ({"sha256": "abc"}, "sha256"),
        ({"size": 0}, "size"),
        ({"max_prompt_chars": 10}, "max_prompt_chars"),
        ({"context_tokens": 512, "max_reply_tokens": 600}, "max_reply_tokens"),
        ({"max_history": 0}, "max_history"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], match: str) -> None:
    url = kwargs.pop("url", "/m.gguf")
    with pytest.raises(ValueError, match=match):
        local_model(url, **kwargs)


# ---------------------------------------------------------------------------- with the agent


def test_the_gateway_still_asks_and_refuses_what_the_simplified_schema_let_through() -> None:
    cart: dict[str, int] = {}

    def add(args: dict[str, Any]) -> str:
        cart[args["product"]] = cart.get(args["product"], 0) + args["quantity"]
        return "added"

    schema = {
        "type": "object",
        "properties": {
            "product": {"type": "string", "pattern": "[a-z]+"},  # unanchored: not in the grammar
            "quantity": {"type": "integer", "minimum": 1},
        },
        "required": ["product", "quantity"],
    }
    tools = [sa.Tool("add_to_cart", "Add a product.", add, schema, {"readOnlyHint": False})]
    engine = FakeEngine(
        [
            call("add_to_cart", product="123", quantity=2),  # the grammar allows it; the tool not
            call("add_to_cart", product="mug", quantity=2),
            {"type": "answer", "text": "Added two mugs."},
        ]
    )
    asked: list[Any] = []

    async def confirm(req: Any) -> bool:
        asked.append(req.tool.name)
        return True

    model = local_model("/m.gguf", engine=engine)
    agent = sa.create_site_agent(model=model, tools=tools, confirm=confirm)
    events, result = run(ask(agent, "add two mugs to my cart, the 123 one"))
    assert result.status == "answered"
    assert cart == {"mug": 2}
    assert asked == ["add_to_cart"]  # once: the invalid call never reached the card
    refused = next(e.to_json() for e in events if e.type == "tool-result")
    assert refused["isError"] is True
    grammar = engine.requests[0]["grammar"]  # quantity: the numbers said, in range
    for quantity, allowed in ((2, True), (123, True), (1, True), (0, False), (3, False)):
        text = '{"tool":"add_to_cart","arguments":{"product":"mug","quantity":' + f"{quantity}}}}}"
        assert gbnf.allows(grammar, text) is allowed, quantity
    definitions = [{"name": "add_to_cart", "inputSchema": schema}]
    fallback = LocalModel.constraint(definitions, 1)["response_format"]["json_schema"]
    quantity = fallback["schema"]["anyOf"][1]["properties"]["arguments"]["properties"]["quantity"]
    assert quantity["minimum"] == 1  # integer ranges reach llama.cpp's converter


def test_the_second_step_shows_the_call_and_its_result() -> None:
    engine = FakeEngine([call("add_to_cart", product="Stoneware mug", quantity=1)])
    model = local_model("/m.gguf", engine=engine)
    messages = [
        user_message("find a mug and add it"),
        tool_call_message("c1", "search_products", {"query": "mug"}),
        tool_result_message("c1", "search_products", "Found: Stoneware mug (id mug)"),
    ]
    reply = run(model.respond(ModelRequest("", messages, SHOP_TOOLS)))
    # the search ran for this message: the reply may add what it found, not search again
    assert reply == call("add_to_cart", product="Stoneware mug", quantity=1)
    grammar = engine.requests[0]["grammar"]
    assert not gbnf.allows(grammar, '{"tool":"search_products","arguments":{"query":"mug"}}')
    sent = engine.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["user"]  # no empty system message
    assert "Result of search_products: Found: Stoneware mug" in sent[0]["content"]


def test_prompt_progress_becomes_thinking_events_with_progress() -> None:
    engine = FakeEngine([{"type": "answer", "text": "hi"}])
    engine.progress = [
        {"total": 320, "cache": 0, "processed": 64, "time_ms": 5000},
        {"total": 320, "cache": 0, "processed": 320, "time_ms": 25000},
        "not progress",
        {"total": 0, "cache": 0, "processed": 0},
        {"total": 320, "cache": float("nan"), "processed": 64},
    ]
    agent = sa.create_site_agent(model=local_model("/m.gguf", engine=engine), tools=[])
    events, result = run(ask(agent, "hello"))
    assert result.status == "answered"
    thinking = [e.to_json() for e in events if e.to_json()["type"] == "thinking"]
    assert thinking == [
        {"type": "thinking", "step": 1, "model": "local model"},
        {"type": "thinking", "step": 1, "model": "local model", "progress": 0.2},
        {"type": "thinking", "step": 1, "model": "local model", "progress": 1.0},
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"total": 100, "cache": 60, "processed": 80}, 0.5),  # cached tokens are not new work
        ({"total": 100, "cache": 100, "processed": 100}, 1.0),
        ({"total": 100, "cache": 0, "processed": 250}, 1.0),
        ({"total": 100, "cache": 0, "processed": -5}, 0.0),
        ({"total": 100, "cache": 120, "processed": 5}, None),
        ({"total": True, "cache": 0, "processed": 1}, None),
        ({"total": 100, "cache": 0}, None),
        ([1, 2, 3], None),
        (None, None),
    ],
)
def test_prompt_fraction(value: Any, expected: float | None) -> None:
    assert prompt_fraction(value) == expected


@settings(max_examples=80, deadline=None)
@given(
    value=st.one_of(
        hostile_value,
        st.fixed_dictionaries({"total": scalar, "cache": scalar, "processed": scalar}),
    )
)
def test_prompt_fraction_of_anything_is_none_or_a_fraction(value: Any) -> None:
    fraction = prompt_fraction(value)
    assert fraction is None or 0.0 <= fraction <= 1.0


# ---------------------------------------------------------------------------- warm


def test_warm_reads_the_fixed_prefix_once_and_a_step_starts_with_it_byte_for_byte() -> None:
    engine = FakeEngine(
        [
            call("add_to_cart", product="mug", quantity=2),
            call("add_to_cart", product="tote bag", quantity=1),
        ]
    )
    model = local_model("/models/m.gguf", sha256=SHA, engine=engine)
    assert run(model.warm("You help on a shop.", SHOP_TOOLS)) is True
    system, prefix = model.prefix("You help on a shop.", SHOP_TOOLS)
    parts = pieces(prefix)
    assert engine.loads == 1 and engine.warms == len(parts) > 1
    warm = [r["messages"] for r in engine.requests]
    assert warm[-1] == [{"role": "system", "content": system}, {"role": "user", "content": prefix}]
    assert [m[1]["content"] for m in warm] == parts  # growing pieces, the last one whole
    assert "- add_to_cart: Add a product to the cart." in prefix and REPLY_FORMAT in prefix
    assert prefix.endswith("\n") and "Visitor" not in prefix and "\u2063" not in prefix
    assert model.last_warm["promptTokens"] == 90 * len(parts)
    # the same prefix: nothing to do; the steps start with it, on this page and the next
    assert run(model.warm("You help on a shop.", SHOP_TOOLS)) is False
    run(model.respond(request()))
    run(model.respond(request("and a tote bag")))
    for sent in engine.requests[len(parts) :]:
        assert sent["messages"][0] == warm[-1][0]
        assert sent["messages"][1]["content"].startswith(prefix)
    assert engine.loads == 1 and engine.warms == len(parts)
    # another tool list (or other instructions): read again
    assert run(model.warm("You help on a shop.", SHOP_TOOLS[:1])) is True
    assert run(model.warm("Other words.", SHOP_TOOLS[:1])) is True


def test_a_step_asked_during_the_warm_up_waits_for_it_with_its_progress() -> None:
    engine = FakeEngine([{"type": "answer", "text": "Hello."}])
    engine.gate = asyncio.Event()
    model = local_model("/models/m.gguf", engine=engine)
    real_chat = engine.chat

    async def slow_chat(body: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
        if not {"response_format", "grammar"} & set(body):
            await engine.gate.wait() if engine.gate else None
        return await real_chat(body, options)

    engine.chat = slow_chat  # type: ignore[method-assign]
    agent = sa.create_site_agent(model=model, tools=[])

    async def main() -> tuple[list[Any], sa.RunResult]:
        warming = asyncio.ensure_future(model.warm("Be brief.", SHOP_TOOLS))
        await asyncio.sleep(0.01)
        asked = asyncio.ensure_future(ask(agent, "hello"))
        await asyncio.sleep(0.01)
        assert not asked.done() and engine.warms == 0  # the step waits for the warm-up
        assert engine.gate is not None
        engine.gate.set()
        await warming
        return await asked

    events, result = run(main())
    assert result.status == "answered"
    progress = [e.to_json().get("progress") for e in events if e.to_json()["type"] == "thinking"]
    parts = len(pieces(model.prefix("Be brief.", SHOP_TOOLS)[1]))
    assert progress == [None, *[round(n / parts, 3) for n in range(1, parts + 1)]]


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(hostile_text(300), st.text(alphabet="ab\n", max_size=60)))
def test_pieces_grow_to_the_whole_prefix_at_line_ends(text: str) -> None:
    parts = pieces(text)
    assert parts[-1] == text and 1 <= len(parts) <= 4
    for before, after in itertools.pairwise(parts):
        assert after.startswith(before) and len(after) > len(before)
        assert before.endswith("\n")


def test_warm_does_nothing_before_the_download_and_stops_on_abort() -> None:
    engine = FakeEngine([], state="absent")
    model = local_model("/models/m.gguf", engine=engine)
    assert run(model.warm("x", SHOP_TOOLS)) is False
    assert engine.loads == 0 and engine.requests == []
    engine.state = "cached"
    stop = AbortController()
    stop.abort("reset")
    with pytest.raises(AbortedError):
        run(model.warm("x", SHOP_TOOLS, stop.signal))
    assert engine.warms == 0


def test_the_panels_status_has_the_kept_model_read_its_prefix_and_a_tool_change_again() -> None:
    """The element's controller: ``status()`` (the panel opening, the download ending) starts
    the warm-up in the background; a ``toolchange`` starts it again for the new tool list."""
    from test_agent_visit import Bridge, shop_context

    from pysite_agent.browser.element import create_controller

    engine = FakeEngine([{"type": "answer", "text": "Hello."}])

    class LocalBridge(Bridge):
        def localEngine(self, options: Any) -> FakeEngine:  # the JS bridge's member name
            return engine

    async def main() -> None:
        controller = create_controller(LocalBridge())
        config = {"models": "local", "localModelUrl": "https://shop.example/m.gguf"}
        context = shop_context()
        status = json.loads(await controller.configure(json.dumps(config), {"tools": context}))
        assert status["ok"], status
        for _ in range(100):
            if engine.warms and not controller._warming:
                break
            await asyncio.sleep(0.01)
        first = engine.warms
        assert first > 0 and engine.loads == 1
        prefix = engine.requests[first - 1]["messages"][1]["content"]
        assert "- search_products: Search the shop's products by keyword." in prefix
        result = json.loads(await controller.run("hello", 1))
        assert result["ok"] and result["value"]["status"] == "answered"
        assert engine.requests[-1]["messages"][1]["content"].startswith(prefix)
        context.register("view_cart", lambda args: "empty", description="Show the cart.")
        for _ in range(100):
            if engine.warms > first and not controller._warming:
                break
            await asyncio.sleep(0.01)
        assert engine.warms > first
        assert "\n- view_cart" in engine.requests[-1]["messages"][1]["content"]
        controller.close()

    run(main())


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_the_engines_reply_with_nan_arguments_is_an_invalid_call_and_deep_text_a_bad_reply(
    constant: str,
) -> None:
    from pysite_agent.core.validation import check_arguments
    from pysite_agent.models.local import _parse

    reply = _parse('{"tool": "buy", "arguments": {"n": ' + constant + "}}")
    assert reply["name"] == "buy" and not check_arguments(None, reply["arguments"]).ok
    with pytest.raises(SiteAgentError) as caught:
        _parse('{"answer": ' + "[" * 10_000 + "]" * 10_000 + "}")
    assert caught.value.code == "bad-reply" and "nested deeper than" in str(caught.value)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@settings(max_examples=60, deadline=None)
@given(text=st.one_of(hostile_text(200), st.sampled_from(["add \ud800 mugs", "\udc00", "a\ud83d"])))
def test_every_text_sent_to_the_engine_is_well_formed(text: str) -> None:
    """A lone surrogate (a visitor's message, the site's instructions, a tool's description or
    result) reaches the engine as U+FFFD: wllama encodes the prompt as UTF-8 itself and a lone
    surrogate broke it ("Invalid typed array length"), for this step and every later one that
    still showed the message. The warm-up's prefix and the step's stay the same text."""
    engine = FakeEngine([{"type": "answer", "text": "Sure."}] * 2)
    model = local_model("/models/m.gguf", engine=engine)
    tools = [tool("add_to_cart", SHOP_TOOLS[0]["inputSchema"], "Add " + text)]
    instructions = "Shop " + text
    assert run(model.warm(instructions, tools)) is True
    messages = [
        user_message(text),
        tool_call_message("c1", "add_to_cart", {"product": text, "quantity": 1}),
        tool_result_message("c1", "add_to_cart", "Added " + text),
        user_message("and " + text),
    ]
    for step in (messages[:1], messages):
        reply = run(model.respond(ModelRequest(instructions, step, tools)))
        assert reply == {"type": "answer", "text": "Sure."}
    assert engine.warms >= 1 and len(engine.requests) > engine.warms
    for sent in engine.requests:
        for s in _strings(sent):
            s.encode("utf-8")  # raises on a lone surrogate
    if "\ud800" in text:
        prompt = engine.requests[-1]["messages"][-1]["content"]
        assert "\ufffd" in prompt
    warm_prefix = engine.requests[engine.warms - 1]["messages"][-1]["content"]
    assert engine.requests[-1]["messages"][-1]["content"].startswith(warm_prefix)


# ------------------------------------------------------------------ answers with no word in them
DENIED = [
    user_message(FIRST),
    tool_call_message("c1", "add_to_cart", {"product": "mug", "quantity": 2}),
    tool_result_message("c1", "add_to_cart", "The visitor did not allow this call.", denied=True),
]
FAILED = [*DENIED[:2], tool_result_message("c1", "add_to_cart", "out of stock", is_error=True)]
RAN = [*DENIED[:2], tool_result_message("c1", "add_to_cart", "2 mugs in the cart")]


@pytest.mark.parametrize("text", ["...", "", " \n", "…", "?!", "--", '"."', "\u200b", "\ud800"])
@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (DENIED, "OK, I did not do that."),
        (FAILED, "Sorry, that did not work."),
        (RAN, "2 mugs in the cart"),  # the page's own words
        ([*RAN[:2], {**RAN[2], "untrusted": True}], "Done."),  # never untrusted text
        ([*RAN[:2], {**RAN[2], "content": " ... "}], "Done."),
        ([*RAN[:2], {**RAN[2], "content": "x" * 700}], "x" * 599 + "…"),
        ([user_message("hello")], "Sorry, I have no answer to that."),
    ],
)
def test_an_answer_with_no_word_is_said_plainly_from_the_last_message(
    text: str, messages: list[dict[str, Any]], expected: str
) -> None:
    engine = FakeEngine([{"type": "answer", "text": text}])
    model = local_model("/m.gguf", engine=engine)
    reply = run(model.respond(ModelRequest(instructions="", messages=messages, tools=SHOP_TOOLS)))
    assert reply == {"type": "answer", "text": expected}


@pytest.mark.parametrize("text", ["Ok.", "8", "👍", "好的", "Ø", "€", "∞", "→", "+"])
def test_an_answer_with_a_word_a_number_or_a_symbol_is_kept(text: str) -> None:
    engine = FakeEngine([{"type": "answer", "text": text}])
    model = local_model("/m.gguf", engine=engine)
    reply = run(model.respond(ModelRequest(instructions="", messages=DENIED, tools=SHOP_TOOLS)))
    assert reply == {"type": "answer", "text": text}


def test_after_a_denial_the_visitor_reads_what_was_not_done() -> None:
    engine = FakeEngine(
        [call("add_to_cart", product="mug", quantity=2), {"type": "answer", "text": "..."}]
    )
    shop = Shop()
    agent = sa.create_site_agent(
        model=local_model("/m.gguf", engine=engine), tools=shop.tools(), confirm=lambda r: False
    )
    events, result = run(ask(agent, FIRST))
    assert shop.calls == []
    assert result.status == "answered"
    assert result.answer == "OK, I did not do that."
    assert [e.decision.allowed for e in events if e.type == "confirm-result"] == [False]
    assert [e.text for e in events if e.type == "answer"] == [result.answer]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"denied": "true", "isError": "true"}, "OK, I did not do that."),
        ({"denied": 1}, "OK, I did not do that."),
        ({"isError": "yes"}, "Sorry, that did not work."),
        ({"denied": 0, "isError": None}, "x"),
    ],
)
def test_the_plain_answer_reads_a_tool_message_as_the_prompt_does(
    flags: dict[str, Any], expected: str
) -> None:
    last = {"role": "tool", "toolCallId": "c1", "name": "add_to_cart", "content": "x", **flags}
    assert with_words({"type": "answer", "text": "..."}, [*DENIED[:2], last])["text"] == expected


@pytest.mark.parametrize("messages", [{}, {"a": 1}, "...", None, 7, iter([]), [None], [7]])
def test_the_plain_answer_of_any_conversation_is_said_without_raising(messages: Any) -> None:
    reply = with_words({"type": "answer", "text": ""}, messages)
    assert reply == {"type": "answer", "text": "Sorry, I have no answer to that."}


@settings(max_examples=150)
@given(st.one_of(hostile_text(), hostile_value), hostile_value)
def test_any_answer_and_any_conversation_give_an_answer_with_words(
    text: Any, messages: Any
) -> None:
    reply = with_words({"type": "answer", "text": text}, messages)
    assert reply["type"] == "answer" and isinstance(reply["text"], str)
    assert reply["text"] == text or reply["text"].strip()
