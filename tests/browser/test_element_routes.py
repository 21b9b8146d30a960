"""A single-page app's route changes in the trace, end to end in headless Chromium (both lanes,
both runtimes): ``history.pushState``/``replaceState`` and back/forward (``popstate``) add a
``page`` step, as a real navigation does, only when the origin and path change.

The page (served by Playwright's router on the demo site's origin) has a read-only tool
``navigate`` that changes the route, ``place_order`` that asks first, and a scripted model that
calls the tools in ``window.__plan`` in order, then answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import BOOT_TIMEOUT_MS, EL, RECORDER, start_site

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>single-page app</title><script>sessionStorage.clear();{recorder}</script></head>
<body><site-agent models="demo" {attrs}></site-agent>
<script type="module" src="/loader.js"></script>
<script type="module">
window.__plan = [];
const mc = document.modelContext;
mc.registerTool({
  name: 'navigate', description: 'Change the route', annotations: { readOnlyHint: true },
  inputSchema: { type: 'object', properties: { how: { type: 'string' }, to: { type: 'string' } } },
  execute: async ({ how, to }) => {
    if (how === 'push') history.pushState({}, '', to);
    else if (how === 'replace') history.replaceState({}, '', to);
    else if (how === 'hash') location.hash = to;
    else {
      const back = new Promise((resolve) => addEventListener('popstate', resolve, { once: true }));
      history.back();
      await back;
    }
    return location.pathname + location.search + location.hash;
  },
});
mc.registerTool({
  name: 'place_order', description: 'Place the order', annotations: { readOnlyHint: false },
  inputSchema: { type: 'object', properties: {} },
  execute: () => 'The order is placed.',
});
customElements.whenDefined('site-agent').then(() => {
  document.querySelector('site-agent').options = { model: { name: 'plan', respond(request) {
    const last = request.messages.map((m) => m.role).lastIndexOf('user');
    const done = request.messages.slice(last).filter((m) => m.role === 'tool').length;
    const next = window.__plan[done];
    return next ? { type: 'tool', name: next[0], arguments: next[1] }
      : { type: 'answer', text: 'done' };
  } } };
});
</script>
</body></html>"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["worker", "main"])
def app(request: pytest.FixtureRequest, page: Any, site: Any) -> Any:
    runtime = request.param
    attrs = f'runtime="{runtime}" max-steps="10"'
    body = PAGE.replace("{attrs}", attrs).replace("{recorder}", RECORDER)
    page.route("**/spa/**", lambda route: route.fulfill(content_type="text/html", body=body))
    page.goto(site.url + "spa/index.html")
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    return page


def ask(page: Any, text: str, plan: list[Any]) -> None:
    page.evaluate(
        f"""([text, plan]) => {{
        window.__plan = plan;
        window.__done.length = 0;
        {EL}.ask(text).catch(() => {{}});
    }}""",
        [text, plan],
    )


def done(page: Any) -> dict[str, Any]:
    page.wait_for_function("window.__done.length > 0", timeout=30_000)
    result: dict[str, Any] = page.evaluate("window.__done.at(-1)")
    assert result["status"] == "answered", result
    return result


def pages(result: dict[str, Any]) -> list[str]:
    return [s["path"] for s in result["trace"]["steps"] if s["kind"] == "page"]


def test_route_changes_add_page_steps_without_duplicates(app: Any, lane: str) -> None:
    plan = [
        ["navigate", {"how": "push", "to": "/spa/orders"}],  # a new path: a step
        ["navigate", {"how": "replace", "to": "/spa/orders"}],  # the same address: none
        ["navigate", {"how": "push", "to": "/spa/orders?tab=2#top"}],  # query, fragment: none
        ["navigate", {"how": "hash", "to": "x"}],  # a fragment alone: none
        ["navigate", {"how": "push", "to": "/spa/cart"}],  # a step
        ["navigate", {"how": "back"}],  # popstate, back to /spa/orders: a step
    ]
    ask(app, "walk the routes", plan)
    result = done(app)
    assert pages(result) == ["/spa/index.html", "/spa/orders", "/spa/cart", "/spa/orders"]
    steps = result["trace"]["steps"]
    kinds = [s["kind"] for s in steps]
    # Each step lands while its call runs: after the call, before its result.
    first_call, first_result = kinds.index("tool-call"), kinds.index("tool-result")
    assert first_call < kinds.index("page", first_call) < first_result, kinds
    page_steps = [s for s in steps if s["kind"] == "page"]
    assert all(set(s) == {"kind", "at", "origin", "path"} for s in page_steps), page_steps
    assert "tab=2" not in json.dumps(page_steps) and "#" not in json.dumps(page_steps)
    # The next run starts on the route the app is on now, not the one Python started on.
    ask(app, "where am I", [])
    assert pages(done(app)) == ["/spa/orders"]


def test_an_allow_pending_across_a_route_change_is_honoured(app: Any, lane: str) -> None:
    ask(app, "order it", [["place_order", {}]])
    card = app.locator("site-agent >> .card")
    card.wait_for(timeout=15_000)
    app.evaluate("history.pushState({}, '', '/spa/checkout')")  # the app moves on meanwhile
    app.wait_for_timeout(300)
    assert card.is_visible()  # the element and its tool stayed: the card waits
    card.locator(".allow").click()
    result = done(app)
    steps = result["trace"]["steps"]
    [ran] = [s for s in steps if s["kind"] == "tool-result"]
    assert (ran["name"], ran["outcome"], ran["isError"]) == ("place_order", "ran", False), ran
    assert pages(result) == ["/spa/orders", "/spa/checkout"]
    kinds = [s["kind"] for s in steps]
    # Recorded while the card waited: after the call, before the visitor's decision.
    assert kinds.index("tool-call") < kinds.index("page", 2) < kinds.index("decision"), kinds
