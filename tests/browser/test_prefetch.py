"""Prefetch on intent: the runtime's files are fetched when the pointer nears the launcher or
the launcher gets keyboard focus; never on idle, never with Save-Data; Python does not start.

The demo shop on the demo server, which records every request. No test here starts Python,
so each one is a fresh page load of a second or less.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, start_site

from pysite_agent.cli.demo import DemoServer

pytestmark = pytest.mark.browser

#: What a prefetch must bring: Pyodide's files, the lock, the wheels and boot.js.
EXPECTED = {
    "/web/runtime/boot.js",
    "/pyodide/pyodide.mjs",
    "/pyodide/pyodide.asm.mjs",
    "/pyodide/pyodide.asm.wasm",
    "/pyodide/python_stdlib.zip",
    "/pyodide/pyodide-lock.json",
}
SAVE_DATA = """Object.defineProperty(Navigator.prototype, 'connection', {
  configurable: true, get: () => ({ saveData: true }) });"""


@pytest.fixture(scope="module")
def site() -> Iterator[DemoServer]:
    server = start_site()
    yield server
    server.stop()


def runtime_requests(site: DemoServer) -> set[str]:
    paths = {path.split("?")[0] for method, path, _status in site.requests if method == "GET"}
    return {p for p in paths if p.startswith("/pyodide/") or p == "/web/runtime/boot.js"}


def load(page: Any, site: DemoServer) -> dict[str, float]:
    """A fresh page with the pointer far away; returns the launcher's rectangle."""
    page.mouse.move(0, 0)
    page.goto(site.url)
    page.wait_for_selector("html[data-ready=true]")
    site.requests.clear()
    rect: dict[str, float] = page.evaluate(
        f"""() => {{
        const r = {EL}.shadowRoot.querySelector('.launcher').getBoundingClientRect();
        return {{ left: r.left, top: r.top, right: r.right, bottom: r.bottom }};
    }}"""
    )
    return rect


def wait_prefetched(page: Any, site: DemoServer) -> set[str]:
    for _ in range(100):
        got = runtime_requests(site)
        if got >= EXPECTED and any(p.endswith(".whl") for p in got):
            return got
        page.wait_for_timeout(100)
    raise AssertionError(f"no complete prefetch: {sorted(runtime_requests(site))}")


def python_started(page: Any) -> bool:
    return bool(page.evaluate("performance.getEntriesByName('site-agent:boot-start').length > 0"))


def test_nothing_on_idle_or_with_the_pointer_far_away(page: Any, site: DemoServer) -> None:
    rect = load(page, site)
    page.wait_for_timeout(1500)
    page.mouse.move(max(rect["left"] - 300, 0), max(rect["top"] - 300, 0), steps=5)
    page.wait_for_timeout(500)
    assert runtime_requests(site) == set()
    assert page.evaluate(f"{EL}.state") == "idle"


def test_pointer_near_the_launcher_prefetches_without_starting_python(
    page: Any, site: DemoServer
) -> None:
    rect = load(page, site)
    page.mouse.move(rect["left"] - 60, rect["top"] + 5, steps=5)  # 60 px left of it
    got = wait_prefetched(page, site)
    assert {p for p in got if p.endswith(".whl")} >= {
        "/pyodide/pysite_agent-0.1.0-py3-none-any.whl",
    }
    assert "/pyodide/micropip-0.11.1-py3-none-any.whl" not in got  # only what boot needs
    assert page.evaluate(f"{EL}.state") == "idle"
    assert not python_started(page)
    assert page.evaluate("performance.getEntriesByName('site-agent:prefetch').length") == 1


def test_keyboard_focus_on_the_launcher_prefetches(page: Any, site: DemoServer) -> None:
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
    assert not python_started(page)


def test_save_data_turns_prefetch_and_preload_off(browser: Any, site: DemoServer) -> None:
    context = browser.new_context()
    context.add_init_script(SAVE_DATA)
    page = context.new_page()
    try:
        rect = load(page, site)
        assert page.evaluate("navigator.connection.saveData") is True
        page.mouse.move(rect["left"] + 2, rect["top"] + 2, steps=3)  # on the launcher
        page.evaluate(f"{EL}.shadowRoot.querySelector('.launcher').focus()")
        page.evaluate(
            """() => {
            const el = document.createElement('site-agent');
            el.setAttribute('preload', '');
            el.id = 'second';
            document.body.append(el);
        }"""
        )
        page.wait_for_timeout(1500)
        assert runtime_requests(site) == set()
        assert page.evaluate("document.getElementById('second').state") == "idle"
        # A click is the visitor asking: Python starts, Save-Data or not.
        page.evaluate("document.getElementById('second').remove()")
        page.click("site-agent >> .launcher")
        page.wait_for_function(f"{EL}.state !== 'idle'")
    finally:
        context.close()
