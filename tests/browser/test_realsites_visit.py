"""The visit record on real browsers' life cycle, end to end in headless Chromium (both lanes),
on the demo shop:

- Back/forward cache: a page shown again (``pageshow`` with ``persisted``) after another page
  of the visit went on with the conversation takes up the newer record (and says so) instead
  of going on with its stale one and overwriting the newer.
- A second tab (``window.open`` copies ``sessionStorage``, as Duplicate does): it does not take
  up the first tab's live run; it starts fresh and says why, and the first tab's card still works.

The model is a scripted JS model (``options.model``) that records what it is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CHROMIUM_ARGS, CHROMIUM_BIN, LANES  # at import, not in a fixture (see below)
from element_support import BOOT_TIMEOUT_MS, EL, RECORDER, start_site

pytestmark = pytest.mark.browser

MODEL = """
window.__requests = [];
window.__model = {
  name: 'scripted',
  respond(request) {
    window.__requests.push(JSON.parse(JSON.stringify(request.messages)));
    const last = request.messages.at(-1);
    if (last.role === 'tool') return { type: 'answer', text: 'Added.' };
    if (last.content.startsWith('add')) {
      const args = { product: 'classic mug', quantity: 1 };
      return { type: 'tool', name: 'add_to_cart', arguments: args };
    }
    return { type: 'answer', text: 'ok: ' + last.content };
  },
};
customElements.whenDefined('site-agent').then(() => {
  for (const el of document.querySelectorAll('site-agent')) {
    el.options = { ...el.options, model: window.__model };
  }
});
"""

KEY = "site-agent:default"


@pytest.fixture(scope="module")
def browser(playwright: Any, lane: str) -> Iterator[Any]:
    """Headless Chromium for ``lane`` with its back/forward cache (Playwright turns it off by
    default with ``--disable-back-forward-cache``). The names come from this directory's
    conftest, imported with the module: when fixtures run, ``conftest`` may name another one."""
    instance = playwright.chromium.launch(
        executable_path=CHROMIUM_BIN,
        headless=True,
        args=CHROMIUM_ARGS + LANES[lane],
        ignore_default_args=["--disable-back-forward-cache"],
        timeout=30_000,
    )
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tab(page: Any) -> Any:
    page.context.add_init_script(RECORDER)
    page.context.add_init_script(MODEL)
    return page


def start(page: Any, site: Any) -> None:
    """The shop's first page with no stored conversation, the panel open and ready."""
    page.goto(site.url)
    page.evaluate("sessionStorage.clear()")
    page.goto(site.url)
    page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_TIMEOUT_MS)


def record(page: Any) -> Any:
    text = page.evaluate(f"sessionStorage.getItem({json.dumps(KEY)})")
    return None if text is None else json.loads(text)


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


# ---------------------------------------------------------------- back/forward cache

# What another page of the visit does while this one sits in the back/forward cache: it takes
# up the record and goes on with the conversation (one more exchange), then hides.
ANOTHER_PAGE = """(key) => {
  const r = JSON.parse(sessionStorage.getItem(key));
  const messages = [...r.state.conversation.messages,
    { role: 'user', content: 'asked on the product page' },
    { role: 'assistant', content: 'answered on the product page' }];
  const log = [...r.log, ['msg user', 'asked on the product page'],
    ['msg assistant', 'answered on the product page']];
  sessionStorage.setItem(key, JSON.stringify({ ...r, log,
    state: { conversation: { ...r.state.conversation, messages }, run: null },
    savedAt: Date.now() + 1, hiddenAt: Date.now() + 1, by: 'the-product-page', rev: 1 }));
}"""

