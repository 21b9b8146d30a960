"""A visit in Firefox and WebKit: prefetch, the memory snapshot across two pages with the
conversation, a damaged snapshot, the Python-tools page (``runtime="main"``) and a strict CSP.

The same paths as Chromium's ``tests/browser/test_prefetch.py``, ``test_snapshot.py``,
``test_element_visit.py``, ``test_python_tools_page.py`` and the CSP tests of
``test_element_boot.py``, with one browser per engine and module. Tests run in file order
and share the origin's IndexedDB: the visit makes the snapshot that the later tests use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from element_support import EL, Shop
from engine_support import instrument, start_engine_site
from test_prefetch import EXPECTED
from test_python_tools_page import LIST_TOOLS
from test_snapshot import BOOT, CLEAR, DAMAGE, STORED, WORKS
from test_snapshot import PAGE as SNAPSHOT_PAGE

pytestmark = pytest.mark.engines

BOOT_MS = 180_000
KEY = "site-agent:default"

#: Per page, before the element boots: Save-Data when the URL asks for it (`?save-data`),
#: and `pre-approved="add_to_cart"` while the visit's sessionStorage says so.
INIT = """
if (new URLSearchParams(location.search).has('save-data')) {
  Object.defineProperty(Navigator.prototype, 'connection', {
    configurable: true, get: () => ({ saveData: true }) });
}
customElements.whenDefined('site-agent').then(() => {
  for (const el of document.querySelectorAll('site-agent')) {
    if (sessionStorage.getItem('test-pre-approved')) el.setAttribute('pre-approved', 'add_to_cart');
  }
});
"""

STRICT_CSP = "default-src 'self'; img-src data:; script-src 'self' 'wasm-unsafe-eval'"
CSP_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>csp test</title></head>
<body><site-agent models="demo"></site-agent>
<script type="module" src="/loader.js"></script>
</body></html>"""


@pytest.fixture(scope="module")
def site(overlay: Path) -> Iterator[Any]:
    pages = {"snapshot-test.html": SNAPSHOT_PAGE, "csp-test.html": CSP_PAGE}
    server = start_engine_site(instrument(overlay, INIT, pages))
    server.headers_for["/csp-test.html"] = {"Content-Security-Policy": STRICT_CSP}
    yield server
    server.stop()


def mark(page: Any, name: str) -> Any:
    return page.evaluate(f"performance.getEntriesByName({json.dumps(name)}).at(-1)?.detail")


def runtime_requests(site: Any) -> set[str]:
    paths = {path.split("?")[0] for method, path, _status in site.requests if method == "GET"}
    return {p for p in paths if p.startswith("/pyodide/") or p == "/web/runtime/boot.js"}


def load(page: Any, site: Any, query: str = "") -> dict[str, float]:
    """A fresh page of the shop, pointer far away; returns the launcher's rectangle."""
    page.mouse.move(0, 0)
    page.goto(site.url + query)
    page.wait_for_selector("html[data-ready=true]")
    page.evaluate("sessionStorage.clear()")
    site.requests.clear()
    rect: dict[str, float] = page.evaluate(
        f"""() => {{
        const r = {EL}.shadowRoot.querySelector('.launcher').getBoundingClientRect();
        return {{ left: r.left, top: r.top, right: r.right, bottom: r.bottom }};
    }}"""
    )
    return rect


def wait_prefetched(page: Any, site: Any) -> set[str]:
    for _ in range(300):
        got = runtime_requests(site)
        if got >= EXPECTED and any(p.endswith(".whl") for p in got):
            return got
        page.wait_for_timeout(100)
    raise AssertionError(f"no complete prefetch: {sorted(runtime_requests(site))}")


def python_started(page: Any) -> bool:
    return bool(page.evaluate("performance.getEntriesByName('site-agent:boot-start').length > 0"))


# ---------------------------------------------------------------------------- prefetch


