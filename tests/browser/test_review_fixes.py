"""Defects a fresh visitor of the page found, each end to end in headless Chromium (worker mode,
the default runtime, unless a test says otherwise):

- a JS model's reply nested thousands of levels deep fails fast as ``bad-reply`` (the worker
  channel checks depth before posting, and a message that cannot be read fails what waits);
- a tool that ran but whose return value cannot be serialised (a cycle, a BigInt) is reported
  as run, with why its result is unknown, in both runtimes and both WebMCP lanes (the model must
  not retry it; native WebMCP alone would reject such a call like a failure).

Pages are served by Playwright's router on the demo site's origin (the bundle as a site has it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, start_site

from pysite_agent.core.results import NO_RESULT_TEXT

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>review fixes</title>
<script>sessionStorage.clear();</script>
</head>
<body><site-agent models="demo" {attrs}></site-agent>
<script type="module" src="/loader.js"></script>
<script type="module">{script}</script>
</body></html>"""

# A JS model that calls `tool` once (with `args`), then answers; the last tool message is kept.
SCRIPTED_MODEL = """
window.scriptedModel = (tool, args = {}) => ({
  name: 'scripted',
  respond(request) {
    const called = request.messages.some((m) => m.role === 'tool');
    if (!called) return { type: 'tool', name: tool, arguments: args };
    window.__lastToolMessage = request.messages.filter((m) => m.role === 'tool').at(-1);
    return { type: 'answer', text: 'done' };
  },
});
"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture
def open_page(page: Any, site: Any, page_log: Any) -> Any:
    def go(script: str = "", attrs: str = "") -> Any:
        path = f"review-fixes-{abs(hash((script, attrs)))}.html"
        body = PAGE.replace("{script}", SCRIPTED_MODEL + script).replace("{attrs}", attrs)
        page.route(
            f"**/{path}",
            lambda route: route.fulfill(status=200, content_type="text/html", body=body),
        )
        page.goto(site.url + path)
        wait_until(page, "() => customElements.get('site-agent') !== undefined")
        return page

    return go


def wait_until(page: Any, predicate: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.05)


def boot(page: Any) -> None:
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'ready'")


def ask(page: Any, text: str, timeout_s: float = 30) -> dict[str, Any]:
    page.evaluate(
        """(text) => {
            window.__ask = {};
            document.querySelector('site-agent').ask(text).then(
              (r) => { window.__ask.result = r; },
              (e) => { window.__ask.error = { code: e.code, message: e.message }; });
        }""",
        text,
    )
    wait_until(page, "() => window.__ask.result || window.__ask.error", timeout_s)
    outcome: dict[str, Any] = page.evaluate("window.__ask")
    assert "result" in outcome, outcome
    return outcome["result"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- deep replies


@pytest.mark.parametrize("depth", [200, 2000, 20000])
def test_a_deeply_nested_model_reply_fails_fast_as_bad_reply(
    open_page: Any, page_log: Any, depth: int
) -> None:
    page = open_page(
        f"""
        const deep = {{}};
        let at = deep;
        for (let i = 0; i < {depth}; i++) {{ at.d = {{}}; at = at.d; }}
        window.addEventListener('DOMContentLoaded', () => {{
          document.querySelector('site-agent').options = {{
            model: {{ respond: () => ({{ type: 'tool', name: 'echo', arguments: {{ deep }} }}) }},
          }};
        }});
        """
    )
    boot(page)
    started = time.monotonic()
    result = ask(page, "go", timeout_s=20)
    assert time.monotonic() - started < 15
    assert result["status"] == "error", result
    assert result["error"]["code"] == "bad-reply", result
    assert "nested deeper" in result["error"]["message"]
    assert not [e.text for e in page_log.console if "another version" in e.text]


# ---------------------------------------------------------------------------- unreadable results


@pytest.mark.parametrize("runtime", ["worker", "main"])
@pytest.mark.parametrize(
    ("made", "why"),
    [
        ("(() => { const c = { id: 7 }; c.self = c; return c; })()", "circular"),
        ("({ count: 12345678901234567890n })", "BigInt"),
    ],
    ids=["cycle", "bigint"],
)
def test_a_tool_that_ran_with_an_unreadable_result_is_reported_as_run(
    open_page: Any, lane: str, runtime: str, made: str, why: str
) -> None:
    page = open_page(
        f"""
        window.__runs = 0;
        document.modelContext.registerTool({{
          name: 'place_order', description: 'Place the order', title: 'Place the order',
          inputSchema: {{ type: 'object', properties: {{}} }},
          annotations: {{ readOnlyHint: true }},
          execute: () => {{ window.__runs += 1; return {made}; }},
        }});
        window.addEventListener('DOMContentLoaded', () => {{
          document.querySelector('site-agent').options = {{
            model: window.scriptedModel('place_order'),
          }};
        }});
        """,
        f'runtime="{runtime}"',
    )
    boot(page)
    result = ask(page, "order")
    assert result["status"] == "answered", result
    assert page.evaluate("window.__runs") == 1
    [step] = [s for s in result["trace"]["steps"] if s["kind"] == "tool-result"]
    # Both lanes alike: Chromium's own executeTool would reject such a value as if the tool had
    # failed; the loader registers the page's tools with their result made readable first.
    assert step["outcome"] == "ran", step
    assert step["isError"] is True
    assert "place_order ran, but its return value could not be read" in step["text"]
    assert why in step["text"], step["text"]
    told = page.evaluate("JSON.stringify(window.__lastToolMessage)")
    assert "do not call it again" in told
    assert "invocation failed" not in told


def test_values_json_writes_otherwise_are_the_same_result_in_both_lanes(
    open_page: Any, lane: str
) -> None:
    # A function, a DOM node and a BigInt on its own: what native executeTool makes of each
    # (measured in Chromium 156) and what the shim makes of it agree; each ran, none failed.
    page = open_page(
        """
        const made = { fn: () => () => 1, node: () => document.body, big: () => 10n };
        for (const [name, make] of Object.entries(made)) {
          document.modelContext.registerTool({
            name, description: `returns ${name}`, inputSchema: { type: 'object', properties: {} },
            annotations: { readOnlyHint: true }, execute: make,
          });
        }
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = { model: { name: 'three', respond(r) {
            const done = r.messages.filter((m) => m.role === 'tool').length;
            const next = Object.keys(made)[done];
            if (!next) return { type: 'answer', text: 'ok' };
            return { type: 'tool', name: next, arguments: {} };
          } } };
        });
        """
    )
    boot(page)
    result = ask(page, "go")
    assert result["status"] == "answered", result
    steps = {s["name"]: s for s in result["trace"]["steps"] if s["kind"] == "tool-result"}
    got = {name: (s["outcome"], s["isError"], s["text"]) for name, s in steps.items()}
    assert got == {
        "fn": ("ran", False, NO_RESULT_TEXT),
        "node": ("ran", False, "{}"),
        "big": ("ran", False, "10"),
    }, lane


# ---------------------------------------------------------------------------- form hand-off


@pytest.mark.parametrize(
    ("button", "said"),
    [
        (
            "<button>Request \n  Reservation</button>",
            "Check the form on the page and press Request Reservation.",
        ),
        (
            '<input type="submit" value="Book now">',
            "Check the form on the page and press Book now.",
        ),
        (
            '<button type="button">Help</button><button aria-label="Reserve a table">→</button>',
            "Check the form on the page and press Reserve a table.",
        ),
        ('<input type="submit">', "Check the form on the page and send it."),
    ],
    ids=["text", "value", "aria-label", "unlabelled"],
)
def test_the_form_hand_off_names_the_forms_own_submit_button(
    open_page: Any, button: str, said: str
) -> None:
    page = open_page(
        f"""
        const form = document.createElement('form');
        form.setAttribute('toolname', 'book_table');
        form.setAttribute('tooldescription', 'Requests a table reservation for a guest.');
        form.innerHTML = '<label>Guest <input name="guest"></label>' + {button!r};
        form.addEventListener('submit', (e) => e.preventDefault());
        document.body.prepend(form);
        window.addEventListener('DOMContentLoaded', () => {{
          document.querySelector('site-agent').options = {{
            model: window.scriptedModel('book_table', {{ guest: 'Ada' }}),
          }};
        }});
        """
    )
    boot(page)
    page.evaluate("() => { document.querySelector('site-agent').ask('book a table'); }")
    page.locator("site-agent >> .card .allow").click()
    line = page.locator("site-agent >> .log .handoff")
    line.wait_for()
    assert line.inner_text() == said
    page.evaluate(f"() => {{ {EL}.stop(); }}")
