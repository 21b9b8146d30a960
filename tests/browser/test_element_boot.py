"""Loading: what a page downloads before the visitor interacts, when Python starts, and the
``preload``/``open`` attributes, a second import of ``loader.js``, removal of the element.

Pages other than the demo are served by Playwright's router on the demo site's origin, so the
bundle is reached exactly as a site would reach it.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, Shop, e2e_bundle, start_site

pytestmark = pytest.mark.browser

#: The budget from the issue: loader + element assets, gzipped, before any interaction.
FIRST_INTERACTION_BUDGET = 20_000

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>boot test</title>{head}</head>
<body><button id="outside">outside</button>
<site-agent models="demo" {attrs}></site-agent>
<script type="module" src="/loader.js"></script>
</body></html>"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture
def open_page(page: Any, site: Any) -> Any:
    """``open_page(attrs)``: a bare page with ``<site-agent models="demo" ATTRS>``."""

    def go(attrs: str = "", head: str = "", csp: str | None = None) -> Any:
        path = f"boot-test-{abs(hash((attrs, head, csp)))}.html"
        body = PAGE.format(attrs=attrs, head=head)
        headers = {"Content-Security-Policy": csp} if csp else {}
        page.route(
            f"**/{path}",
            lambda route: route.fulfill(
                status=200, content_type="text/html", body=body, headers=headers
            ),
        )
        site.requests.clear()
        if page.url.startswith(site.url):  # each test page starts a new visit (no kept chat)
            page.evaluate("sessionStorage.clear()")
        page.goto(site.url + path)
        wait_until(page, "() => customElements.get('site-agent') !== undefined")
        return page

    return go


def wait_until(page: Any, predicate: str, timeout_s: float = 60) -> None:
    """Poll a JS function. (``wait_for_function`` evaluates strings with ``eval``, which a
    strict Content-Security-Policy blocks.)"""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.05)


def fetched(site: Any) -> list[str]:
    return [path.split("?")[0] for method, path, status in site.requests if method == "GET"]


def test_launcher_at_once_and_no_python_before_interaction(open_page: Any, site: Any) -> None:
    page = open_page()
    launcher = page.locator("site-agent >> .launcher")
    assert launcher.is_visible()
    assert launcher.inner_text() == "Ask this site"
    page.wait_for_timeout(1500)  # idle time: nothing may start by itself
    assert page.evaluate(f"{EL}.state") == "idle"
    paths = fetched(site)
    assert sorted(paths) == [
        "/loader.js",
        "/web/element/dom.js",
        "/web/element/element.js",
        "/web/element/strings.js",
        "/web/runtime/settings.js",
        "/web/webmcp/shim.js",
    ]
    bundle = e2e_bundle()
    total = sum(len(gzip.compress((bundle / p.lstrip("/")).read_bytes(), 6)) for p in paths)
    assert total <= FIRST_INTERACTION_BUDGET, f"{total} bytes gzipped before interaction"


def test_python_starts_when_the_panel_opens_and_removal_releases_it(
    open_page: Any, site: Any
) -> None:
    page = open_page()
    page.click("site-agent >> .launcher")
    # While Python loads: a progress bar and a status line.
    assert page.evaluate(f"{EL}.state") == "loading"
    page.wait_for_selector("site-agent >> .panel", state="visible")  # the panel's code loads
    assert page.locator("site-agent >> .loading progress").count() == 1
    assert page.inner_text("site-agent >> .status").startswith(("Starting", "Loading"))
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    assert page.locator("site-agent >> .loading").count() == 0
    assert page.inner_text("site-agent >> .status") == "Ready."
    paths = fetched(site)
    assert "/web/runtime/boot.js" in paths and "/pyodide/pyodide.asm.wasm" in paths
    assert any(p.startswith("/pyodide/pysite_agent-") for p in paths)
    assert not any("cdn" in p for p in paths)
    # Removing the element releases its agent once TEARDOWN_MS (2 s) passed without it being
    # put back; putting it back then starts a new one (test_realsites_element.py: within the
    # time, the same agent goes on).
    state = page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            el.remove();
            await new Promise((r) => setTimeout(r, 0));
            const during = el.state;
            await new Promise((r) => setTimeout(r, 2200));
            const after = el.state;
            document.body.append(el);
            el.show();
            for (let i = 0; i < 500 && el.state !== 'ready'; i++) {
              await new Promise((r) => setTimeout(r, 20));
            }
            const result = await el.ask('hello');
            return { during, after, again: el.state, status: result.status };
        }"""
    )
    assert state == {"during": "ready", "after": "idle", "again": "ready", "status": "answered"}


def test_ask_starts_python_and_opens_the_panel(open_page: Any) -> None:
    page = open_page()
    result = page.evaluate(f"{EL}.ask('hello')")
    assert result["status"] == "answered"
    assert page.locator("site-agent >> .panel").is_visible()


def test_preload_starts_python_on_idle_without_opening(open_page: Any) -> None:
    page = open_page("preload")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    assert not page.locator("site-agent >> .panel").is_visible()
    page.click("site-agent >> .launcher")
    assert page.locator("site-agent >> textarea").evaluate(
        "e => e === e.getRootNode().activeElement"
    )


