"""Start on intent: when the pointer nears the launcher or the launcher gets keyboard focus,
the worker's Python starts (its files fetched on the way) without the panel opening; in the
page's own runtime (``runtime="main"``) only the files are fetched; never on idle, never with
Save-Data. A click that follows joins the start already under way (one start, not two).

The demo shop on the demo server, which records every request.
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
    "/pyodide/python_stdlib_pyc.zip",  # the standard library with its bytecode (docs/bundle.md)
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


def marks(page: Any, name: str) -> int:
    return int(page.evaluate(f"performance.getEntriesByName('site-agent:{name}').length"))


def test_pointer_near_the_launcher_starts_the_workers_python(page: Any, site: DemoServer) -> None:
    rect = load(page, site)
    page.mouse.move(rect["left"] - 60, rect["top"] + 5, steps=5)  # 60 px left of it
    got = wait_prefetched(page, site)
    assert {p for p in got if p.endswith(".whl")} >= {
        "/pyodide/pysite_agent-0.1.0-py3-none-any.whl",
    }
    assert "/pyodide/micropip-0.11.1-py3-none-any.whl" not in got  # only what boot needs
    assert python_started(page)
    assert marks(page, "intent-start") == 1
    # Python started in the worker, in the background: the panel stays closed, the element idle.
    page.wait_for_function(
        "performance.getEntriesByName('site-agent:boot-end').length > 0", timeout=120_000
    )
    assert page.evaluate(f"{EL}.state") == "idle"
    assert page.evaluate(f"{EL}.hasAttribute('open')") is False
    assert marks(page, "ready") == 0
    # The click joins it: ready without a second start, and boot.js's steps are on the page's
    # timeline (web/runtime/start.js places the worker's marks).
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    assert marks(page, "boot-start") == 1
    for name in ("boot:begin", "boot:lock", "boot:core", "boot:import:pysite_agent", "boot:end"):
        assert marks(page, name) == 1, name
    assert marks(page, "boot:fetch:pyodide.asm.wasm:end") == 1
    order = page.evaluate(
        """() => ['boot-start', 'boot:begin', 'boot:core', 'boot:end', 'open', 'ready'].map(
            (n) => performance.getEntriesByName('site-agent:' + n)[0].startTime)"""
    )
    assert order == sorted(order), order


def test_main_thread_runtime_only_prefetches(page: Any, site: DemoServer) -> None:
    """Starting Python in the page would hold its thread: on intent, only the files."""
    rect = load(page, site)
    page.evaluate(f"{EL}.setAttribute('runtime', 'main')")
    page.mouse.move(rect["left"] - 60, rect["top"] + 5, steps=5)
    wait_prefetched(page, site)
    page.wait_for_timeout(300)
    assert not python_started(page)
    assert marks(page, "intent-start") == 0
    assert marks(page, "prefetch") == 1
    assert page.evaluate(f"{EL}.state") == "idle"


def test_keyboard_focus_on_the_launcher_starts_python(page: Any, site: DemoServer) -> None:
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
    assert marks(page, "intent-start") == 1


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
