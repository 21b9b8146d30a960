"""The site's own model's tool shortlist: the tools the visitor's words name (local_match).

Examples are written from the rule (module docstring of ``pysite_agent.models.local_match``),
and every text boundary (lone surrogates, bidi controls, huge strings) goes through it; the
eval sets in ``examples/`` check that each expected tool stays on the list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from generators import hostile_text, hostile_value, input_schema, very_long_text
from hypothesis import given, settings
from hypothesis import strategies as st

from pysite_agent.agent.evals import leaves, load_eval_set
from pysite_agent.core.wire import (
    answer_message,
    tool_call_message,
    tool_result_message,
    user_message,
)
from pysite_agent.models.local_match import shortlist, tool_scores, tool_stems
from pysite_agent.models.local_words import content_stems, stem, stems_match, words

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def tool(name: str, description: str = "", **props: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": props} if props else {"type": "object"}
    return {"name": name, "description": description, "inputSchema": schema}


SHOP = [
    tool("search_products", "Find products by words (name, colour).", query={"type": "string"}),
    tool("add_to_cart", "Add a product to the cart.", product={"type": "string"}),
    tool("get_reviews", "Read customer reviews of a product.", product={"type": "string"}),
    tool("checkout", "Place the order for everything in the cart."),
]


def names(text: str, tools: list[dict[str, Any]] = SHOP) -> tuple[list[str], str]:
    result = shortlist([user_message(text)], tools)
    return result.names, result.reason


def test_words_split_names_and_casefold() -> None:
    assert words("addToCart add_to-cart.NOW Größe") == [
        "add", "to", "cart", "add", "to", "cart", "now", "grösse",
    ]  # fmt: skip
    assert words("I'd like it’s") == ["i'd", "like", "it's"]
    assert stem("cakes") == "cake" and stem("berries") == "berry" and stem("glass") == "glass"
    assert stem("boxes") == "box" and stem("dishes") == "dish" and stem("glasses") == "glass"
    assert stems_match("open", "opening") and stems_match("check", "checkout")
    assert not stems_match("art", "article")  # too short to match as a start
    assert content_stems("Hello! Who are you? Thanks.") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Add two mugs to my cart", ["add_to_cart"]),
        ("What do people say? Show me the reviews.", ["get_reviews"]),
        ("I'm done, check out and place my order.", ["checkout"]),
        ("find something for my coffee", ["search_products"]),
    ],
)
def test_the_named_tool_is_on_the_list(text: str, expected: list[str]) -> None:
    assert names(text) == (expected, "matched")


def test_tools_named_about_equally_both_stay() -> None:
    # "add" names add_to_cart; "check out" names checkout: both stay, for the model
    kept, reason = names("Add one mug and then check out.")
    assert reason == "matched" and set(kept) == {"add_to_cart", "checkout"}
    # the page's order is kept
    assert kept == ["add_to_cart", "checkout"]


def test_a_tool_that_ran_for_this_message_gives_way_to_the_others_named() -> None:
    ask = user_message("Add one mug and then check out.")
    call = tool_call_message("c1", "add_to_cart", {"product": "mug"})
    ran = [ask, call, tool_result_message("c1", "add_to_cart", "Added.")]
    assert shortlist(ran, SHOP).names == ["checkout"]
    # a failed call can be tried again: it stays
    failed = [ask, call, tool_result_message("c1", "add_to_cart", "No stock.", is_error=True)]
    denied = [ask, call, tool_result_message("c1", "add_to_cart", "Denied.", denied=True)]
    assert shortlist(failed, SHOP).names == ["add_to_cart", "checkout"]
    # the only tool named ran: an answer (a small model would propose it again)
    alone = [user_message("add two mugs to my cart"), *ran[1:]]
    assert shortlist(alone, SHOP).names == []
    # denied: left out too
    assert shortlist([ask, call, denied[2]], SHOP).names == ["checkout"]
    no_match = [user_message("I'd like 3 sticker packs"), call, denied[2]]
    assert "add_to_cart" not in shortlist(no_match, SHOP).names
    # a new visitor message starts afresh
    assert shortlist([*ran, user_message("add one more mug")], SHOP).names == ["add_to_cart"]


def test_a_reply_to_the_models_question_is_read_with_the_request_it_answers() -> None:
    asked = [user_message("add mugs to my cart"), answer_message("How many mugs?")]
    for reply in ("3", "yes", "ok do it", "two please"):
        assert shortlist([*asked, user_message(reply)], SHOP).names == ["add_to_cart"], reply
    # without a question before it, it is a courtesy: an answer
    told = [user_message("add mugs to my cart"), answer_message("Added.")]
    assert shortlist([*told, user_message("thanks!")], SHOP).names == []


def test_a_word_every_tool_has_weighs_least() -> None:
    scores = tool_scores("product reviews", SHOP)
    assert scores["get_reviews"] > scores["search_products"] > 0


def test_no_named_tool_leaves_every_tool_and_no_content_asks_for_an_answer() -> None:
    assert names("I'd like 3 sticker packs") == ([t["name"] for t in SHOP], "no-match")
    for social in ("Hello! Who are you?", "Thanks, that is all.", "ok", "", "   ", "?!"):
        assert names(social) == ([], "no-content"), social
    # no visitor message at all: every tool
    assert shortlist([], SHOP).reason == "no-message"


def test_the_latest_visitor_message_decides_not_the_results() -> None:
    messages = [
        user_message("find mugs and add two"),
        tool_call_message("c1", "search_products", {"query": "mugs"}),
        tool_result_message("c1", "search_products", "Mugs. Read the reviews or check out."),
    ]
    assert shortlist(messages, SHOP).names == ["add_to_cart"]  # not reviews, not checkout


def test_enum_values_and_argument_words_count() -> None:
    hours = tool(
        "opening_hours",
        "When the shop is open.",
        day={"enum": ["monday", "sunday"], "title": "Day"},
    )
    order = tool("order", "Order items for pick-up.", items={"type": "array"})
    tools = [order, hours]
    assert names("Are you open on Sunday?", tools) == (["opening_hours"], "matched")
    assert "sunday" in tool_stems(hours) and "item" in tool_stems(order)


@pytest.mark.parametrize("name", ["demo-shop-evals.json", "bakery-evals.json"])
def test_every_example_case_keeps_its_expected_tool(name: str) -> None:
    eval_set = load_eval_set(json.loads((EXAMPLES / name).read_text()))
    for case in eval_set.cases:
        result = shortlist([dict(m) for m in case.messages], list(case.tools))
        expected = [call.name for call in leaves(case.expected)]
        if expected:
            assert expected[0] in result.names, (case.name, result)
        else:
            assert result.names == [], (case.name, result)


@settings(max_examples=200, deadline=None)
@given(
    text=hostile_text(60),
    tools=st.lists(
        st.fixed_dictionaries(
            {"name": hostile_text(12), "inputSchema": st.one_of(input_schema, hostile_value)},
            optional={"title": hostile_value, "description": hostile_value},
        ),
        max_size=5,
    ),
)
def test_any_text_and_any_tools_give_a_list_of_listed_names(text: str, tools: Any) -> None:
    result = shortlist([user_message(text)], tools)
    listed = [str(t.get("name", "")) for t in tools]
    assert set(result.names) <= set(listed)
    assert result.reason in ("matched", "no-match", "no-content")
    assert all(v >= 0 for v in result.scores.values())


def test_many_long_tools_are_scored_quickly() -> None:
    import time

    tools = [
        tool(f"tool_{i}", " ".join(f"word{i}x{j} thing{j}" for j in range(300))) for i in range(100)
    ]
    message = " ".join(f"thing{j} word{j}x{j}" for j in range(600))
    started = time.monotonic()
    result = shortlist([user_message(message)], tools)
    assert time.monotonic() - started < 5.0  # CPython takes well under a second
    assert result.reason == "matched" and result.names


def test_a_huge_message_and_odd_contents_are_read_quickly() -> None:
    text = very_long_text(2.0)
    assert names(text)[1] in ("no-match", "matched", "no-content")
    odd = [{"role": "user", "content": None}, {"role": "user", "content": ["x"]}]
    assert shortlist(odd, SHOP).reason == "no-content"
