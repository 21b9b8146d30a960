"""Declaring tools in Python: schemas from signatures, docstrings, validation, availability."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import jsonschema
import pytest
from aio import run
from helpers import ScriptedModel, ask, tool_call

import pysite_agent as sa
from pysite_agent.tools.declare import (
    ToolArgumentsError,
    ToolRefused,
    ToolRegistry,
    parse_docstring,
    schema_for,
    tool,
)


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


class Address(TypedDict):
    """Where to ship.

    Args:
        street: street and number.
    """

    street: str
    city: str
    zip: NotRequired[str]


@dataclasses.dataclass
class Line:
    product: str
    quantity: int = 1


def test_schema_from_signature_and_docstring() -> None:
    @tool(consequential=True, title="Place order")
    def place_order(
        lines: list[Line],
        ship_to: Address,
        size: Size,
        speed: Literal["standard", "express"] = "standard",
        note: Optional[str] = None,  # noqa: UP045 - both spellings are supported
        gift: bool | None = None,
        tags: set[str] | None = None,
        weight: Annotated[float, "Kilograms."] = 1.0,
    ) -> str:
        """Place the order.

        A second paragraph that is not the summary.

        Args:
            lines: what to order; each line is a product and
                a quantity.
            ship_to: the address.
            speed (str): how fast.
        """
        return "ok"

    schema = place_order.input_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    assert schema["required"] == ["lines", "ship_to", "size"]
    assert schema["additionalProperties"] is False
    assert props["lines"]["description"] == "what to order; each line is a product and a quantity."
    assert props["lines"]["items"] == {
        "type": "object",
        "properties": {
            "product": {"type": "string"},
            "quantity": {"type": "integer", "default": 1},
        },
        "required": ["product"],
        "additionalProperties": False,
    }
    assert props["ship_to"]["required"] == ["city", "street"]
    assert props["ship_to"]["properties"]["street"]["description"] == "street and number."
    assert props["size"] == {"enum": ["small", "large"], "type": "string"}
    assert props["speed"] == {
        "enum": ["standard", "express"],
        "type": "string",
        "default": "standard",
        "description": "how fast.",
    }
    assert props["note"] == {"type": ["string", "null"], "default": None}
    assert props["gift"] == {"type": ["boolean", "null"], "default": None}
    assert props["tags"]["anyOf"][0] == {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
    }
    assert props["weight"] == {"type": "number", "description": "Kilograms.", "default": 1.0}
    assert place_order.description == "Place the order."
    assert place_order.annotations == {
        "readOnlyHint": False,
        "untrustedContentHint": False,
        "consequentialHint": True,
    }
    assert place_order.tool.title == "Place order"
    assert place_order(lines=[], ship_to={}, size=Size.SMALL) == "ok"  # still the function


def test_validation_runs_before_the_function_and_builds_values() -> None:
    seen: list[Any] = []

    @tool
    def order(line: Line, size: Size, count: int = 1) -> str:
        """Order."""
        seen.append((line, size, count))
        return "done"

    assert run(order.execute({"line": {"product": "mug"}, "size": "large"})) == "done"
    assert seen == [(Line("mug", 1), Size.LARGE, 1)]
    for bad in [
        {"line": {}, "size": "large"},
        {"line": {"product": "m"}, "size": "huge"},
        {"line": {"product": "m"}, "size": "small", "count": True},
        "nope",
        None,
        {"line": {"product": "m"}, "size": "small", "extra": 1},
    ]:
        with pytest.raises(ToolArgumentsError):
            run(order.execute(bad))
    assert len(seen) == 1


def test_async_functions_and_the_signal() -> None:
    got: list[Any] = []

    @tool(read_only=True)
    async def slow(q: str, signal: sa.AbortSignal | None = None) -> str:
        """Slow."""
        got.append(signal)
        return q.upper()

    assert "signal" not in slow.input_schema["properties"]
    controller = sa.AbortController()
    assert run(slow.execute({"q": "hi"}, controller.signal)) == "HI"


def test_names_and_unsupported_signatures() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        tool(name="bad name")(lambda: None)
    with pytest.raises(ValueError, match=r"\*args"):

        @tool
        def variadic(*items: str) -> None:
            """V."""

    with pytest.raises(ValueError, match="no JSON Schema"):

        @tool
        def odd(x: complex) -> None:
            """O."""

    with pytest.raises(ValueError):
        schema_for(dict[int, str])
    explicit = tool(name="explicit", input_schema={"type": "object"})(lambda **kw: kw)
    assert explicit.input_schema == {"type": "object"}


def test_docstring_styles() -> None:
    summary, params = parse_docstring(
        """Find plans.

        :param feature: a feature.
        :param str billing: how billed.
        """
    )
    assert summary == "Find plans." and params == {
        "feature": "a feature.",
        "billing": "how billed.",
    }
    assert parse_docstring(None) == ("", {})


def test_availability_predicate_offers_and_refuses() -> None:
    state = {"open": True}
    registry = ToolRegistry()

    @registry.tool(available=lambda: True if state["open"] else "The shop is closed.")
    def buy(item: str) -> str:
        """Buy."""
        return f"bought {item}"

    @registry.tool(read_only=True)
    def look(item: str) -> str:
        """Look."""
        return item

    source = registry.source()
    assert [t.name for t in registry.tools()] == ["buy", "look"]
    state["open"] = False
    registry.refresh()
    assert [t.name for t in registry.tools()] == ["look"]
    assert [t.name for t in run(source.get_tools())] == ["look"]
    with pytest.raises(ToolRefused, match="closed"):
        run(buy.execute({"item": "x"}))
    with pytest.raises(ValueError, match="duplicate"):
        registry.add(buy)
    assert registry.remove("look") and not registry.remove("look")


def test_declared_tools_drive_the_agent_on_cpython() -> None:
    registry = ToolRegistry()
    cart: list[str] = []

    @registry.tool
    def add_to_cart(product: str, quantity: int = 1) -> str:
        """Add a product to the cart."""
        cart.extend([product] * quantity)
        return f"cart has {len(cart)}"

    model = ScriptedModel(
        [
            tool_call("add_to_cart", {"product": "mug", "quantity": "2"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": 2}),
            {"type": "answer", "text": "ok"},
        ]
    )
    agent = sa.create_site_agent(model=model, tools=registry.tools(), confirm=lambda r: True)
    events, result = run(ask(agent, "add two mugs"))
    assert cart == ["mug", "mug"]
    assert '"/quantity"' in model.requests[1].messages[-1]["content"]
    assert result.status == "answered"
