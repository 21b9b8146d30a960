"""Grounded arguments: the site's own model writes values the visitor or a result gave.

The grammar (``models/local_grammar.py``, with :func:`said`) is read by ``tests/gbnf.py``, as
llama.cpp reads it; ``tests/browser/test_local_model.py`` has the real engine read grounded
grammars too. Every text boundary (lone surrogates, bidi controls, quotes and backslashes,
controls, astral characters, megabytes) goes through the spans and the grammar.
"""

from __future__ import annotations

import json
from typing import Any

import gbnf
import pytest
from generators import hostile_text, very_long_text
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pysite_agent.core.wire import tool_call_message, tool_result_message, user_message
from pysite_agent.models.local import LocalModel
from pysite_agent.models.local_grammar import compact_json, reply_grammar
from pysite_agent.models.local_grounding import (
    MAX_ITEMS,
    MAX_SPAN_CHARS,
    MAX_SPAN_WORDS,
    MAX_SPANS,
    said,
)
from pysite_agent.models.local_schema import read_reply, reply_schema


def add_tool(**product: Any) -> dict[str, Any]:
    return {
        "name": "add_to_cart",
        "inputSchema": {
            "type": "object",
            "properties": {
                "product": {"type": "string", **product},
                "quantity": {"type": "integer", "minimum": 1, "maximum": 20},
            },
            "required": ["product", "quantity"],
        },
    }


def call(product: Any, quantity: Any = 2) -> str:
    args = {"product": product, "quantity": quantity}
    return '{"tool":"add_to_cart","arguments":' + compact_json(args) + "}"


def grammar(text: str, tool: dict[str, Any] | None = None) -> str:
    return reply_grammar(reply_schema([tool or add_tool()]), said([user_message(text)]))


def test_spans_are_the_visitors_words_without_stop_words_at_their_edges() -> None:
    heard = said([user_message("Put one linen tote bag in the cart, please. And a mug!")])
    for span in ("linen tote bag", "tote bag", "linen", "cart", "mug", "tote bags"[:-1]):
        assert span in heard.spans, span
    for not_a_span in ("in the cart", "the cart", "bag in", "cart, please", "please", "And a mug"):
        assert not_a_span not in heard.spans, not_a_span
    assert "cart And" not in " ".join(heard.spans)  # never across a sentence's end
    assert all(len(s.split()) <= MAX_SPAN_WORDS for s in heard.spans)


def test_dictated_text_is_offered_whole() -> None:
    heard = said([user_message("Send us a note: the mug arrived broken and the handle fell off")])
    assert "the mug arrived broken and the handle fell off" in heard.spans
    heard = said([user_message('Write "Great mug, would buy again!" as my review')])
    assert "Great mug, would buy again" in heard.spans
    # a line ends a span; invisible format characters are not part of one
    heard = said([user_message("red mug\nblue bag \u202emugs\u202c")])
    assert "mug blue" not in " | ".join(heard.spans) and "mugs" in heard.spans


def test_mixed_enums_stay_whole() -> None:
    tool = {
        "name": "level",
        "inputSchema": {
            "type": "object",
            "properties": {"to": {"enum": [1, 2, "auto", None]}},
            "required": ["to"],
        },
    }
    g = grammar("set the level to 2, not auto", tool)
    for value in ("1", "2", '"auto"', "null"):
        assert gbnf.allows(g, '{"tool":"level","arguments":{"to":' + value + "}}"), value


def test_plural_words_also_come_singular() -> None:
    heard = said([user_message("two mugs, three berries, four boxes and some glass")])
    assert {"mugs", "mug", "berries", "berry", "boxes", "box", "glass"} <= set(heard.spans)
    assert "glas" not in heard.spans


def test_numbers_are_digits_and_english_number_words() -> None:
    heard = said([user_message("Two mugs, a dozen eggs, 3 bags and 2.50 each, minus −4. A cup.")])
    assert {2, 12, 3, 2.5, 1, -4} == set(heard.numbers)
    for text, numbers in (
        ("1,000 mugs", (1000,)),
        ("twenty-two, two hundred and fifty", (22, 250)),
        ("a thousand or two dozen", (1000, 24)),
        ("2x mugs, 5kg, 1.5k", (2, 5, 1.5)),
        ("マグカップを2つ", (2,)),  # a digit between letters of another script
        ("two three-packs", (2, 3)),
    ):
        assert said([user_message(text)]).numbers == numbers, text
    assert said([user_message("x1 v2.0.1 a1b")]).numbers == ()  # not numbers standing alone