def test_open_attribute_opens_the_panel_on_load(open_page: Any) -> None:
    page = open_page('open label="Help" heading="How can we help?" placeholder="Type here"')
    page.wait_for_selector("site-agent >> .panel", state="visible")  # the panel's code loads
    assert page.locator("site-agent >> .panel").is_visible()
    assert page.inner_text("site-agent >> .launcher") == "Help"
    assert page.inner_text("site-agent >> h2") == "How can we help?"
    assert page.get_attribute("site-agent >> textarea", "placeholder") == "Type here"
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    page.evaluate(f"{EL}.removeAttribute('open')")
    assert not page.locator("site-agent >> .panel").is_visible()


def test_a_second_import_is_harmless(open_page: Any) -> None:
    page = open_page()
    same = page.evaluate(
        """async () => {
            const ctor = customElements.get('site-agent');
            const context = document.modelContext;
            const again = await import('/loader.js?second-copy');
            return { ctor: customElements.get('site-agent') === ctor,
                     context: document.modelContext === context,
                     exports: Object.keys(again).sort() };
        }"""
    )
    assert same["ctor"] is True and same["context"] is True
    assert {"installShim", "createModelContext", "hasNativeModelContext", "isShim"} <= set(
        same["exports"]
    )


def test_a_page_can_hand_in_its_own_running_pyodide(open_page: Any, site: Any) -> None:
    """PyScript-style pages: ``window.pysiteAgent.pyodide`` (here a promise) is used as is."""
    page = open_page(
        head="""<script type="module">
          import { loadPyodide } from '/pyodide/pyodide.mjs';
          window.pageOwn = loadPyodide({ indexURL: '/pyodide/' });
          window.pysiteAgent = { pyodide: window.pageOwn };
        </script>"""
    )
    # The page's own Pyodide starts on the main thread and blocks it meanwhile.
    page.locator("site-agent >> .launcher").click(timeout=60_000)
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    same = page.evaluate(
        "async () => (await (await import('/loader.js')).loadRuntime()) === (await window.pageOwn)"
    )
    assert same is True
    assert fetched(site).count("/pyodide/pyodide.asm.wasm") == 1
    assert page.evaluate(f"{EL}.ask('find mugs')")["status"] == "answered"
    # The page's own Pyodide keeps its event loop as it was.
    assert page.evaluate(BATCHING) is False


BATCHING = """async () => (await (await import('/loader.js')).loadRuntime()).runPython(
    'from pysite_agent.browser import event_loop; event_loop.batching()')"""


def test_a_runtime_the_element_starts_batches_its_callbacks(open_page: Any) -> None:
    page = open_page('runtime="main"')
    page.evaluate(f"{EL}.show()")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    assert page.evaluate(BATCHING) is True
    assert page.evaluate(f"{EL}.ask('find mugs')")["status"] == "answered"


STRICT_CSP = "default-src 'self'; img-src data:; script-src 'self' {extra}"


def test_a_strict_content_security_policy_with_wasm_unsafe_eval_works(open_page: Any) -> None:
    """Pyodide needs 'wasm-unsafe-eval', nothing more: no 'unsafe-eval', no inline styles."""
    page = open_page(csp=STRICT_CSP.format(extra="'wasm-unsafe-eval'"))
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'ready'")
    assert page.evaluate(f"() => {EL}.ask('hello')")["status"] == "answered"
    radius = page.eval_on_selector("site-agent >> .panel", "e => getComputedStyle(e).borderRadius")
    assert radius == "12px"  # the element's styles applied under the policy


def test_a_policy_without_wasm_unsafe_eval_fails_with_a_clear_message_on_the_main_thread(
    open_page: Any,
) -> None:
    page = open_page('runtime="main"', csp=STRICT_CSP.format(extra=""))
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'failed'")
    text = page.inner_text("site-agent >> .failed")
    assert "Content-Security-Policy blocks 'wasm-unsafe-eval'" in text


def test_in_worker_mode_the_worker_follows_its_own_policy_not_the_pages(open_page: Any) -> None:
    """A module worker loaded from the page's origin gets the policy its own script's response
    carries (CSP 3, "Initialize a worker's policy container"); the page's policy, here without
    'wasm-unsafe-eval', applies only to creating it (worker-src, falling back to script-src
    'self'). So worker mode starts; a site that wants WebAssembly blocked must send that
    policy with web/runtime/worker.js too."""
    page = open_page(csp=STRICT_CSP.format(extra=""))
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'ready'")
    assert page.evaluate(f"() => {EL}.ask('hello')")["status"] == "answered"


def test_a_policy_that_forbids_the_worker_fails_with_a_message(open_page: Any) -> None:
    page = open_page(csp=STRICT_CSP.format(extra="'wasm-unsafe-eval'") + "; worker-src 'none'")
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'failed'")
    assert "must allow it in worker-src" in page.inner_text("site-agent >> .failed")


def test_demo_page_is_served_at_the_root(page: Any, site: Any) -> None:
    Shop(page, site.url).open(boot=False)
    assert page.title() == "Demo shop · pysite-agent"
    assert page.evaluate("document.querySelector('site-agent').getAttribute('models')") == "demo"


def test_an_unknown_runtime_is_a_clear_error(open_page: Any) -> None:
    page = open_page('runtime="nope"')
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'failed'")
    assert 'runtime must be "worker" or "main", not "nope"' in page.inner_text(
        "site-agent >> .failed"
    )
