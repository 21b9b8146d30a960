"""``<site-agent>`` on pages with their own rules, end to end in headless Chromium (both lanes):

- Trusted Types (``require-trusted-types-for 'script'``): the Python worker starts through the
  ``site-agent`` policy; a ``trusted-types`` list without that name gets a message naming it.
- A page's modal ``<dialog>``: the panel and its card stay reachable (the top layer).
- The doctor and loader order: a page that read ``document.modelContext`` before loader.js
  came is told so; a page-defined ``document.modelContext`` is not called the shim.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, start_site

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>real sites</title>{head}</head>
<body><button id="outside">outside</button>
{body}
<site-agent {attrs}></site-agent>
<script type="module" src="/loader.js"></script>
</body></html>"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture
def open_page(page: Any, site: Any) -> Any:
    """``open_page(attrs, head=..., body=..., csp=...)``: a page with ``<site-agent ATTRS>``."""

    def go(
        attrs: str = 'models="demo"', *, head: str = "", body: str = "", csp: str | None = None
    ) -> Any:
        path = f"realsites-page-{abs(hash((attrs, head, body, csp)))}.html"
        html = PAGE.format(attrs=attrs, head=head, body=body)
        headers = {"Content-Security-Policy": csp} if csp else {}
        page.route(
            f"**/{path}",
            lambda route: route.fulfill(
                status=200, content_type="text/html", body=html, headers=headers
            ),
        )
        if page.url.startswith(site.url):
            page.evaluate("sessionStorage.clear()")
        page.goto(site.url + path)
        wait_until(page, "() => customElements.get('site-agent') !== undefined")
        return page

    return go


def wait_until(page: Any, predicate: str, timeout_s: float = 60) -> None:
    """Poll a JS function (``wait_for_function`` evaluates strings, which a strict CSP blocks)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.05)


# ---------------------------------------------------------------- Trusted Types


@pytest.mark.parametrize("runtime", ["worker", "main"])
def test_python_starts_on_a_page_that_requires_trusted_types(
    open_page: Any, page_log: Any, runtime: str
) -> None:
    page = open_page(
        f'models="demo" runtime="{runtime}"',
        csp="require-trusted-types-for 'script'; trusted-types site-agent",
    )
    result = page.evaluate(f"{EL}.ask('hello')")
    assert result["status"] == "answered", result
    assert page.evaluate(f"{EL}.state") == "ready"
    assert not [m for m in page_log.console_errors if "Trusted" in m]


def test_a_trusted_types_list_without_the_policy_gets_a_message_naming_it(
    open_page: Any, page_log: Any
) -> None:
    page_log.allow_page_error("Trusted")
    page = open_page(csp="require-trusted-types-for 'script'; trusted-types other")
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'failed'")
    text = page.inner_text("site-agent >> .panel")
    assert 'the policy "site-agent" in trusted-types' in text, text


# ---------------------------------------------------------------- a page's modal <dialog>

PAGE_DIALOG = '<dialog id="page-modal"><p>The page asks something.</p><button>OK</button></dialog>'

POKE = """() => {
  const el = document.querySelector('site-agent');
  window.__ran = 0;
  el.options = {
    model: { respond: (r) => r.messages.at(-1).role === 'tool'
      ? { type: 'answer', text: 'done: ' + r.messages.at(-1).content }
      : { type: 'tool', name: 'poke', arguments: {} } },
    tools: [{ name: 'poke', description: 'Poke.', annotations: { readOnlyHint: false },
              execute: () => { window.__ran += 1; return 'poked'; } }],
  };
}"""