def test_a_free_string_is_a_span_and_nothing_else() -> None:
    g = grammar("Add two mugs to my cart")
    assert gbnf.allows(g, call("mugs")) and gbnf.allows(g, call("mug"))
    for invented in ("<product name>", "add_to_cart", "Milk", "", "mugs mugs"):
        assert not gbnf.allows(g, call(invented)), invented


def test_a_span_that_starts_with_the_tools_own_verb_is_not_its_value() -> None:
    heard = said([user_message("add one tote bag")])
    assert "add one tote bag" in heard.spans  # said, and offered to other tools
    assert heard.for_tool("add_to_cart").spans_for({}) == ["tote", "tote bag", "bag"]
    g = grammar("add one tote bag")
    assert gbnf.allows(g, call("tote bag", 1)) and not gbnf.allows(g, call("add one tote bag", 1))
    search = {
        "name": "searchProducts",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    g = grammar("search red mugs, add one tote bag", search)
    query = '{"tool":"searchProducts","arguments":{"query":"%s"}}'
    assert gbnf.allows(g, query % "red mugs") and gbnf.allows(g, query % "add one tote bag")
    assert not gbnf.allows(g, query % "search red mugs")


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("book_room", "Please book Room 101 for Friday", "Room 101"),  # a later word of the name
        ("order_pizza", "order the Pizza Margherita", "Pizza Margherita"),
        (
            "add_comment",
            'Add a comment: "Add more vegan options please"',
            "Add more vegan options please",
        ),
        ("send_email", "Send an email: Send me the invoice please", "Send me the invoice please"),
        ("add_to_cart", "Cart", "Cart"),  # every span starts with it: they all stay
    ],
)
def test_the_tools_later_words_dictated_text_and_a_lone_span_stay_values(
    name: str, text: str, value: str
) -> None:
    tool = {
        "name": name,
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    g = grammar(text, tool)
    written = json.dumps({"tool": name, "arguments": {"text": value}}, separators=(",", ":"))
    assert gbnf.allows(g, written)


def test_when_no_span_without_the_verb_fits_the_argument_the_others_are_offered() -> None:
    heard = said([user_message("add a pen")]).for_tool("add_to_cart")
    assert heard.spans_for({}) == ["pen"]
    assert heard.spans_for({"minLength": 4}) == ["add a pen"]  # never "any string" instead
    g = reply_grammar(reply_schema([add_tool(minLength=4)]), said([user_message("add a pen")]))
    assert gbnf.allows(g, call("add a pen", 1))
    assert not gbnf.allows(g, call("<product name>", 1))


def test_a_name_without_a_verb_filters_nothing() -> None:
    heard = said([user_message("add mugs")])
    for name in (None, "", "to_the", 7, "\ud800"):
        assert heard.for_tool(name).spans_for({}) == list(heard.spans), name
    assert heard.for_tool("add_to_cart").for_tool(None) == heard


def test_an_integer_is_a_number_said_within_the_range() -> None:
    g = grammar("Add two mugs, or 40, or 0")
    assert gbnf.allows(g, call("mugs", 2))
    for out in (40, 0, 1, 3):  # out of range, not said ("a"/"an" say 1)
        assert not gbnf.allows(g, call("mugs", out)), out
    g = grammar("Add a mug")
    assert gbnf.allows(g, call("mug", 1))
    # nothing said in range: any integer, as without grounding
    g = grammar("Add 40 mugs")
    assert gbnf.allows(g, call("mugs", 7))


def test_the_default_is_offered_when_no_number_said_fits() -> None:
    tool = add_tool()
    tool["inputSchema"]["properties"]["quantity"]["default"] = 1
    g = grammar("Add three mugs", tool)
    assert gbnf.allows(g, call("mugs", 3)) and not gbnf.allows(g, call("mugs", 1))
    g = grammar("Add some mugs", tool)
    assert gbnf.allows(g, call("mugs", 1)) and not gbnf.allows(g, call("mugs", 3))


def test_a_string_enum_keeps_the_values_said() -> None:
    tool = {
        "name": "hours",
        "inputSchema": {
            "type": "object",
            "properties": {"day": {"enum": ["monday", "Sunday", "New Year"]}},
            "required": ["day"],
        },
    }
    text = '{"tool":"hours","arguments":{"day":%s}}'
    g = grammar("Are you open on SUNDAY?", tool)
    assert gbnf.allows(g, text % '"Sunday"') and not gbnf.allows(g, text % '"monday"')
    g = grammar("and on new year?", tool)
    assert gbnf.allows(g, text % '"New Year"') and not gbnf.allows(g, text % '"Sunday"')
    g = grammar("when are you open?", tool)  # none named: all of them
    assert gbnf.allows(g, text % '"monday"') and gbnf.allows(g, text % '"Sunday"')


def test_formats_patterns_and_lengths_are_respected() -> None:
    g = grammar("Add two mugs", add_tool(pattern="^[a-z]+$"))
    assert gbnf.allows(g, call("anything at all"))  # not grounded: the gateway checks it
    # a format the grammar does not write is a free-text string: grounded
    g = grammar("Send it to ana@example.com please", add_tool(format="email"))
    assert gbnf.allows(g, call("ana@example.com")) and not gbnf.allows(g, call("a@b.c"))
    g = grammar("Add two linen tote bags", add_tool(maxLength=4))
    assert gbnf.allows(g, call("bags")) and not gbnf.allows(g, call("linen tote bags"))
    g = grammar("Add two linen tote bags", add_tool(minLength=99))  # no span fits: free
    assert gbnf.allows(g, call("x" * 120))


def test_the_answer_is_never_grounded() -> None:
    g = grammar("Add two mugs")
    assert gbnf.allows(g, '{"answer":"Sorry, I cannot do that."}')


def test_results_are_a_source_the_instructions_and_denied_calls_are_not() -> None:
    messages = [
        user_message("Do you sell T-shirts?"),
        tool_call_message("c1", "search_products", {"query": "t-shirt"}),
        tool_result_message("c1", "search_products", "Cotton T-shirt (id tshirt): $22.00"),
        user_message("Great, add two of them."),
    ]
    heard = said(messages)
    assert {"Cotton T-shirt", "tshirt", "T-shirts", "T-shirt"} <= set(heard.spans)
    assert heard.spans[0] == "add"  # the latest message first
    denied = tool_result_message("c2", "x", "Secret words", denied=True)
    assert "Secret words" not in said([*messages, denied]).spans


def test_a_list_is_bounded_and_its_min_items_written() -> None:
    tool = {
        "name": "order",
        "inputSchema": {
            "type": "object",
            "properties": {
                "items": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            },
            "required": ["items"],
        },
    }

    def order(items: list[str]) -> str:
        return '{"tool":"order","arguments":{"items":' + compact_json(items) + "}}"

    g = grammar("Order rye", tool)
    assert not gbnf.allows(g, order([]))
    assert gbnf.allows(g, order(["rye"] * MAX_ITEMS))
    assert not gbnf.allows(g, order(["rye"] * (MAX_ITEMS + 1)))
    # without grounding, the schema's own bounds only
    free = reply_grammar(reply_schema([tool]))
    assert not gbnf.allows(free, order([])) and gbnf.allows(free, order(["x"] * 30))


def test_with_grounding_off_the_grammar_is_the_schemas() -> None:
    messages = [user_message("add two mugs")]
    on = LocalModel.constraint([add_tool()], 0, messages)["grammar"]
    off = LocalModel.constraint(
        [add_tool()], 0, messages, match_tools=False, ground_arguments=False
    )["grammar"]
    assert off == reply_grammar(reply_schema([add_tool()]))
    assert gbnf.allows(off, call("Milk", 7)) and not gbnf.allows(on, call("Milk", 7))


def test_spans_are_capped_and_a_huge_text_is_read() -> None:
    words = " ".join(f"w{i}" for i in range(5000))
    heard = said([user_message(words), user_message(very_long_text(1.0))])
    assert len(heard.spans) <= MAX_SPANS
    assert sum(len(s) for s in heard.spans) <= MAX_SPAN_CHARS
    long_words = said([user_message(" ".join("ж" * 190 + str(i) for i in range(400)))])
    assert sum(len(s) for s in long_words.spans) <= MAX_SPAN_CHARS
    g = reply_grammar(reply_schema([add_tool()]), heard)
    gbnf.parse(g)


@settings(max_examples=200, deadline=None)
@given(text=hostile_text(80), pick=st.integers(min_value=0))
@example(text='say "hi" \\ \ud800 back\u202e ⟦x⟧ 😀 ok', pick=0)
@example(text="\x00\x1f tab\there \n new line", pick=3)
def test_every_span_of_any_text_can_be_written_and_the_grammar_is_ascii(
    text: str, pick: int
) -> None:
    heard = said([user_message(text)])
    g = reply_grammar(reply_schema([add_tool()]), heard)
    assert g.isascii()
    gbnf.parse(g)
    offered = heard.for_tool("add_to_cart").spans_for({})
    assert set(offered) <= set(heard.spans) and bool(offered) == bool(heard.spans)
    if offered:
        span = offered[pick % len(offered)]
        numbers = heard.numbers_for({"minimum": 1, "maximum": 20}, "integer")
        written = call(span, numbers[0] if numbers else 7)  # none in range: any integer
        assert gbnf.allows(g, written), (span, g)
        assert json.loads(written)["arguments"]["product"] == json.loads(compact_json(span))


def test_a_cut_answer_is_kept_a_cut_call_is_refused() -> None:
    assert read_reply('{"answer":"I can help with mugs, mugs, mu', 256) == {
        "type": "answer",
        "text": "I can help with mugs, mugs, mu…",
    }
    assert read_reply('{"answer":"ok"', 256) == {"type": "answer", "text": "ok"}  # whole
    with pytest.raises(Exception, match="reached its limit of 256 tokens"):
        read_reply('{"tool":"add_to_cart","arguments":{"product":"mu', 256)
    with pytest.raises(Exception, match="not JSON data"):
        read_reply('{"answer":"I can', None)  # not cut by the limit: a bad reply


def test_dates_times_and_ids_have_their_shape_and_the_ones_said_are_offered() -> None:
    tool = {
        "name": "book",
        "inputSchema": {
            "type": "object",
            "properties": {
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
                "ref": {"type": "string", "format": "uuid"},
            },
            "required": ["day", "at", "ref"],
        },
    }
    ref = "123e4567-e89b-12d3-a456-426614174000"

    def book(day: str, at: str, uuid: str = ref) -> str:
        args = {"day": day, "at": at, "ref": uuid}
        return '{"tool":"book","arguments":' + compact_json(args) + "}"

    free = reply_grammar(reply_schema([tool]))  # the shape, without grounding too
    assert gbnf.allows(free, book("2025-07-14", "2025-07-14T10:00:00.5+02:00"))
    assert gbnf.allows(free, book("2025-02-31", "2025-07-14 10:00"))  # looser than a calendar
    for bad in (book("two_night", "2025-07-14T10:00"), book("2025-13-01", "2025-07-14T10:00")):
        assert not gbnf.allows(free, bad)
    assert not gbnf.allows(free, book("2025-07-14", "2025-07-14T10:00", "not-an-id"))
    said_it = grammar(f"Book 2025-07-14, at 2025-07-14T18:30Z, ref {ref}.", tool)
    assert gbnf.allows(said_it, book("2025-07-14", "2025-07-14T18:30Z"))
    assert not gbnf.allows(said_it, book("2025-07-15", "2025-07-14T18:30Z"))
    unsaid = grammar("Book it for next Friday evening", tool)  # no date said: any date
    assert gbnf.allows(unsaid, book("2025-07-18", "2025-07-18T19:00"))


@settings(max_examples=100)
@given(hostile_text(), hostile_text())
def test_any_tool_name_keeps_the_grammar_readable_and_offers_what_it_lists(
    name: str, text: str
) -> None:
    tool = {
        "name": name,
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    heard = said([user_message(text)])
    g = reply_grammar(reply_schema([tool]), heard)
    assert g.isascii()
    gbnf.parse(g)
    offered = heard.for_tool(name).spans_for({})
    assert set(offered) <= set(heard.spans) and bool(offered) == bool(heard.spans)
    if offered and name:
        written = '{"tool":' + compact_json(name) + ',"arguments":{"q":' + compact_json(offered[0])
        assert gbnf.allows(g, written + "}}")
