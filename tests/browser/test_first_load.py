"""What the demo shop loads before the first interaction: only the launcher and what
registering its tools needs (docs/performance.md, "Bytes before the first interaction").

``examples/demo-shop.html`` registers its WebMCP tools at load, one of them a ``<form
toolname>``. In the shim lane the page gets the shim's registration code (``web/webmcp/core.js``,
``schema.js``, and ``forms.js`` for the form); running a tool (``web/webmcp/calls.js`` with
``arguments.js``) and running a form tool (``web/webmcp/form-run.js``) load on the first call.
The native lane loads none of ``web/webmcp/`` beyond ``shim.js``. The demo site records every
request; no test here starts Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from element_support import start_site

from pysite_agent.cli.demo import DemoServer

pytestmark = pytest.mark.browser

#: Both lanes: the loader, the element's launcher and the shim's installer.
LAUNCHER = {
    "/loader.js",
    "/web/element/element.js",
    "/web/element/strings.js",
    "/web/element/dom.js",
    "/web/runtime/settings.js",
    "/web/webmcp/shim.js",
}
#: The shim lane adds what registration needs, the form tool's included.
REGISTRATION = {"/web/webmcp/core.js", "/web/webmcp/schema.js", "/web/webmcp/forms.js"}
#: What running a tool needs, and running a form tool: never before the first call.
CALLS = {"/web/webmcp/calls.js", "/web/webmcp/arguments.js"}
FORM_RUN = "/web/webmcp/form-run.js"


@pytest.fixture(scope="module")
def site() -> Iterator[DemoServer]:
    server = start_site()
    yield server
    server.stop()


def scripts(site: DemoServer) -> set[str]:
    """The project's script files the page fetched (the page's own files left out)."""
    paths = {path.split("?")[0] for method, path, _status in site.requests if method == "GET"}
    return {p for p in paths if p == "/loader.js" or p.startswith("/web/")}


def open_shop(page: Any, site: DemoServer) -> None:
    page.mouse.move(0, 0)
    site.requests.clear()
    page.goto(site.url + "demo-shop.html")
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_timeout(1500)


def test_before_the_first_interaction_only_the_launcher_and_registration(
    page: Any, site: DemoServer, lane: str
) -> None:
    open_shop(page, site)
    names = page.evaluate(
        "document.modelContext.getTools().then((tools) => tools.map((t) => t.name))"
    )
    assert "send_feedback" in names, names  # the form tool is listed at once
    want = LAUNCHER | (REGISTRATION if lane == "shim" else set())
    got = scripts(site)
    assert got == want, (
        f"{lane} lane: before the first interaction the demo shop must load only the launcher "
        f"and what registration needs (running a tool or a form tool loads on its first call); "
        f"loaded too early: {sorted(got - want)}; missing: {sorted(want - got)}"
    )


def test_a_form_tool_call_loads_what_running_it_needs(
    page: Any, site: DemoServer, lane: str
) -> None:
    open_shop(page, site)
    page.evaluate(
        """() => {
        window.formEvents = [];
        const form = document.getElementById('feedback-form');
        for (const type of ['input', 'change', 'submit']) {
          form.addEventListener(type, (e) => {
            window.formEvents.push(type === 'submit' ? `submit:${e.agentInvoked}` : type);
          });
        }
        const mc = document.modelContext;
        mc.addEventListener('toolactivated', (e) => window.formEvents.push(e.type));
        window.formCall = mc.getTools()
          .then((tools) => tools.find((t) => t.name === 'send_feedback'))
          .then((tool) => mc.executeTool(tool, { message: 'Hello' }))
          .then((r) => ({ r }), (e) => ({ e: `${e.name}: ${e.message}` }));
      }"""
    )
    page.wait_for_function(
        "document.getElementById('feedback-message').value === 'Hello'", timeout=5000
    )
    if lane == "shim":
        assert FORM_RUN in scripts(site), "the form tool ran without web/webmcp/form-run.js"
        assert scripts(site) >= CALLS, "a tool ran without web/webmcp/calls.js"
    page.click("#feedback-form button[type=submit]")
    # The page's own submit listener answers with respondWith().
    assert page.evaluate("window.formCall") == {"r": 'The note was sent to the shop team: "Hello"'}
    events = page.evaluate("window.formEvents")
    assert "submit:true" in events, events
    if lane == "shim":  # the order the shim keeps (Chromium 156 fires no toolactivated here)
        assert events == ["input", "change", "toolactivated", "submit:true"], events