BFCACHE = """(persisted) => {
  dispatchEvent(new PageTransitionEvent('pagehide', { persisted }));
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_a_page_back_from_the_bfcache_takes_up_the_newer_record(tab: Any, site: Any) -> None:
    start(tab, site)
    result = tab.evaluate(f"{EL}.ask('asked on the shop page')")
    assert result["status"] == "answered", result
    # The visitor goes to another page: this one is kept in the back/forward cache ...
    tab.evaluate(BFCACHE, True)
    assert record(tab)["hiddenAt"] is not None
    # ... where the conversation goes on, then comes back to this one.
    tab.evaluate(ANOTHER_PAGE, KEY)
    tab.evaluate("dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")
    tab.wait_for_function(
        f"{EL}.shadowRoot.querySelector('.log').textContent.includes('answered on the product')"
    )
    log = tab.inner_text("site-agent >> .log")
    assert "This conversation went on in another page" in log
    assert log.index("asked on the shop page") < log.index("answered on the product page")
    assert record(tab)["by"] == "the-product-page"  # the newer record was not overwritten
    result = tab.evaluate(f"{EL}.ask('asked again on the shop page')")
    assert result["status"] == "answered", result
    assert user_texts(tab.evaluate("window.__requests.at(-1)")) == [
        "asked on the shop page",
        "asked on the product page",
        "asked again on the shop page",
    ]
    assert record(tab)["by"] != "the-product-page"  # this page wrote after that


def test_back_to_a_page_in_the_bfcache_after_the_conversation_went_on(tab: Any, site: Any) -> None:
    start(tab, site)
    tab.evaluate("window.__kept = 'the shop page itself'")  # gone if the page loads anew
    assert tab.evaluate(f"{EL}.ask('asked on the shop page')")["status"] == "answered"
    tab.goto(site.url + "product.html")
    tab.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    assert tab.evaluate(f"{EL}.ask('asked on the product page')")["status"] == "answered"
    tab.go_back(wait_until="commit")
    tab.wait_for_function(
        f"{EL}.shadowRoot.querySelector('.log')?.textContent.includes('went on in another page')",
        timeout=BOOT_TIMEOUT_MS,
    )
    assert tab.evaluate("window.__kept") == "the shop page itself"  # from the cache, not loaded
    assert "asked on the product page" in tab.inner_text("site-agent >> .log")
    tab.wait_for_function(f"{EL}.state === 'ready' && !{EL}.agent.running")
    assert tab.evaluate(f"{EL}.ask('back on the shop page')")["status"] == "answered"
    assert user_texts(tab.evaluate("window.__requests.at(-1)")) == [
        "asked on the shop page",
        "asked on the product page",
        "back on the shop page",
    ]


def test_a_page_back_from_the_bfcache_with_no_newer_record_goes_on(tab: Any, site: Any) -> None:
    start(tab, site)
    tab.evaluate(f"{EL}.ask('only here')")
    tab.evaluate(BFCACHE, True)
    tab.evaluate("dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")
    assert record(tab)["hiddenAt"] is None
    assert "went on in another page" not in tab.inner_text("site-agent >> .log")
    tab.evaluate(f"{EL}.ask('still here')")
    assert user_texts(tab.evaluate("window.__requests.at(-1)")) == ["only here", "still here"]


# ---------------------------------------------------------------- a second tab


def test_a_second_tab_does_not_take_up_the_first_tabs_live_run(tab: Any, site: Any) -> None:
    start(tab, site)
    before = int(tab.inner_text("#cart-count"))
    tab.evaluate(f"() => {{ window.__result = {EL}.ask('add a mug'); }}")
    card = tab.locator("site-agent >> .card")
    card.wait_for(timeout=15_000)
    tab.wait_for_function(f"JSON.parse(sessionStorage.getItem({json.dumps(KEY)}))?.state?.run")
    # A second tab with a copy of this tab's sessionStorage (as Duplicate makes one).
    with tab.context.expect_page() as opened:
        tab.evaluate("window.open(location.href)")
    second = opened.value
    try:
        second.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
        second.wait_for_function(
            f"{EL}.shadowRoot.querySelector('.log')?.textContent.includes('another tab')",
            timeout=BOOT_TIMEOUT_MS,
        )
        second.wait_for_timeout(1500)  # time in which a resumed run would boot and ask
        assert second.evaluate(f"{EL}.state") == "idle"  # no Python started for the run
        assert second.evaluate("window.__requests.length") == 0
        assert second.locator("site-agent >> .card").count() == 0
        assert record(second) is None  # this tab's copy is gone; the first tab keeps its own
    finally:
        second.close()
    # The first tab's card still works.
    card.locator(".allow").click()
    tab.wait_for_function(f"document.getElementById('cart-count').textContent === '{before + 1}'")
    result = tab.evaluate("window.__result")
    assert result["status"] == "answered", result
