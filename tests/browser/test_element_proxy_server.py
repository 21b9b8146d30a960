"""The demo shop's ``proxy-url`` pointed at the real proxy server, end to end, in both lanes.

The page (one origin) posts protocol v1 to :func:`pysite_agent.server.create_proxy_app` under
uvicorn (another origin, so CORS is exercised for real), which translates to a provider's API
served by a stub upstream on loopback that always chooses ``add_to_cart``. The visitor confirms
in the card, and the cart on the page changes. Each provider's translation is used once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from element_support import RECORDER, Shop, start_site

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from stub_upstream import KEY, serve_tool_chooser

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    page.add_init_script(RECORDER)
    return Shop(page, site.url)


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_the_real_proxy_chooses_add_to_cart_and_the_visitor_confirms(
    shop: Shop, site: Any, provider: str
) -> None:
    with serve_tool_chooser(
        "add_to_cart",
        {"product": "mug", "quantity": 2},
        allowed_origins=[origin_of(site.url)],
        provider=provider,
        answer="Your mugs are in the cart.",
    ) as proxy_url:
        shop.open(f"?models=proxy&proxy-url={quote(proxy_url, safe='')}")
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        before = shop.cart_count()
        shop.ask("add two mugs to my cart")
        card = shop.card()
        assert card.locator("h3").inner_text() == "Allow Add to cart?"
        assert shop.cart_count() == before  # nothing runs before the visitor decides
        card.locator(".allow").click()
        shop.wait_cart(before + 2)
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "answered", outcome
        assert outcome["result"]["answer"] == "Your mugs are in the cart."
        models = [s["model"] for s in outcome["result"]["trace"]["steps"] if s["kind"] == "model"]
        assert models == [f"proxy ({proxy_url})"] * 2
        assert KEY not in shop.page.content()
        assert KEY not in str(outcome)


def test_a_page_from_another_origin_is_refused(shop: Shop, site: Any) -> None:
    with serve_tool_chooser(
        "add_to_cart",
        {"product": "mug", "quantity": 2},
        allowed_origins=["https://shop.example"],
    ) as proxy_url:
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        before = shop.cart_count()
        shop.ask("add two mugs to my cart")
        outcome = shop.last_ask()
        result = outcome.get("result") or {}
        assert result.get("status") == "error", outcome
        assert result["error"]["code"] in ("model-error", "model-unavailable")
        assert shop.cart_count() == before
