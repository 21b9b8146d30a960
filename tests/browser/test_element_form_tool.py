"""The demo shop's declarative ``<form toolname>`` tool, in both lanes.

Native lane: Chromium lists the form as a tool. Shim lane: the shim does the same
(``web/webmcp/forms.js``). Either way the agent asks first (a form tool has no annotations:
the card approves filling the form), the form is filled, and the call ends when the visitor
clicks Send (the page answers with ``respondWith``). Waiting for the visitor does not count
against the per-call tool timeout (README rule 7): the run keeps waiting past it, and Stop
ends it (docs/webmcp-native.md, "Form tools and the agent").
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


def test_a_form_waiting_for_the_visitor_outlasts_the_tool_timeout(shop: Shop) -> None:
    shop.reset()
    shop.page.evaluate(f"{EL}.options = {{ toolTimeoutMs: {TIMEOUT_MS} }}")
    assert "send_feedback" in tool_names(shop)
    shop.ask("send feedback: love the mugs")
    card = shop.card()
    assert card.get_attribute("data-reason") == "annotations-unknown"
    card.locator(".allow").click()
    shop.page.wait_for_function("document.getElementById('feedback-message').value !== ''")
    started = time.monotonic()
    shop.page.wait_for_timeout(TIMEOUT_MS * 2)  # twice the tool timeout
    assert shop.events("tool-result") == []  # still waiting for the visitor, no error
    assert shop.page.evaluate(f"{EL}.agent.running") is True
    shop.page.evaluate(f"{EL}.stop()")
    outcome = shop.last_ask(timeout=10_000)
    assert time.monotonic() - started >= TIMEOUT_MS * 2 / 1000
    assert outcome["result"]["status"] == "aborted"
    assert shop.page.evaluate("window.shop.notes") == []
    # The filled form stays for the visitor.
    assert shop.page.input_value("#feedback-message") == "love mugs"
    shop.page.evaluate(f"{EL}.options = {{}}")


def test_the_visitor_submits_the_filled_form(shop: Shop) -> None:
    shop.reset()
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


def test_the_form_still_works_by_hand(shop: Shop) -> None:
    shop.reset()
    shop.page.fill("#feedback-message", "by hand")
    shop.page.click("#feedback-form button[type=submit]")
    assert shop.page.inner_text("#feedback-sent").splitlines()[-1] == "by hand"
    assert shop.page.input_value("#feedback-message") == ""
