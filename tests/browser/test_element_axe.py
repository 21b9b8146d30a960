"""axe-core inside ``<site-agent>``'s shadow DOM on the demo shop, in both WebMCP lanes.

Four states at the default theme, each with 0 violations that touch the element: closed (the
launcher only), open (a conversation long enough to scroll), a confirmation card, and a failed
run. A site's light accent colour keeps its text readable (``color-contrast``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from axe_support import site_agent_violations
from element_support import EL, RECORDER, Shop, start_site

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    page.add_init_script(RECORDER)
    return Shop(page, site.url).open()


@pytest.fixture
def fresh(shop: Shop) -> Iterator[Shop]:
    shop.reset()
    yield shop
    shop.page.evaluate(f"{EL}.options = {{}}; {EL}.removeAttribute('style')")


def _settled(shop: Shop) -> None:
    # The panel's entry animation and the scroll to the newest line are done.
    shop.page.wait_for_timeout(300)


def test_closed(shop: Shop) -> None:
    shop.open("", boot=False)
    assert shop.page.locator("site-agent >> .panel").is_hidden()
    assert site_agent_violations(shop.page) == []
    shop.open()  # the next tests want Python started


def test_open_with_a_conversation_that_scrolls(fresh: Shop) -> None:
    for text in ("find red mugs", "find tote bags", "find red mugs", "find tote bags"):
        fresh.ask_and_wait(text)
    overflows = fresh.page.evaluate(
        f"(() => {{ const b = {EL}.shadowRoot.querySelector('.body');"
        " return b.scrollHeight > b.clientHeight; })()"
    )
    assert overflows, "the conversation should be long enough to scroll"
    _settled(fresh)
    assert site_agent_violations(fresh.page) == []


def test_card(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    _settled(fresh)
    assert site_agent_violations(fresh.page) == []
    fresh.page.click("site-agent >> .deny")
    fresh.last_ask()


def test_failed_run(fresh: Shop) -> None:
    fresh.page.evaluate(
        f"""{EL}.options = {{ model: {{ name: 'failing', respond() {{
              throw new Error('boom'); }} }} }}"""
    )
    fresh.ask("find red mugs")
    fresh.last_ask()
    fresh.page.locator("site-agent >> .log .error").wait_for()
    _settled(fresh)
    assert site_agent_violations(fresh.page) == []


def test_a_light_accent_keeps_text_readable(fresh: Shop) -> None:
    fresh.page.evaluate(f"{EL}.style.setProperty('--site-agent-accent', '#fde68a')")
    fresh.ask_and_wait("find red mugs")  # a user bubble in the accent colour
    fresh.ask("add two mugs to my cart")  # Allow in the accent colour
    fresh.card()
    _settled(fresh)
    contrast = [v for v in site_agent_violations(fresh.page) if v["id"] == "color-contrast"]
    assert contrast == []
    fresh.page.click("site-agent >> .deny")
    fresh.last_ask()
