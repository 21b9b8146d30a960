"""The React 19 (StrictMode) and Vue 3 bakery apps of ``tests/frameworks`` in Firefox and WebKit.

The same apps as Chromium's lanes (``tests/frameworks/test_frameworks.py``), built once per
session by that folder's ``framework_build`` fixture (``build.mjs``), driven by the same helper
(``bakery_support.Bakery``) over :class:`engine_page.EnginePage`. Neither engine has WebMCP, so
the apps register their tools on the shim; the model is the demo rules. Each app's page is
loaded and Python booted once per engine; the tests reuse it (``Bakery.reset`` between them).

WebDriver classic has no init scripts: the overlay serves a copy of each app's ``index.html``
that loads ``/__engines/init.js`` (the error recorder and ``bakery_support.PROBES``) first.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_support import ERRORS, INIT_TAG

HERE = Path(__file__).resolve().parent
FRAMEWORKS_DIR = HERE.parent / "frameworks"
sys.path.append(str(FRAMEWORKS_DIR))

from bakery_support import EL, PROBES, Bakery  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "frameworks_conftest_for_engines", FRAMEWORKS_DIR / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_frameworks = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _frameworks
_spec.loader.exec_module(_frameworks)

#: The apps built by ``node tests/frameworks/build.mjs`` (session scope: built once).
framework_build = _frameworks.framework_build

pytestmark = pytest.mark.engines

FRAMEWORKS = ["react", "vue"]
CATALOG = {"add_to_cart", "open_page", "search_cakes", "bake_special"}
ORDERS = {"add_to_cart", "open_page", "list_orders", "cancel_order"}
#: A cold start on a loaded 2-core machine (as in test_engine_shop).
BOOT_MS = 180_000
#: web/element/element.js: a removed element's agent ends this long after it left.
TEARDOWN_MS = 2_000


class EngineBakery(Bakery):
    """:class:`Bakery` with the engines' start-up time."""

    def wait_state(self, state: str, timeout: float = BOOT_MS) -> None:
        super().wait_state(state, timeout)

    def cart_text(self) -> str:
        return str(self.page.evaluate("document.querySelector('#cart').textContent"))


@pytest.fixture(scope="module")
def bakery_site(framework_build: Path, overlay: Path) -> Iterator[Any]:
    """The bundle and the built apps, each ``index.html`` loading ``/__engines/init.js`` first."""
    from element_support import e2e_bundle

    from pysite_agent.cli.demo import DemoServer

    (overlay / "__engines").mkdir(exist_ok=True)
    (overlay / "__engines" / "init.js").write_text(ERRORS + PROBES, encoding="utf-8")
    for name in FRAMEWORKS:
        html = (framework_build / name / "index.html").read_text("utf-8")
        head = re.search(r"<meta charset=[^>]*>", html, re.IGNORECASE)
        assert head is not None, f"{name}/index.html: no <meta charset>"
        (overlay / name).mkdir(exist_ok=True)
        (overlay / name / "index.html").write_text(
            html[: head.end()] + INIT_TAG + html[head.end() :], encoding="utf-8"
        )
    server = DemoServer([overlay, e2e_bundle(), framework_build], port=0).start()
    yield server
    server.stop()


@pytest.fixture(scope="module", params=FRAMEWORKS)
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def booted(page: Any, bakery_site: Any, framework: str) -> EngineBakery:
    bakery = EngineBakery(page, bakery_site.url, framework)
    bakery.open()
    return bakery


@pytest.fixture
def bakery(booted: EngineBakery, page: Any) -> EngineBakery:
    if booted.page.evaluate(f"{EL} ? {EL}.state : null") not in {"ready", "idle"}:
        booted.open()  # an earlier test left the page broken: start it again
    booted.reset()
    return booted


def test_tools_per_route_and_a_conversation_across_routes_keeps_the_allow(
    bakery: EngineBakery, framework: str, engine: str
) -> None:
    shim = "async () => (await import('/loader.js')).isShim(document.modelContext)"
    assert bakery.page.evaluate(shim) is True  # no WebMCP in the engine: the apps use the shim
    assert set(bakery.tool_names()) == CATALOG
    found = bakery.probes()
    assert found["registrationErrors"] == []  # no duplicate name, even under StrictMode
    # StrictMode: mounted, cleaned up, mounted again.
    assert found["registrations"]["open_page"] == (2 if framework == "react" else 1)
    el = bakery.page.evaluate(
        f"({{ options: {EL}.options, attribute: {EL}.getAttribute('options') }})"
    )
    assert el == {
        "options": {"instructions": "You help visitors of the bakery."},
        "attribute": None,
    }

    first = bakery.ask_and_wait("find chocolate cakes")
    assert first["status"] == "answered", first
    assert "chocolate cake: $20" in first["answer"]
    second = bakery.ask_and_wait("open the orders page")
    assert second["status"] == "answered", second
    bakery.page.wait_for_selector("main[data-route=orders]")
    bakery.wait_tools(ORDERS)
    assert bakery.page.evaluate("location.pathname") == f"/{framework}/orders"
    bakery.ask("cancel order 7")
    bakery.card().locator(".allow").click()
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


def test_a_card_whose_tool_stays_survives_a_route_change(bakery: EngineBakery, engine: str) -> None:
    before = bakery.cart_text()
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
    bakery.page.wait_for_function(
        "document.querySelector('#cart').textContent.includes('Cart: 1')", timeout=3000
    )
    assert bakery.cart_text() != before


def test_a_card_whose_tool_is_gone_is_withdrawn_with_a_message(
    bakery: EngineBakery, engine: str
) -> None:
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


def test_a_remount_keeps_one_python_one_listener_and_the_conversation(
    bakery: EngineBakery, engine: str
) -> None:
    answer = bakery.ask_and_wait("find carrot cakes")
    assert "carrot cake: $15" in answer["answer"], answer
    before = bakery.probes()
    assert (before["workers"], before["elements"]) == (1, 1), before
    bakery.page.click("#move")  # the framework renders a new <site-agent> in #foot
    bakery.page.wait_for_selector("#foot site-agent")
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
    # The old element's agent lets go of its listener when it is torn down, TEARDOWN_MS
    # (web/element/element.js) after it left the document: one listener again, not two.
    bakery.page.wait_for_function(
        "(n) => window.__toolchangeListeners.size === n",
        arg=before["toolchangeListeners"],
        timeout=TEARDOWN_MS + 3_000,
    )
    bakery.page.click("#move")  # and back, for the next app
    bakery.page.wait_for_selector("#side site-agent")
    assert bakery.probes()["workers"] == 1