def test_the_card_stays_reachable_over_a_page_modal_dialog(open_page: Any) -> None:
    page = open_page(body=PAGE_DIALOG)
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'ready'")
    page.evaluate(POKE)
    wait_until(page, f"() => !{EL}.agent.running")
    # A form tool (or the page itself) opens a modal dialog: the page behind it is inert.
    page.evaluate("document.getElementById('page-modal').showModal()")
    page.evaluate(f"() => {{ window.__result = {EL}.ask('poke it'); }}")
    card = page.locator("site-agent >> .card")
    card.wait_for(timeout=10_000)
    assert page.evaluate(f"{EL}.shadowRoot.querySelector('dialog.layer').matches(':modal')")
    card.locator(".allow").click(timeout=5_000)
    result = page.evaluate("window.__result")
    assert result["status"] == "answered", result
    assert page.evaluate("window.__ran") == 1
    # Typing reaches the panel's input above the page's dialog.
    page.click("site-agent >> textarea", timeout=5_000)
    page.keyboard.type("still here")
    assert page.locator("site-agent >> textarea").input_value() == "still here"
    # Closing the panel gives the page its dialog back.
    page.keyboard.press("Escape")
    assert not page.evaluate(f"{EL}.shadowRoot.querySelector('dialog.layer').open")
    assert page.evaluate("document.getElementById('page-modal').matches(':modal')")


def test_placement_moves_the_launcher_and_the_panel(open_page: Any) -> None:
    page = open_page(
        'models="demo" placement="top left"',
        head="<style>site-agent{--site-agent-offset-x:40px;--site-agent-offset-y:30px}</style>",
    )
    box = page.locator("site-agent >> .launcher").bounding_box()
    assert (round(box["x"]), round(box["y"])) == (40, 30)
    page.click("site-agent >> .launcher")
    page.wait_for_selector("site-agent >> .panel", state="visible")
    panel = page.locator("site-agent >> .panel").bounding_box()
    assert round(panel["x"]) == 40
    assert panel["y"] > box["y"] + box["height"]  # below the launcher, at the top of the page


# ---------------------------------------------------------------- the doctor and loader order

CHECKS_ONCE = """<script>
  // An app that looks for WebMCP once, when it starts, before loader.js came.
  if (document.modelContext) {
    document.modelContext.registerTool({ name: 'find_mug', description: 'Find a mug by colour.',
      annotations: { readOnlyHint: true }, execute: () => 'the red one' });
  }
</script>"""

PAGE_DEFINED = """<script>
  Object.defineProperty(document, 'modelContext', { configurable: true, value: {
    registerTool() {}, getTools: async () => [], executeTool: async () => null } });
</script>"""


def test_the_doctor_names_loader_order_when_the_app_checked_before_loader_js(
    open_page: Any, lane: str
) -> None:
    page = open_page(head=CHECKS_ONCE)
    report = page.evaluate(f"{EL}.agent.doctor()")
    codes = [f["code"] for f in report["findings"]]
    if lane == "native":  # the browser's WebMCP was there before any script: no order problem
        assert report["webmcp"] == "native"
        assert [t["name"] for t in report["tools"]] == ["find_mug"]
        assert "loader-order" not in codes
        return
    assert report["webmcp"] == "shim"
    assert report["loader"]["scriptsBefore"] == 1
    assert "no-tools" in codes and "loader-order" in codes
    found = next(f for f in report["findings"] if f["code"] == "loader-order")
    assert "checks document.modelContext once" in found["message"]
    assert "Load loader.js first" in found["fix"]


def test_the_doctor_tells_a_page_defined_model_context_from_the_shim(open_page: Any) -> None:
    page = open_page(head=PAGE_DEFINED)
    report = page.evaluate(f"{EL}.agent.doctor()")
    assert report["webmcp"] == "page"
    assert "loader-order" not in [f["code"] for f in report["findings"]]
    page = open_page()
    assert page.evaluate(f"{EL}.agent.doctor()")["webmcp"] in {"shim", "native"}


def test_the_doctor_text_says_whose_model_context_it_is() -> None:
    from pysite_agent.cli.doctor import render

    for kind, words in [
        ("page", "defined by the page (neither the browser's nor loader.js's shim)"),
        ("shim", "shim, from loader.js"),
        ("native", "native, the browser's own"),
    ]:
        text = render({"url": "http://127.0.0.1/", "webmcp": kind, "tools": [], "findings": []})
        assert text.splitlines()[0] == f"http://127.0.0.1/  (WebMCP: {words})"
