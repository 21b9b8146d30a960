"""The demo shop's declarative ``<form toolname>`` tool, in both lanes.

Native lane: Chromium lists the form as a tool; the agent asks (a form tool has no
annotations), the browser fills the form, and the call ends either when the visitor clicks
Send (the page answers with ``respondWith``) or, if they never do, at the agent's per-call
timeout, so the run is never stuck. Shim lane: the shim has no declarative tools, so the agent
does not see the form and says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, RECORDER, Shop, start_site

pytestmark = pytest.mark.browser

TIMEOUT_MS = 2_000


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    page.add_init_script(RECORDER)
    shop = Shop(page, site.url).open()
    page.evaluate(f"{EL}.options = {{ toolTimeoutMs: {TIMEOUT_MS} }}")
    return shop


def tool_names(shop: Shop) -> list[str]:
    return [t["name"] for t in shop.page.evaluate(f"{EL}.agent.tools()")]


def test_an_unsubmitted_form_ends_at_the_tool_timeout(shop: Shop, lane: str) -> None:
    if lane == "shim":
        assert "send_feedback" not in tool_names(shop)
        result = shop.ask_and_wait("send feedback: love the mugs")
        assert result["status"] == "answered"
        assert shop.events("tool-call") == []
        return
    shop.reset()
    shop.page.evaluate(f"{EL}.options = {{ toolTimeoutMs: {TIMEOUT_MS} }}")
    assert "send_feedback" in tool_names(shop)
    shop.ask("send feedback: love the mugs")
    card = shop.card()
    assert card.get_attribute("data-reason") == "annotations-unknown"
    started = time.monotonic()
    card.locator(".allow").click()
    shop.page.wait_for_function("document.getElementById('feedback-message').value !== ''")
    outcome = shop.last_ask(timeout=TIMEOUT_MS + 10_000)
    elapsed = time.monotonic() - started
    assert TIMEOUT_MS / 1000 <= elapsed < TIMEOUT_MS / 1000 + 5
    assert outcome["result"]["status"] == "answered"
    [result] = shop.events("tool-result")
    assert result["isError"] is True
    assert result["text"] == f"send_feedback did not finish within {TIMEOUT_MS} ms and was stopped."
    assert shop.page.evaluate("window.shop.notes") == []


def test_the_visitor_submits_the_filled_form(shop: Shop, lane: str) -> None:
    shop.reset()
    if lane == "shim":
        # No WebMCP in the browser: the form is the page's own, and still works by hand.
        shop.page.fill("#feedback-message", "by hand")
        shop.page.click("#feedback-form button[type=submit]")
        assert shop.page.inner_text("#feedback-sent") == "by hand"
        assert shop.page.input_value("#feedback-message") == ""
        return
    shop.page.evaluate(f"{EL}.options = {{ toolTimeoutMs: 20000 }}")
    shop.ask("send feedback: love the mugs")
    shop.card().locator(".allow").click()
    shop.page.wait_for_function("document.getElementById('feedback-message').value !== ''")
    shop.page.click("#feedback-form button[type=submit]")
    outcome = shop.last_ask()
    assert outcome["result"]["answer"] == (
        'send_feedback: The note was sent to the shop team: "love mugs"'
    )
    assert shop.page.inner_text("#feedback-sent") == "love mugs"
    shop.page.evaluate(f"{EL}.options = {{}}")