def test_start_on_pointer_near_and_on_keyboard_focus(page: Any, site: Any) -> None:
    rect = load(page, site)
    page.wait_for_timeout(1000)
    assert runtime_requests(site) == set()  # nothing on idle
    page.mouse.move(rect["left"] - 60, rect["top"] + 5, steps=5)  # 60 px left of it
    got = wait_prefetched(page, site)
    assert "/pyodide/pysite_agent-0.1.0-py3-none-any.whl" in got
    assert page.evaluate(f"{EL}.state") == "idle"  # started in the background: no panel
    assert python_started(page)  # the worker's Python starts on intent

    load(page, site)
    for _ in range(60):
        page.keyboard.press("Tab")
        on_launcher = page.evaluate(
            f"""() => document.activeElement === {EL}
                && {EL}.shadowRoot.activeElement?.classList.contains('launcher')"""
        )
        if on_launcher:
            break
    else:
        raise AssertionError("Tab never reached the launcher")
    wait_prefetched(page, site)
    assert python_started(page)


def test_save_data_turns_prefetch_off_and_a_click_still_starts(page: Any, site: Any) -> None:
    rect = load(page, site, "?save-data")
    assert page.evaluate("navigator.connection.saveData") is True
    page.mouse.move(rect["left"] + 2, rect["top"] + 2, steps=3)  # on the launcher
    page.evaluate(f"{EL}.shadowRoot.querySelector('.launcher').focus()")
    page.wait_for_timeout(1500)
    assert runtime_requests(site) == set()
    page.click("site-agent >> .launcher")  # the visitor asks: Python starts, Save-Data or not
    page.wait_for_function(f"{EL}.state !== 'idle'")
    page.goto("about:blank")


# ---------------------------------------------------------------------------- the visit


def test_a_visit_makes_the_snapshot_and_the_next_page_uses_it_with_the_conversation(
    page: Any, site: Any
) -> None:
    load(page, site)
    page.evaluate(CLEAR)
    page.evaluate("sessionStorage.setItem('test-pre-approved', '1')")
    shop = Shop(page, site.url)
    page.goto(site.url)
    page.wait_for_selector("html[data-ready=true]")
    page.click("site-agent >> .launcher")
    shop.wait_state("ready", timeout=BOOT_MS)
    assert mark(page, "site-agent:snapshot") == {"state": "made", "made": True}
    assert page.evaluate(f"{EL}.getAttribute('pre-approved')") == "add_to_cart"

    result = shop.ask_and_wait("show the reviews of the classic mug")
    assert result["status"] == "answered"
    page.wait_for_function(f"sessionStorage.getItem({json.dumps(KEY)}) !== null")
    record = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(KEY)})"))
    assert record["state"]["conversation"]["afterUntrusted"] is True

    saved = page.wait_for_function(
        "performance.getEntriesByName('site-agent:snapshot-saved').at(-1)?.detail",
        timeout=BOOT_MS,
    )
    assert saved["saved"] is True, saved
    assert saved["bytes"] > 20_000_000
    [entry] = page.evaluate(STORED)
    assert entry["size"] == entry["bytes"] == saved["bytes"]

    page.click("#products a")  # the visitor follows a link to the product's page
    page.wait_for_url("**/product.html?id=*", timeout=30_000)
    page.wait_for_selector("html[data-ready=true]")
    shop.wait_state("ready", timeout=BOOT_MS)  # the panel was open: it opens again
    assert mark(page, "site-agent:snapshot") == {"state": "used", "made": False}
    assert "show the reviews of the classic mug" in shop.log_text()  # the log came along
    shop.ask("add one mug")  # pre-approved, but not after the reviews (untrusted text)
    card = shop.card()
    assert card.get_attribute("data-reason") == "after-untrusted"
    card.locator(".deny").click()
    page.wait_for_function("window.__done.length > 0")
    assert page.evaluate("JSON.parse(sessionStorage.getItem('demo-shop-cart') || '[]')") == []

    page.reload()  # the same page again, as the visitor's reload
    page.wait_for_selector("html[data-ready=true]")
    shop.wait_state("ready", timeout=BOOT_MS)
    assert mark(page, "site-agent:snapshot") == {"state": "used", "made": False}
    page.evaluate("sessionStorage.clear()")


