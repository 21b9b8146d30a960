"""The whole eval (loading, trajectory, verdict) agrees with webmcp-evals' rules.

A case set of our own uses every construct the public webmcp-evals examples use (an unordered
group with two calls of one tool, nested groups, optional calls, ``arguments`` empty, omitted
and ``null``, nested arrays, ``result`` as a text, a ``$pattern`` and an array of objects,
``mockOutput``, ``$pattern`` with an inline flag, ``$contains``, ``$type``, ranges, ``$any``,
``expectedCall: null`` and a history of earlier calls). Each case is run by a scripted model
with each behaviour: the expected calls; plus an extra key; a wrong tool; a wrong value; an
unordered group reordered; optional calls left out; a wrong result; one more call. The verdict
must be upstream's (GoogleChromeLabs/webmcp-tools, ``webmcp-evals/src/utils.ts``
``evaluateExecutionTrajectory`` and ``src/matcher.ts``): subset objects (an extra key passes),
strict arrays, any order inside ``unordered``, optional calls skipped cleanly, result
constraints, and an extra call fails.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aio import run

from pysite_agent.agent.evals import EvalSetError, load_eval_set, run_eval
from pysite_agent.core.types import ModelRequest


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool", "inputSchema": {"type": "object"}}


TOOL_NAMES = [
    "set_style",
    "set_size",
    "add_topping",
    "show_pizza",
    "search_location",
    "filter_results",
    "get_results",
    "book_table",
    "open_door",
    "dance",
    "hide",
    "peek",
    "go_back",
    "add_to_cart",
    "get_cart",
]


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "type": "message", "content": text}]


CASES: list[dict[str, Any]] = [
    {
        "name": "pizza",
        "messages": _user("a small pesto pizza with olives and onions"),
        "expectedCall": [
            {
                "unordered": [
                    {"functionName": "set_style", "arguments": {"style": "Pesto"}},
                    {"functionName": "set_size", "arguments": {"size": "Small"}},
                    {"functionName": "add_topping", "arguments": {"topping": "olive"}},
                    {"functionName": "add_topping", "arguments": {"topping": "onion"}},
                ]
            },
            {"functionName": "show_pizza", "arguments": None, "mockOutput": {"ready": True}},
        ],
    },
    {
        "name": "hotel",
        "messages": _user("hotels in Tokyo with a gym and breakfast under 200"),
        "expectedCall": [
            {
                "functionName": "search_location",
                "arguments": {"query": {"$pattern": "(?i)^tokyo$"}},
            },
            {
                "functionName": "filter_results",
                "arguments": {"amenities": ["gym", "breakfast"], "max_price": {"$lte": 200}},
            },
            {"functionName": "get_results", "arguments": {}, "optional": True},
        ],
    },
    {
        "name": "bistro",
        "messages": _user("a table for Bob Smith, two people, our anniversary"),
        "expectedCall": [
            {
                "functionName": "book_table",
                "arguments": {
                    "name": {"$pattern": "Bob.*Smith"},
                    "date": {"$type": "string"},
                    "guests": "2",
                    "requests": {"$contains": "anniversary"},
                },
                "result": {"$pattern": "Hello Bob Smith, .* at 18:30"},
            }
        ],
    },
    {
        "name": "bistro, structured result",
        "messages": _user("a table for Alice Wong"),
        "expectedCall": [
            {
                "functionName": "book_table",
                "arguments": {"name": "Alice Wong"},
                "result": [{"@type": "Message", "text": {"$pattern": "^Hello Alice"}}],
            }
        ],
    },
    {
        "name": "doors",
        "messages": _user("open the door, dance, hide and peek, then come back"),
        "expectedCall": [
            {"functionName": "open_door", "arguments": {}},
            {
                "unordered": [
                    {"functionName": "dance"},
                    {"ordered": [{"functionName": "hide"}, {"functionName": "peek"}]},
                ]
            },
            {"functionName": "go_back", "arguments": {}},
        ],
    },
    {
        "name": "cart after a look",
        "messages": [
            *_user("what is in my cart?"),
            {"role": "model", "type": "functioncall", "name": "get_cart", "arguments": {}},
            {"role": "user", "type": "functionresponse", "name": "get_cart", "response": {}},
            {"role": "model", "type": "message", "content": "Your cart is empty."},
            *_user("then add a mug, one or two"),
        ],
        "expectedCall": [
            {"functionName": "get_cart", "optional": True},
            {
                "functionName": "add_to_cart",
                "arguments": {"item": {"$any": True}, "quantity": {"$gt": 0, "$lte": 2}},
                "result": {"added": True},
            },
        ],
    },
    {"name": "greeting", "messages": _user("hello"), "expectedCall": None},
]

SET = {"tools": [_tool(n) for n in TOOL_NAMES], "cases": CASES}


def call(tool: str, result: Any = "ok", /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments, "result": result}


BOOKED = "Hello Bob Smith, we look forward to welcoming you on Friday at 18:30"
GOOD: dict[str, list[dict[str, Any]]] = {
    "pizza": [
        call("set_style", style="Pesto"),
        call("set_size", size="Small"),
        call("add_topping", topping="olive"),
        call("add_topping", topping="onion"),
        call("show_pizza"),
    ],
    "hotel": [
        call("search_location", query="Tokyo"),
        call("filter_results", amenities=["gym", "breakfast"], max_price=200),
        call("get_results"),
    ],
    "bistro": [
        call(
            "book_table",
            BOOKED,
            name="Bob Smith",
            date="2026-12-04",
            guests="2",
            requests="It is our anniversary",
        )
    ],
    "bistro, structured result": [
        call(
            "book_table",
            [{"@type": "Message", "text": "Hello Alice Wong, see you soon", "id": 3}],
            name="Alice Wong",
            phone="555",
        )
    ],
    "doors": [call("open_door"), call("dance"), call("hide"), call("peek"), call("go_back")],
    "cart after a look": [
        call("get_cart"),
        call("add_to_cart", {"added": True}, item="mug", quantity=2),
    ],
    "greeting": [],
}

# Per case: what each behaviour does to its good trajectory (None: not applicable).
WRONG_VALUE = {
    "pizza": (2, "topping", "pepper"),
    "hotel": (1, "amenities", ["breakfast", "gym"]),  # arrays are strict: order counts
    "bistro": (0, "guests", 2),  # a number is not the text "2"
    "bistro, structured result": (0, "name", "Alice"),
    "doors": None,  # no arguments are checked
    "cart after a look": (1, "quantity", 3),  # out of the range
    "greeting": None,
}
REORDERED = {
    "pizza": [3, 1, 2, 0, 4],
    "doors": [0, 2, 3, 1, 4],  # the ordered pair stays in order inside the unordered group
}
OPTIONAL_LEFT_OUT = {"hotel": [0, 1], "cart after a look": [1]}
WRONG_RESULT = {
    "pizza": None,
    "bistro": (0, "Sorry, we are fully booked."),
    "bistro, structured result": (0, [{"@type": "Message", "text": "Goodbye"}]),
    "cart after a look": (1, {"added": False}),
}


def behaviours(name: str) -> list[tuple[str, list[dict[str, Any]] | None, bool]]:
    good = GOOD[name]
    out: list[tuple[str, list[dict[str, Any]] | None, bool]] = [("the expected calls", good, True)]
    changed = copy.deepcopy(good)
    if changed:
        changed[-1]["arguments"]["gift_wrap"] = False
    out.append(("plus an extra key", changed if good else None, True))
    wrong_tool = copy.deepcopy(good)
    if wrong_tool:
        wrong_tool[-1]["name"] = "get_results" if good[-1]["name"] != "get_results" else "dance"
    out.append(("a wrong tool", wrong_tool if good else None, False))
    value = WRONG_VALUE[name]
    wrong_value = None
    if value is not None:
        wrong_value = copy.deepcopy(good)
        wrong_value[value[0]]["arguments"][value[1]] = value[2]
    out.append(("a wrong value", wrong_value, False))
    order = REORDERED.get(name)
    out.append(("unordered reordered", None if order is None else [good[i] for i in order], True))
    kept = OPTIONAL_LEFT_OUT.get(name)
    out.append(("optional left out", None if kept is None else [good[i] for i in kept], True))
    result = WRONG_RESULT.get(name)
    wrong_result = None
    if result is not None:
        wrong_result = copy.deepcopy(good)
        wrong_result[result[0]]["result"] = result[1]
    out.append(("a wrong result", wrong_result, False))
    more = [*good, good[0]] if good else [call("get_cart")]
    out.append(("one more call", more, False))
    return out


PLAN = [
    pytest.param(case["name"], label, calls, verdict, id=f"{case['name']}: {label}")
    for case in CASES
    for label, calls, verdict in behaviours(case["name"])
    if calls is not None
]


class Behaviour:
    """Makes the given calls in order (one per request), then answers."""

    name = "scripted"

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        self.requests.append(request)
        at = len(self.requests) - 1
        if at < len(self.calls):
            made = self.calls[at]
            return {"type": "tool", "name": made["name"], "arguments": made["arguments"]}
        return {"type": "answer", "text": "Done."}


def _run(name: str, calls: list[dict[str, Any]]) -> tuple[dict[str, Any], Behaviour]:
    eval_set = load_eval_set({**SET, "cases": [c for c in CASES if c["name"] == name]})
    model = Behaviour(calls)
    results = iter([c["result"] for c in calls])

    async def execute(tool: str, arguments: dict[str, Any]) -> Any:  # the page's tool ran
        return next(results)

    report = run(run_eval(eval_set, model, execute=execute, max_steps=10))
    return report.to_json()["cases"][0], model


@pytest.mark.parametrize(("name", "behaviour", "calls", "verdict"), PLAN)
def test_the_verdict_is_upstreams(
    name: str, behaviour: str, calls: list[dict[str, Any]], verdict: bool
) -> None:
    case, model = _run(name, calls)
    assert case["outcome"] == ("pass" if verdict else "fail"), (behaviour, case["trajectory"])
    assert [t["name"] for t in case["trajectory"] if t["type"] == "tool"] == [
        c["name"] for c in calls
    ]
    assert case["stopped"] == "answer" and len(model.requests) == len(calls) + 1


def test_every_behaviour_is_tried_on_some_case() -> None:
    tried = {label for case in CASES for label, calls, _ in behaviours(case["name"]) if calls}
    assert len(tried) == 8


def test_the_inner_order_of_a_nested_ordered_group_counts() -> None:
    good = GOOD["doors"]
    case, _ = _run("doors", [good[0], good[3], good[2], good[1], good[4]])  # peek before hide
    assert case["outcome"] == "fail"


def test_a_local_run_returns_mock_output_and_judges_results_against_it() -> None:
    # No page: show_pizza returns its mockOutput; every other call returns "ok".
    eval_set = load_eval_set({**SET, "cases": [CASES[0]]})
    model = Behaviour(GOOD["pizza"])
    (case,) = run(run_eval(eval_set, model)).to_json()["cases"]
    assert case["outcome"] == "pass"
    assert model.requests[-1].messages[-1]["content"] == '{"ready": true}'
    assert model.requests[1].messages[-1]["content"] == "ok"
    # mockOutput null is returned as null (only a missing mockOutput falls back).
    data = {
        **SET,
        "cases": [
            {
                **CASES[6],
                "name": "n",
                "expectedCall": [{"functionName": "get_cart", "mockOutput": None, "result": None}],
            }
        ],
    }
    model = Behaviour([call("get_cart")])
    (case,) = run(run_eval(data, model)).to_json()["cases"]
    assert case["outcome"] == "pass" and model.requests[1].messages[-1]["content"] == "null"
    # A result constraint is judged on what the call returned: here the recorded result.
    cart = {**CASES[5], "results": [], "expectedCall": CASES[5]["expectedCall"]}
    for recorded, verdict in [('{"added": true, "id": 1}', "pass"), ("failed", "fail")]:
        data = {**SET, "cases": [{**cart, "results": ["{}", recorded]}]}
        (case,) = run(run_eval(data, Behaviour(GOOD["cart after a look"]))).to_json()["cases"]
        assert case["outcome"] == verdict, recorded


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"expectedCalls": []}, "case 'greeting': cases[0]: unknown key 'expectedCalls'"),
        ({"expectedCall": [{"functionName": "dance", "optinal": True}]}, "unknown key 'optinal'"),
        ({"expectedCall": [{"unordered": [{"functionName": "dance"}], "x": 1}]}, "'x'"),
        (
            {"expectedCall": [{"functionName": "dance", "arguments": {"a": {"$regex": "x"}}}]},
            "'$regex'",
        ),
    ],
)
def test_unknown_keys_name_the_case_and_the_key(change: dict[str, Any], words: str) -> None:
    with pytest.raises(EvalSetError) as info:
        load_eval_set({**SET, "cases": [{**CASES[-1], **change}]})
    assert words in str(info.value) and "'greeting'" in str(info.value)


def test_a_case_without_messages_or_expected_call_is_refused() -> None:
    with pytest.raises(EvalSetError, match="needs 'messages'"):
        load_eval_set({**SET, "cases": [{"name": "x", "expectedCall": None}]})
    with pytest.raises(EvalSetError, match="needs 'expectedCall'"):
        load_eval_set({**SET, "cases": [{"name": "x", "messages": _user("hi")}]})
