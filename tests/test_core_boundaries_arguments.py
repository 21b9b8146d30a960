"""The model's tool-call arguments over their whole range (a row of docs/boundaries.md):
NaN/Infinity, integers beyond 2^53, numbers as strings, nesting 10,000 deep, through
the argument check, the proxy adapter, Chrome's constrained reply and a whole run. Runs on
CPython and in Pyodide (tests/pyodide/test_core_suite.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from aio import run
from generators import (
    big_int,
    dismantle,
    hostile_value,
    nested_dict,
    nested_json_text,
    number_text,
    numbers_as_strings,
    odd_float,
)
from helpers import ScriptedModel, answer, tool_call
from hypothesis import given, settings
from hypothesis import strategies as st
from test_models_proxy import FakeFetch, Response, request

import pysite_agent as sa
from pysite_agent.core import validation
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.validation import MAX_SAFE_INTEGER, check_arguments, loads_strict
from pysite_agent.core.wire import load_reply_text, problems
from pysite_agent.models.chrome.stream import parse_constraint_reply
from pysite_agent.models.proxy import proxy

NON_JSON = ("NaN", "Infinity", "-Infinity")


def _put(value: Any, leaf: Any, where: int) -> Any:
    """``leaf`` placed in ``value``: as a member, inside a list, or deeper."""
    return [{"n": leaf}, {"n": {"m": [1, leaf]}}, {"list": [value, leaf]}][where % 3]


@settings(max_examples=60, deadline=None)
@given(
    odd_float.filter(lambda f: f != f or f in (float("inf"), float("-inf"))),
    hostile_value,
    st.integers(0, 2),
)
def test_non_finite_numbers_anywhere_in_arguments_are_refused(
    leaf: float, other: Any, where: int
) -> None:
    check = check_arguments(None, _put(other, leaf, where))
    assert not check.ok
    assert any("is not a JSON number" in p.message for p in check.problems)


@settings(deadline=None)  # the first call imports the validator
@given(st.sampled_from(NON_JSON), st.sampled_from(('{"n": %s}', '{"a": [1, {"b": %s}]}')))
def test_non_json_constants_in_argument_text_are_refused(constant: str, shape: str) -> None:
    check = check_arguments({"type": "object"}, shape % constant)
    assert not check.ok
    assert check.problems[0].message == (
        f"arguments are not JSON data: {constant} is not a JSON number (JSON has no NaN or "
        "Infinity)"
    )


@settings(deadline=None)  # the first call imports the validator
@given(number_text)
def test_number_text_is_read_strictly(text: str) -> None:
    if text in NON_JSON:
        with pytest.raises(validation.NotJsonData):
            loads_strict(text)
    else:
        loads_strict(text)  # 1e999 is JSON text (it reads as inf, refused by data_problems)


@settings(deadline=None)  # the first call imports the validator
@given(big_int)
def test_integers_beyond_2_53_never_reach_a_tool(number: int) -> None:
    check = check_arguments({"type": "object"}, {"id": number})
    assert not check.ok
    assert "beyond 2^53" in check.problems[0].message
    assert check.problems[0].path == "/id"


def test_the_safe_integer_edge() -> None:
    assert check_arguments(None, {"n": MAX_SAFE_INTEGER, "m": -MAX_SAFE_INTEGER}).ok
    assert not check_arguments(None, {"n": MAX_SAFE_INTEGER + 1}).ok
    assert not check_arguments(None, '{"n": 9007199254740993}').ok


@settings(deadline=None)  # the first call imports the validator
@given(numbers_as_strings)
def test_numbers_as_strings_stay_strings(text: str) -> None:
    as_string = {"type": "object", "properties": {"v": {"type": "string"}}}
    check = check_arguments(as_string, {"v": text})
    assert check.ok and check.arguments == {"v": text}
    assert type(check.arguments["v"]) is str
    as_number = {"type": "object", "properties": {"v": {"type": "number"}}}
    assert not check_arguments(as_number, {"v": text}).ok


def test_arguments_nested_10000_deep_are_an_invalid_call_not_a_recursion_error() -> None:
    text = nested_json_text(10_000)
    check = check_arguments({"type": "object"}, text)
    assert not check.ok
    assert "nested deeper than 32 levels" in check.problems[0].message
    deep = nested_dict(10_000)
    try:
        check = check_arguments({"type": "object"}, deep)
        assert not check.ok
        assert "nested deeper than 32 levels" in check.problems[0].message
    finally:
        dismantle(deep)


def test_nesting_up_to_the_bound_is_fine() -> None:
    ok = nested_dict(validation.MAX_ARGUMENT_DEPTH - 1)
    assert check_arguments({"type": "object"}, ok).ok
    assert check_arguments(None, nested_json_text(validation.MAX_ARGUMENT_DEPTH)).ok
    assert not check_arguments(None, nested_json_text(validation.MAX_ARGUMENT_DEPTH + 1)).ok
    # Brackets inside strings do not count.
    assert check_arguments(None, json.dumps({"s": "[" * 10_000})).ok


# --- through the adapters and a whole run ----------------------------------------------------


def _run_with(model: Any, tool: sa.Tool) -> tuple[sa.RunResult, sa.SiteAgent]:
    agent = sa.create_site_agent(model=model, tools=[tool])

    async def main() -> Any:
        return await agent.run("go").done

    return run(main()), agent


def _recording_tool(calls: list[Any]) -> sa.Tool:
    return sa.Tool(
        "set_amount",
        "Set an amount",
        lambda args: calls.append(args) or "set",
        {"type": "object", "properties": {"n": {"type": "number"}}},
        {"readOnlyHint": True},
    )


@pytest.mark.parametrize("constant", NON_JSON)
def test_a_scripted_string_with_nan_never_reaches_the_tool(constant: str) -> None:
    calls: list[Any] = []
    model = ScriptedModel([tool_call("set_amount", f'{{"n": {constant}}}'), answer("sorry")])
    result, _ = _run_with(model, _recording_tool(calls))
    assert calls == []
    assert result.status == "answered"
    told = model.requests[1].messages[-1]
    assert told["role"] == "tool" and told["isError"] is True
    assert f"{constant} is not a JSON number" in told["content"]


@pytest.mark.parametrize("constant", NON_JSON)
def test_the_proxy_adapter_turns_nan_arguments_into_an_invalid_call(constant: str) -> None:
    body = '{"type": "tool", "name": "set_amount", "arguments": {"n": ' + constant + "}}"
    fetch = FakeFetch(Response(200, body), Response(200, {"type": "answer", "text": "ok"}))
    calls: list[Any] = []
    result, _ = _run_with(proxy("/a", fetch=fetch), _recording_tool(calls))
    assert calls == []
    assert result.status == "answered"
    sent = json.loads(fetch.calls[1][1]["body"])
    assert f"{constant} is not a JSON number" in sent["messages"][-1]["content"]


def test_the_proxy_adapter_refuses_nan_outside_arguments_and_deep_bodies() -> None:
    body = '{"type": "tool", "name": "x", "arguments": {}, "meta": {"n": NaN}}'
    with pytest.raises(SiteAgentError) as caught:
        run(proxy("/a", fetch=FakeFetch(Response(200, body))).respond(request()))
    assert caught.value.code == "bad-reply"
    assert "NaN is not a JSON number" in str(caught.value)
    deep = '{"type": "tool", "name": "x", "arguments": ' + nested_json_text(10_000) + "}"
    with pytest.raises(SiteAgentError) as caught:
        run(proxy("/a", fetch=FakeFetch(Response(200, deep))).respond(request()))
    assert caught.value.code == "bad-reply"
    assert "nested deeper than 64 levels" in str(caught.value)


def test_chromes_constrained_reply_with_nan_is_an_invalid_call() -> None:
    reply = parse_constraint_reply(
        '{"type": "tool", "name": "set_amount", "arguments": {"n": NaN}}', model_name="Chrome"
    )
    assert reply["arguments"] == '{"n": NaN}'
    assert not check_arguments(None, reply["arguments"]).ok
    with pytest.raises(SiteAgentError, match="nested deeper"):
        parse_constraint_reply(nested_json_text(10_000), model_name="Chrome")


def test_load_reply_text_keeps_strict_json_as_it_is() -> None:
    text = '{"type": "tool", "name": "a", "arguments": {"n": 9007199254740993, "s": "NaN"}}'
    assert load_reply_text(text)["arguments"] == {"n": 9007199254740993, "s": "NaN"}
    with pytest.raises(validation.NotJsonData):
        load_reply_text('{"type": "answer", "text": NaN}')


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_an_empty_answer_is_no_answer_said_plainly(text: str) -> None:
    body = {"type": "answer", "text": text}
    with pytest.raises(SiteAgentError) as caught:
        run(proxy("/a", fetch=FakeFetch(Response(200, body))).respond(request()))
    assert caught.value.code == "model-error"
    assert "No answer came from the model: it returned an empty reply." in str(caught.value)
    with pytest.raises(SiteAgentError, match="No answer came from Chrome"):
        parse_constraint_reply(json.dumps(body), model_name="Chrome")


def test_chromes_native_call_nested_10000_deep_is_a_bad_reply_and_no_text_is_no_answer() -> None:
    from pysite_agent.models.chrome.native import NativeReply

    deep = nested_dict(10_000)
    try:
        reply = NativeReply()
        reply.take({"type": "tool-call", "value": {"name": "set_amount", "arguments": deep}})
        with pytest.raises(SiteAgentError, match="nested too deeply") as caught:
            reply.reply()
        assert caught.value.code == "bad-reply"
    finally:
        dismantle(deep)
    with pytest.raises(SiteAgentError, match="No answer came from Chrome's model"):
        NativeReply().reply()


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_custom_models_object_reply_with_nan_is_an_invalid_call_not_the_end(
    number: float,
) -> None:
    # A custom function (or a notebook model) replies with Python data, not text.
    replies = iter([{"type": "tool", "name": "set_amount", "arguments": {"n": number}}])
    sent: list[Any] = []

    def respond(request: Any) -> Any:
        sent.append(request.messages[-1])
        return next(replies, {"type": "answer", "text": "sorry"})

    calls: list[Any] = []
    result, _ = _run_with(sa.custom(respond, name="fn"), _recording_tool(calls))
    assert calls == [] and result.status == "answered"
    assert sent[-1]["isError"] is True and "is not a JSON number" in sent[-1]["content"]
    assert [s["error"]["code"] for s in result.trace["steps"] if s["kind"] == "invalid-call"] == [
        "invalid-arguments"
    ]
    assert problems("trace-v1", result.trace) == []