def test_the_snapshot_outlives_reloads_of_the_same_page(page: Any, site: Any) -> None:
    """The snapshot made and stored on a page, then that page again: WebDriver's navigation
    to the same URL, its refresh and ``location.reload()``; each next start is ``used``. With
    the snapshot in Cache Storage, WebKitGTK 2.50 found none after the first of these
    (docs/performance.md, "The snapshot in WebKit")."""
    url = site.url + "snapshot-test.html"
    page.goto(url)
    page.evaluate(CLEAR)
    page.goto(url)
    made = page.evaluate(BOOT, {})
    assert made["info"] == {"state": "made", "made": True}, made["info"]
    assert page.evaluate("window.__saved")["saved"] is True
    for how in ("same URL", "refresh", "location.reload()"):
        if how == "same URL":
            page.goto(url)
        elif how == "refresh":
            page.reload()
        else:
            page.evaluate("(window.__left = true, setTimeout(() => location.reload(), 10), true)")
            page.wait_for_function("window.__left === undefined", timeout=30_000)
        page.wait_for_function("document.readyState === 'complete'")
        result = page.evaluate(BOOT, {})
        assert result["info"] == {"state": "used", "made": False}, (how, result["info"])
        assert {**result["check"], "late": None} == {**WORKS, "late": None}, result


def test_a_damaged_snapshot_is_refused_and_python_starts_normally(page: Any, site: Any) -> None:
    page.goto(site.url + "snapshot-test.html")
    # The entry the visit stored outlived the later navigations, in WebKit as in the others.
    assert len(page.evaluate(STORED)) == 1
    page.evaluate(DAMAGE, "truncate")  # (rewritten by the page itself)
    page.goto(site.url + "snapshot-test.html")
    result = page.evaluate(BOOT, {})
    # Python works: the modules, jsonschema, the page's `js` ("late", whether a module was
    # imported before, depends on what the element imports, not on the engine).
    assert {**result["check"], "late": None} == {**WORKS, "late": None}, result
    assert result["info"]["made"] is True  # a good one replaces it
    assert page.evaluate("window.__saved")["saved"] is True
    assert result["info"]["state"] == "refused", result["info"]
    assert result["info"]["reason"].startswith("truncated"), result["info"]
    assert len(page.evaluate(STORED)) == 1


# ---------------------------------------------------------------------------- other pages


def test_the_python_tools_page_runs_on_the_main_thread(page: Any, site: Any) -> None:
    page.goto(site.url + "python-tools.html")
    page.wait_for_selector("html[data-ready=true]", timeout=BOOT_MS)
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_MS)
    assert page.evaluate(f"{EL}.getAttribute('runtime')") == "main"
    assert page.evaluate(LIST_TOOLS) == ["add_task", "list_tasks"]
    shop = Shop(page, site.url)
    assert shop.ask_and_wait("show my tasks")["answer"] == "list_tasks: The board is empty."
    shop.ask("add a task buy oat milk")
    card = shop.card()
    assert card.locator("h3").inner_text() == "Allow Add a task?"
    card.locator(".allow").click()
    assert shop.last_ask()["result"]["answer"] == "add_task: Added task 1: buy oat milk"
    assert page.eval_on_selector_all("#tasks li", "els => els.map(e => e.textContent)") == [
        "buy oat milk"
    ]
    shop.ask("add a task water the plants")
    shop.card().locator(".deny").click()
    assert shop.last_ask()["result"]["answer"] == "I did not run add_task: it was not allowed."
    assert page.evaluate("typeof globalThis.pyodide") == "undefined"  # not a page global


def test_a_strict_content_security_policy_page(page: Any, site: Any) -> None:
    page.goto(site.url + "csp-test.html")
    page.wait_for_function("customElements.get('site-agent') !== undefined")
    blocked = page.evaluate(
        """async () => {
            const s = document.createElement('script');
            s.textContent = 'window.__inline = true';
            document.body.append(s);
            await new Promise((r) => setTimeout(r, 50));
            return window.__inline === undefined;
        }"""
    )
    assert blocked, "the policy is not in force"
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_MS)
    assert page.evaluate(f"() => {EL}.ask('hello')")["status"] == "answered"
    radius = page.evaluate(
        f"getComputedStyle({EL}.shadowRoot.querySelector('.panel')).borderTopLeftRadius"
    )
    assert radius == "12px"  # the element's styles applied under the policy
