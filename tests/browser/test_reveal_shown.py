"""Invisible and text-direction characters on the panel, in headless Chromium (both lanes):
the transcript shows the visitor's ``evil\\u202egnp.exe`` as ``evil⟦U+202E⟧gnp.exe`` and says
so; the confirmation card shows a tool title holding them the same way, with a note
(web/element/reveal.js, pysite_agent/core/display.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from element_support import RECORDER, Shop, start_site

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
def fresh(shop: Shop) -> Shop:
    shop.reset()
    return shop


def test_the_transcript_reveals_a_reversed_file_name(fresh: Shop) -> None:
    fresh.ask_and_wait("find evil\u202egnp.exe")
    log = fresh.log_text()
    assert "evil⟦U+202E⟧gnp.exe" in log
    assert "\u202e" not in log
    assert "shown as ⟦U+…⟧ codes" in log


def test_the_card_reveals_a_title_and_says_so(fresh: Shop) -> None:
    fresh.page.evaluate(
        """() => document.modelContext.registerTool({
            name: 'rename_file', title: 'Rename\\u202e elif', description: 'Rename a file.',
            inputSchema: {type: 'object', properties: {}},
            annotations: {readOnlyHint: false},
            execute: () => 'renamed',
        })"""
    )
    fresh.ask("rename the file")
    card = fresh.card()
    assert card.locator("h3").inner_text() == "Allow Rename⟦U+202E⟧ elif?"
    assert "shown as ⟦U+…⟧ codes" in card.locator(".hidden-chars").inner_text()
    card.locator(".deny").click()
    fresh.last_ask()
