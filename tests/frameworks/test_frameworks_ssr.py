"""Server-rendered framework apps hydrate with ``<site-agent>`` in their markup (both lanes).

``build.mjs`` renders the React 19 and Vue 3 bakeries in Node (``react-dom/server``,
``vue/server-renderer``) into ``ssr.html``; the same ``app.js`` then hydrates it
(``hydrateRoot``, ``createSSRApp``). The server markup holds ``<site-agent>`` with its string
attributes only; ``loader.js`` runs first, so the element is upgraded before hydration. Checked:
no hydration warning or error, the element upgraded with ``options`` set as a property on the
client, the route's tools registered by the hydrated components, and the hydrated buttons
working (a ``pushState`` route change swaps the tools). No Python starts here.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from bakery_support import EL

pytestmark = pytest.mark.browser

CATALOG = ["add_to_cart", "bake_special", "open_page", "search_cakes"]
ORDERS = ["add_to_cart", "cancel_order", "list_orders", "open_page"]


@pytest.mark.parametrize("framework", ["react", "vue"])
def test_server_rendered_markup_hydrates_with_the_element(
    page: Any, page_log: Any, bakery_site: Any, framework: str, lane: str
) -> None:
    url = f"{bakery_site.url}{framework}/ssr.html"
    with urllib.request.urlopen(url, timeout=10) as reply:  # loopback only
        served = reply.read().decode()
    assert '<site-agent models="demo" label="Ask the bakery"></site-agent>' in served
    assert "chocolate cake" in served  # the catalog is in the HTML itself
    page.goto(url)
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_function(
        "async (want) => JSON.stringify((await document.modelContext.getTools())"
        ".map((t) => t.name)) === JSON.stringify(want)",
        arg=CATALOG,
    )
    el = page.evaluate(
        f"""() => ({{
            upgraded: !!{EL}.shadowRoot?.querySelector('.launcher'),
            options: {EL}.options,
            attribute: {EL}.getAttribute('options'),
            count: document.querySelectorAll('site-agent').length,
        }})"""
    )
    assert el == {
        "upgraded": True,
        "options": {"instructions": "You help visitors of the bakery."},
        "attribute": None,
        "count": 1,
    }
    page.click("#to-orders")  # the hydrated button
    page.wait_for_selector("main[data-route=orders]")
    page.wait_for_function(
        "async (want) => JSON.stringify((await document.modelContext.getTools())"
        ".map((t) => t.name)) === JSON.stringify(want)",
        arg=ORDERS,
    )
    noisy = [
        e.text
        for e in page_log.console
        if e.type in ("error", "warning") or "hydrat" in e.text.lower()
    ]
    assert noisy == [], noisy
    assert page.evaluate("window.bakeryErrors ?? []") == []
