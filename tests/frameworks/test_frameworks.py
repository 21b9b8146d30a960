"""Framework apps with ``<site-agent>``: React 19 (StrictMode), Vue 3, Preact, Lit 3, Svelte 5.

Each app (``tests/frameworks/apps``, built once per session by ``build.mjs`` from the pinned npm
packages) is the same bakery: tools registered per route component in the framework's own life
cycle (effects with cleanup, ``onMounted``/``onUnmounted``, ``$effect``, ``connectedCallback``),
routes switched with ``history.pushState``, ``<site-agent>`` given ``options`` as a property and
re-rendered into another place (``#move``). In headless Chromium, shim and native lanes, with
the demo rules as the model; one page boot per app and lane. docs/frameworks.md has a recipe per
framework, each backed by these tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from bakery_support import EL, PROBES, Bakery

pytestmark = pytest.mark.browser

FRAMEWORKS = ["react", "vue", "preact", "lit", "svelte"]
CATALOG = {"add_to_cart", "open_page", "search_cakes", "bake_special"}
ORDERS = {"add_to_cart", "open_page", "list_orders", "cancel_order"}


@pytest.fixture(scope="module", params=FRAMEWORKS)
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def booted(page: Any, bakery_site: Any, framework: str) -> Iterator[Bakery]:
    page.add_init_script(PROBES)
    yield Bakery(page, bakery_site.url, framework).open()


@pytest.fixture
def bakery(booted: Bakery) -> Bakery:
    booted.reset()
    return booted


def test_each_route_registers_its_tools_and_its_cleanup_removes_them(
    bakery: Bakery, framework: str, lane: str
) -> None:
    assert set(bakery.tool_names()) == CATALOG
    bakery.goto("orders")
    bakery.wait_tools(ORDERS)
    assert bakery.page.evaluate("location.pathname") == f"/{framework}/orders"
    bakery.page.go_back()  # popstate: the router follows
    bakery.wait_tools(CATALOG)
    found = bakery.probes()
    assert found["registrationErrors"] == []  # no duplicate name, even under StrictMode
    if framework == "react":  # StrictMode: mounted, cleaned up, mounted again
        assert found["registrations"]["open_page"] == 2
    else:
        assert found["registrations"]["open_page"] == 1
    el = bakery.page.evaluate(
        f"({{ options: {EL}.options, attribute: {EL}.getAttribute('options'), "
        f"models: {EL}.getAttribute('models') }})"
    )
    # `options` arrived as a property (not an "[object Object]" attribute).
    assert el == {
        "options": {"instructions": "You help visitors of the bakery."},
        "attribute": None,
        "models": "demo",
    }


def test_a_conversation_across_routes_keeps_the_allow(bakery: Bakery, lane: str) -> None:
    first = bakery.ask_and_wait("find chocolate cakes")
    assert first["status"] == "answered"
    assert "chocolate cake: $20" in first["answer"]
    second = bakery.ask_and_wait("open the orders page")
    assert second["status"] == "answered"
    bakery.page.wait_for_selector("main[data-route=orders]")
    bakery.wait_tools(ORDERS)
    bakery.ask("cancel order 7")
    card = bakery.card()
    card.locator(".allow").click()
    outcome = bakery.last_ask()
    assert outcome["result"]["status"] == "answered", outcome
    bakery.page.wait_for_selector("#orders li[data-status=cancelled]")
    calls = [(e["call"]["name"], e["text"]) for e in bakery.events("tool-result")]
    assert calls == [
        ("search_cakes", "chocolate cake: $20"),
        ("open_page", "The orders page is open."),
        ("cancel_order", "Order 7 is cancelled."),  # the Allow was not lost as stale-tools
    ]
    assert "chocolate cake" in bakery.log_text()  # the whole conversation is still shown


def test_a_remount_keeps_one_python_one_listener_and_the_conversation(
    bakery: Bakery, lane: str
) -> None:
    answer = bakery.ask_and_wait("find carrot cakes")
    assert "carrot cake: $15" in answer["answer"]
    before = bakery.probes()
    assert (before["workers"], before["elements"]) == (1, 1)
    bakery.page.click("#move")  # the framework renders a new <site-agent> in #foot
    bakery.page.wait_for_selector("#foot site-agent", state="attached")
    bakery.page.wait_for_function(f"{EL}.state === 'ready' || {EL}.state === 'idle'")
    # The conversation is still shown (the new element restores it from the stored record).
    bakery.page.wait_for_function(
        f"{EL}.shadowRoot.querySelector('.log')?.innerText.includes('carrot cake')"
    )
    second = bakery.ask_and_wait("open the orders page")
    assert second["status"] == "answered", second
    bakery.wait_tools(ORDERS)
    after = bakery.probes()
    assert after["workers"] == 1, after  # no second Python
    assert after["elements"] == 1
    # The old element's agent lets go of its listener when it is torn down, 2 s
    # (TEARDOWN_MS, web/element/element.js) after it left the document: one listener again.
    bakery.page.wait_for_function(
        "(n) => window.__toolchangeListeners.size === n",
        arg=before["toolchangeListeners"],
        timeout=5_000,
    )
    bakery.page.click("#move")  # and back, for the next test
    bakery.page.wait_for_selector("#side site-agent", state="attached")


def test_a_card_whose_tool_stays_survives_a_route_change(
    bakery: Bakery, framework: str, lane: str
) -> None:
    # The decision is bound to add_to_cart's registration and content, not to the route's tools.
    bakery.ask("add a lemon tart to my cart")
    card = bakery.card()
    bakery.goto("orders")  # add_to_cart belongs to the app: still registered, unchanged
    bakery.wait_tools(ORDERS)
    assert card.is_visible(), bakery.log_text()
    card.locator(".allow").click()
    outcome = bakery.last_ask()
    assert outcome["result"]["status"] == "answered", outcome
    [result] = bakery.events("tool-result")
    assert (result["call"]["name"], result["isError"]) == ("add_to_cart", False), result
    bakery.page.wait_for_selector("#cart:text('Cart: 1')", timeout=3000)
    # The route change is in the trace, as a page step recorded while the card waited.
    steps = outcome["result"]["trace"]["steps"]
    paths = [s["path"] for s in steps if s["kind"] == "page"]
    assert paths == [f"/{framework}/", f"/{framework}/orders"], paths
    kinds = [s["kind"] for s in steps]
    assert kinds.index("tool-call") < kinds.index("page", 2) < kinds.index("decision"), kinds


def test_a_card_whose_tool_is_gone_is_withdrawn_with_a_message(bakery: Bakery, lane: str) -> None:
    # The route took the card's tool away: the card goes, and the visitor is told.
    bakery.ask("bake a lemon special")
    bakery.card()
    bakery.goto("orders")  # bake_special belonged to the catalog route: unregistered
    bakery.wait_tools(ORDERS)
    bakery.page.locator("site-agent >> .card").wait_for(state="detached", timeout=5_000)
    outcome = bakery.last_ask()
    assert outcome["result"]["status"] == "answered", outcome
    assert bakery.events("tool-result") == []  # nothing ran
    [decision] = bakery.events("confirm-result")
    assert decision["decision"]["allowed"] is False  # withdrawn: recorded as not allowed
    assert "bake_special" in bakery.log_text()  # and the visitor is told which call went
