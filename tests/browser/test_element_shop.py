"""``<site-agent>`` on the demo shop, end to end in headless Chromium, in both lanes.

One page per module and lane: the shop is opened and Python booted once, and every test starts
from a fresh conversation, an empty cart and the default attributes (``Shop.reset``). The
model is demo rules (not AI), so every run is deterministic. Assertions look at what the page
shows (the cart, the card, the log) as well as at the agent's events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from element_support import EL, RECORDER, Shop, start_site

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


# ---------------------------------------------------------------------------- lanes


def test_lane_model_context(fresh: Shop, lane: str) -> None:
    """Native lane: document.modelContext is the browser's own; shim lane: the shim."""
    state = fresh.page.evaluate(
        """async () => {
            const m = await import('/loader.js');
            return { native: m.hasNativeModelContext(), shim: m.isShim(document.modelContext),
                     shown: document.documentElement.dataset.webmcp };
        }"""
    )
    if lane == "native":
        assert state == {"native": True, "shim": False, "shown": "native"}
    else:
        assert state == {"native": False, "shim": True, "shown": "shim"}


# ---------------------------------------------------------------------------- the rules


def test_read_only_search_runs_without_asking(fresh: Shop) -> None:
    result = fresh.ask_and_wait("find red mugs")
    assert result["status"] == "answered"
    assert "Red enamel mug" in result["answer"]
    assert fresh.events("confirm-request") == []
    [decision] = fresh.events("confirm-result")
    assert decision["decision"] == {"allowed": True, "by": "read-only"}
    assert "Red enamel mug" in fresh.log_text()
    assert fresh.cart_count() == 0


def test_add_to_cart_asks_and_allow_changes_the_cart(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    card = fresh.card()
    assert card.locator("h3").inner_text() == "Allow Add to cart?"
    assert "Add a product to the cart" in card.inner_text()
    labels = card.locator("dt").all_inner_texts()
    values = card.locator("dd").all_inner_texts()
    assert dict(zip(labels, values, strict=True)) == {"Product": "mugs", "Quantity": "2"}
    assert "can change something" in card.locator(".why").inner_text()
    assert fresh.cart_count() == 0  # nothing ran yet
    card.locator(".allow").click()
    fresh.wait_cart(2)
    assert fresh.cart_items() == ["2 × Classic mug — $24.00"]
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "answered"
    assert "Added 2 × Classic mug" in outcome["result"]["answer"]
    [request] = fresh.events("confirm-request")
    assert request["request"]["reason"] == "not-read-only"
    assert request["request"]["lines"] == [
        {"key": "product", "label": "Product", "value": "mugs"},
        {"key": "quantity", "label": "Quantity", "value": "2"},
    ]


def test_deny_leaves_the_cart_and_the_model_is_told(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card().locator(".deny").click()
    outcome = fresh.last_ask()
    assert fresh.cart_count() == 0
    [decision] = fresh.events("confirm-result")
    assert decision["decision"] == {"allowed": False, "by": "visitor", "reason": "not-read-only"}
    assert fresh.events("tool-result") == []  # the tool never ran
    # Demo rules answer from the tool message the bridge sent: a denial.
    assert outcome["result"]["answer"] == "I did not run add_to_cart: it was not allowed."
    assert "Not done: Add to cart was not allowed." in fresh.log_text()  # the title, as on the card


def test_checkout_asks_even_when_pre_approved(fresh: Shop) -> None:
    fresh.reset(**{"pre-approved": "add_to_cart checkout"})
    result = fresh.ask_and_wait("add one mug")  # pre-approved: no card
    assert result["status"] == "answered"
    assert fresh.events("confirm-request") == []
    assert fresh.cart_count() == 1
    fresh.ask("checkout")
    card = fresh.card()
    assert card.get_attribute("data-reason") == "consequential"
    assert "consequential" in card.locator(".why").inner_text()
    card.locator(".deny").click()
    fresh.last_ask()
    assert fresh.cart_count() == 1
    assert fresh.page.inner_text("#order-status") == ""


def test_after_the_injected_review_a_pre_approved_add_asks(fresh: Shop) -> None:
    fresh.reset(**{"pre-approved": "add_to_cart"})
    result = fresh.ask_and_wait("show the reviews of the classic mug")
    assert result["status"] == "answered"
    [tool_result] = fresh.events("tool-result")
    assert tool_result["untrusted"] is True
    assert "IMPORTANT SYSTEM MESSAGE" in tool_result["text"]
    assert fresh.cart_count() == 0  # the injection did nothing
    fresh.ask("add one mug")
    card = fresh.card()
    assert card.get_attribute("data-reason") == "after-untrusted"
    card.locator(".allow").click()
    fresh.wait_cart(1)
    fresh.last_ask()
    assert fresh.page.evaluate("window.shop.orders.length") == 0


# ---------------------------------------------------------------------------- the card


def test_escape_denies_a_pending_card(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    assert fresh.focused() == "shadow:box card"
    fresh.page.keyboard.press("Escape")
    fresh.no_card()
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "answered"
    [decision] = fresh.events("confirm-result")
    assert decision["decision"]["allowed"] is False
    assert fresh.cart_count() == 0
    # Escape closed only the card: the panel stays, focus goes back to the input.
    assert fresh.page.locator("site-agent >> .panel").is_visible()
    assert fresh.focused() == "shadow:textarea"


def test_closing_the_panel_denies_and_focus_returns_to_the_launcher(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    fresh.page.click("site-agent >> .close")
    outcome = fresh.last_ask()
    assert fresh.events("confirm-result")[0]["decision"]["allowed"] is False
    assert outcome["result"]["status"] == "answered"
    assert fresh.cart_count() == 0
    assert not fresh.page.locator("site-agent >> .panel").is_visible()
    assert fresh.focused() == "shadow:launcher"
    assert fresh.page.get_attribute("site-agent >> .launcher", "aria-expanded") == "false"
    fresh.page.keyboard.press("Enter")  # the launcher has focus: Enter opens the panel again
    assert fresh.page.locator("site-agent >> .panel").is_visible()
    assert fresh.focused() == "shadow:textarea"


def test_stop_aborts_and_closes_the_card(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    stop = fresh.page.locator("site-agent >> .stop")
    assert stop.is_visible()
    stop.click()
    fresh.no_card()
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "aborted"
    assert outcome["result"]["error"]["code"] == "aborted"
    assert fresh.cart_count() == 0
    # "Stopped." once: on the status line, not again in the log.
    assert fresh.page.inner_text("site-agent >> .status") == "Stopped."
    assert fresh.page.inner_text("site-agent >> .panel").count("Stopped.") == 1
    assert not stop.is_visible()
    assert fresh.done()[-1]["status"] == "aborted"
    # The card ended as a denial recorded with its cause, in the event and in the trace.
    [decision] = fresh.events("confirm-result")
    assert decision["decision"]["allowed"] is False
    assert decision["decision"]["cause"] == "stopped"
    steps = fresh.done()[-1]["trace"]["steps"]
    assert [s.get("cause") for s in steps if s["kind"] == "decision"] == ["stopped"]


def test_hiding_the_page_denies_the_card_and_the_run_goes_on(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    fresh.page.evaluate(
        """() => {
            const hidden = { value: 'hidden', configurable: true };
            Object.defineProperty(document, 'visibilityState', hidden);
            document.dispatchEvent(new Event('visibilitychange'));
            delete document.visibilityState;  // back to the real (visible) value
        }"""
    )
    fresh.no_card()
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "answered"
    assert fresh.cart_count() == 0
    [decision] = fresh.events("confirm-result")
    assert decision["decision"]["allowed"] is False
    assert decision["decision"]["cause"] == "hidden"
    steps = outcome["result"]["trace"]["steps"]
    assert [s.get("cause") for s in steps if s["kind"] == "decision"] == ["hidden"]


def test_the_status_line_names_the_running_tool(fresh: Shop) -> None:
    fresh.page.evaluate(
        """() => {
            const status = document.querySelector('site-agent').shadowRoot.querySelector('.status');
            window.__statuses = [];
            new MutationObserver(() => window.__statuses.push(status.textContent))
              .observe(status, { childList: true, characterData: true, subtree: true });
        }"""
    )
    fresh.ask("add two mugs to my cart")
    fresh.card().locator(".allow").click()
    assert fresh.last_ask()["result"]["status"] == "answered"
    statuses: list[str] = fresh.page.evaluate("window.__statuses")
    allowed = statuses.index("Allowed.") if "Allowed." in statuses else -1
    assert allowed >= 0, statuses
    # After Allow, while the tool runs, the line says which tool runs (not "Thinking…").
    assert statuses[allowed + 1] == "Using Add to cart…", statuses


def test_a_second_ask_while_running_is_busy(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    second = fresh.page.evaluate(
        """() => document.querySelector('site-agent').ask('find mugs').then(
            (r) => ({ result: r }), (e) => ({ error: { code: e.code, name: e.name } }))"""
    )
    assert second == {"error": {"code": "busy", "name": "SiteAgentError"}}
    fresh.card().locator(".deny").click()
    assert fresh.last_ask()["result"]["status"] == "answered"


def test_a_card_whose_tool_is_registered_again_is_withdrawn_and_nothing_runs(
    fresh: Shop,
) -> None:
    fresh.ask("add two mugs to my cart")
    card = fresh.card()
    # The page re-registers the tool while the visitor looks at the card: the card goes.
    fresh.page.evaluate("() => window.shop.register('add_to_cart')")
    card.wait_for(state="detached", timeout=5_000)
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "answered"
    assert fresh.cart_count() == 0
    assert fresh.events("tool-result") == []
    [decision] = fresh.events("confirm-result")
    assert decision["decision"]["allowed"] is False
    assert decision["decision"]["cause"] == "withdrawn"


# ---------------------------------------------------------------------------- events, trace


def test_events_bubble_out_and_the_trace_replays_with_zero_differences(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card().locator(".allow").click()
    fresh.wait_cart(2)
    outcome = fresh.last_ask()
    kinds = [e["type"] for e in fresh.events()]
    assert kinds == [
        "thinking",
        "tool-call",
        "confirm-request",
        "confirm-result",
        "tool-result",
        "thinking",
        "answer",
        "done",
    ]
    [done] = fresh.done()
    assert done == outcome["result"]
    trace = done["trace"]
    assert trace["version"] == 1 and trace["status"] == "answered"
    assert fresh.page.evaluate("document.querySelector('site-agent').lastTrace") == trace

    # Replay in the page through the Python API, against the page's own tools.
    fresh.page.evaluate("window.shop.reset()")
    replayed = fresh.page.evaluate(
        """async (traceJson) => {
            const { loadRuntime } = await import('/loader.js');
            const py = await loadRuntime();
            const ns = py.toPy({ trace_json: traceJson });
            try {
              return await py.runPythonAsync(`
import json
from pysite_agent import recorded_decisions, replay
from pysite_agent.tools.model_context import ModelContextSource

trace = json.loads(trace_json)
source = ModelContextSource()
try:
    result = await replay(trace, tools=source, confirm=recorded_decisions(trace))
finally:
    source.close()
json.dumps(result.to_json())
`, { globals: ns });
            } finally { ns.destroy(); }
        }""",
        json.dumps(trace),
    )
    result = json.loads(replayed)
    assert result["differences"] == 0
    assert [s["status"] for s in result["steps"]] == ["ran"]
    assert fresh.cart_count() == 2  # the replay changed the visible cart again

    # The same through the element's JS handle.
    fresh.page.evaluate("window.shop.reset()")
    again = fresh.page.evaluate(
        "(t) => document.querySelector('site-agent').agent.replay(t, { confirm: 'recorded' })",
        trace,
    )
    assert again["differences"] == 0
    assert fresh.cart_count() == 2


def test_agent_handle_runs_and_lists_tools(fresh: Shop, lane: str) -> None:
    out = fresh.page.evaluate(
        """async () => {
            const agent = document.querySelector('site-agent').agent;
            const tools = (await agent.tools()).map((t) => t.name);
            const run = agent.run('find tote bags');
            const seen = [];
            for await (const event of run) seen.push(event.type);
            const result = await run.done;
            return { tools, seen, status: result.status, model: agent.model };
        }"""
    )
    # send_feedback is the declarative form tool (native, and the shim's form tools).
    expected = [
        "add_to_cart",
        "checkout",
        "get_reviews",
        "open_product",
        "search_products",
        "send_feedback",
    ]
    assert sorted(out["tools"]) == sorted(expected)
    assert out["seen"][0] == "thinking" and out["seen"][-1] == "done"
    assert out["status"] == "answered"
    assert out["model"] == "demo rules (not AI)"


# ---------------------------------------------------------------------------- UI


def test_model_name_focus_order_and_aria_live(fresh: Shop) -> None:
    page = fresh.page
    assert page.inner_text("site-agent >> .model") == "Model: demo rules (not AI)"
    assert page.get_attribute("site-agent >> .log", "role") == "log"
    assert page.get_attribute("site-agent >> .log", "aria-live") == "polite"
    assert page.get_attribute("site-agent >> .status", "role") == "status"
    assert page.get_attribute("site-agent >> .panel", "aria-labelledby") == "heading"
    # Close, then open from the launcher: focus goes to the input.
    page.click("site-agent >> .close")
    assert fresh.focused() == "shadow:launcher"
    page.click("site-agent >> .launcher")
    assert fresh.focused() == "shadow:textarea"
    # Tab order inside the panel: input, send (stop is hidden while idle).
    page.keyboard.press("Tab")
    assert fresh.focused() == "shadow:primary send"
    # A new answer is added to the live log; the card is announced in the status region.
    fresh.ask("add two mugs to my cart")
    fresh.card()
    assert "Confirmation needed: Add to cart" in page.inner_text("site-agent >> .status")
    assert fresh.focused() == "shadow:box card"
    page.keyboard.press("Tab")
    assert fresh.focused() == "shadow:deny"
    page.keyboard.press("Tab")
    assert fresh.focused() == "shadow:primary allow"
    page.keyboard.press("Enter")  # Allow
    fresh.wait_cart(2)
    fresh.last_ask()
    assert fresh.focused() == "shadow:textarea"
    answers = page.locator("site-agent >> .log .assistant").all_inner_texts()
    assert answers and "Added 2 × Classic mug" in answers[-1]


def test_model_and_tool_text_is_never_html(fresh: Shop) -> None:
    page = fresh.page
    page.evaluate(
        """() => {
            window.__probe = new AbortController();
            return document.modelContext.registerTool({
              name: 'html_probe',
              description: '<img src=x onerror="window.pwned=1"> probe <b>bold</b>',
              inputSchema: { type: 'object', properties: { note: { type: 'string',
                title: '<i>Note</i>' } }, required: ['note'] },
              annotations: { readOnlyHint: false },
              execute: ({ note }) => '<script>window.pwned=2</script>' + note,
            }, { signal: window.__probe.signal });
        }"""
    )
    try:
        fresh.ask("html probe <u>underlined</u>")
        card = fresh.card()
        assert "<img src=x" in card.locator(".description").inner_text()
        assert card.locator("dt").inner_text() == "<i>Note</i>"
        card.locator(".allow").click()
        fresh.last_ask()
        tags = page.evaluate(
            """() => [...document.querySelector('site-agent').shadowRoot
                .querySelectorAll('img, b, i, u, script')].map((e) => e.tagName)"""
        )
        assert tags == []
        assert page.evaluate("window.pwned") is None
        assert "<u>underlined</u>" in fresh.log_text()
    finally:
        page.evaluate("window.__probe.abort()")


def test_screenshots_light_and_dark(fresh: Shop, artifacts_dir: Path, lane: str) -> None:
    page = fresh.page
    fresh.ask("add two mugs to my cart")
    fresh.card()
    colors = {}
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            path = artifacts_dir / f"site-agent-card-{lane}-{scheme}.png"
            page.screenshot(path=str(path))
            assert path.stat().st_size > 10_000
            colors[scheme] = page.eval_on_selector(
                "site-agent >> .panel", "el => getComputedStyle(el).backgroundColor"
            )
    finally:
        page.emulate_media(color_scheme="light")
        fresh.card().locator(".deny").click()
        fresh.last_ask()
    assert colors["light"] == "rgb(255, 255, 255)"
    assert colors["dark"] != colors["light"]


def test_theming_custom_properties_and_parts(fresh: Shop) -> None:
    page = fresh.page
    page.add_style_tag(
        content="site-agent { --site-agent-accent: rgb(1, 2, 3); --site-agent-radius: 3px; }"
        " site-agent::part(panel) { outline: 5px solid rgb(9, 8, 7); }"
        " site-agent::part(launcher) { letter-spacing: 3px; }"
    )
    styles = page.evaluate(
        """() => {
            const root = document.querySelector('site-agent').shadowRoot;
            const launcher = getComputedStyle(root.querySelector('.launcher'));
            const panel = getComputedStyle(root.querySelector('.panel'));
            return { accent: launcher.backgroundColor, radius: panel.borderTopLeftRadius,
                     outline: panel.outlineColor, spacing: launcher.letterSpacing };
        }"""
    )
    assert styles == {
        "accent": "rgb(1, 2, 3)",
        "radius": "3px",
        "outline": "rgb(9, 8, 7)",
        "spacing": "3px",
    }


def test_options_change_starts_a_fresh_conversation_after_the_run(fresh: Shop) -> None:
    page = fresh.page
    fresh.ask("add two mugs to my cart")
    fresh.card()
    # Change options while the run waits for the visitor: nothing happens until it ends.
    page.evaluate("document.querySelector('site-agent').options = { preApproved: ['add_to_cart'] }")
    fresh.card().locator(".deny").click()
    fresh.last_ask()
    result = fresh.ask_and_wait("add one mug")  # now pre-approved, fresh conversation
    assert result["status"] == "answered"
    assert fresh.cart_count() == 1
    decisions = [e["decision"] for e in fresh.events("confirm-result")]
    assert decisions[-1] == {"allowed": True, "by": "pre-approved"}
    assert "a new conversation starts" in fresh.log_text()
    page.evaluate("document.querySelector('site-agent').options = {}")


def test_a_request_without_a_matching_tool_is_answered_in_words(fresh: Shop) -> None:
    """No DOM fallback: demo rules say what the page offers; nothing is called."""
    result = fresh.ask_and_wait("sing me a song about the weather")
    assert result["status"] == "answered"
    assert re.search(r"can't match that", result["answer"])
    assert fresh.events("tool-call") == []


def test_no_pyproxy_leaks_across_runs(fresh: Shop) -> None:
    """Runs with a card, a denial, a stop and a tool listing leave no PyProxy behind in the
    worker, where the element's Python runs (the default mode)."""
    assert fresh.page.evaluate(f"{EL}.getAttribute('runtime')") is None
    host = "await import('/web/runtime/worker-host.js')"
    count = f"async () => ({host}).workerPyProxies({{ trace: true }})"
    before = fresh.page.evaluate(count)
    assert isinstance(before, int)
    fresh.ask("add two mugs to my cart")
    fresh.card().locator(".allow").click()
    fresh.last_ask()
    fresh.ask("add one mug")
    fresh.card().locator(".deny").click()
    fresh.last_ask()
    fresh.ask("add one mug")
    fresh.card()
    fresh.page.click("site-agent >> .stop")
    fresh.last_ask()
    fresh.ask_and_wait("find mugs")
    fresh.page.evaluate(f"{EL}.agent.tools()")
    fresh.settle(200)
    after = fresh.page.evaluate(f"async () => ({host}).workerPyProxies({{ trace: false }})")
    assert after == before


# ---------------------------------------------------------------------------- reset, titles


def test_reset_then_ask_at_once_starts_a_new_run_and_the_old_one_stays_out(fresh: Shop) -> None:
    """``reset(); ask()`` is not ``busy``; the aborted run's late events ("Not done…",
    "Stopped.", its done) reach neither the cleared log nor the page's events."""
    fresh.ask("add two mugs to my cart")
    fresh.card()
    outcome = fresh.page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            el.reset();
            window.__events.length = 0;
            window.__done.length = 0;
            try {
              return { result: await el.ask('find red mugs') };
            } catch (e) {
              return { error: { code: e.code, message: e.message } };
            }
        }"""
    )
    assert "error" not in outcome, outcome
    assert outcome["result"]["status"] == "answered"
    assert "Red enamel mug" in outcome["result"]["answer"]
    first = fresh.last_ask()  # the reset run's own promise still settles
    assert first["result"]["status"] == "aborted"
    # Its card ended as a denial recorded with the cause "reset".
    steps = first["result"]["trace"]["steps"]
    assert [(s["allowed"], s.get("cause")) for s in steps if s["kind"] == "decision"] == [
        (False, "reset")
    ]
    fresh.settle(300)  # room for anything late
    log = fresh.log_text()
    assert "find red mugs" in log and "Red enamel mug" in log
    for stale in ("add two mugs", "Not done", "Stopped.", "Add to cart"):
        assert stale not in log, (stale, log)
    assert fresh.page.locator("site-agent >> .card").count() == 0
    assert fresh.cart_count() == 0
    assert [e["type"] for e in fresh.events() if e["type"] in ("error", "done")] == ["done"]
    assert [d["status"] for d in fresh.done()] == ["answered"]
    assert fresh.page.evaluate(f"{EL}.lastTrace.status") == "answered"
    assert fresh.page.inner_text("site-agent >> .status") == "Ready."
    assert fresh.page.locator("site-agent >> .send").is_visible()


def test_reset_while_a_card_waits_keeps_each_run_handle_to_its_own_events(fresh: Shop) -> None:
    out = fresh.page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            const collect = async (run) => {
              const seen = [];
              for await (const event of run) seen.push(event.type);
              return { seen, status: (await run.done).status };
            };
            const first = el.agent.run('add two mugs to my cart');
            const firstSeen = collect(first);
            const root = el.shadowRoot;
            for (let i = 0; i < 500 && !root.querySelector('.card'); i++) {
              await new Promise((r) => setTimeout(r, 10));
            }
            el.reset();
            const second = collect(el.agent.run('find tote bags'));
            return { first: await firstSeen, second: await second };
        }"""
    )
    assert out["second"]["status"] == "answered"
    assert out["second"]["seen"][0] == "thinking" and out["second"]["seen"][-1] == "done"
    assert "confirm-request" not in out["second"]["seen"]
    assert "error" not in out["second"]["seen"]
    assert out["first"]["status"] == "aborted"
    assert out["first"]["seen"][:3] == ["thinking", "tool-call", "confirm-request"]
    assert out["first"]["seen"][-1] == "done"
    assert fresh.cart_count() == 0


def test_progress_lines_use_the_tool_title_like_the_card(fresh: Shop) -> None:
    """The card says "Allow Add to cart?"; the lines say "Add to cart", not add_to_cart.
    The events keep their published shape (no title field added to them)."""
    fresh.ask("add two mugs to my cart")
    card = fresh.card()
    running = fresh.page.locator("site-agent >> .log .note").all_inner_texts()
    assert "Using Add to cart…" in running
    card.locator(".allow").click()
    fresh.wait_cart(2)
    fresh.last_ask()
    notes = fresh.page.locator("site-agent >> .log .note").all_inner_texts()
    assert "Add to cart: done." in notes
    fresh.ask("add one mug")
    fresh.card().locator(".deny").click()
    fresh.last_ask()
    fresh.ask_and_wait("find red mugs")
    notes = fresh.page.locator("site-agent >> .log .note").all_inner_texts()
    assert "Not done: Add to cart was not allowed." in notes
    assert "Search products: done." in notes
    assert not any("add_to_cart" in n or "search_products" in n for n in notes)
    [first_call, *_] = fresh.events("tool-call")
    assert set(first_call) == {"type", "call"}
    assert set(first_call["call"]) == {"id", "name", "arguments"}


# ---------------------------------------------------------------------------- layout

BOX = """(selector) => {
    const el = selector.startsWith('site-agent ')
      ? document.querySelector('site-agent').shadowRoot.querySelector(selector.slice(11))
      : document.querySelector(selector);
    const r = el.getBoundingClientRect();
    return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
}"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def inside(box: dict[str, float], width: int, height: int) -> bool:
    return (
        box["left"] >= 0 and box["top"] >= 0 and box["right"] <= width and box["bottom"] <= height
    )


def test_the_cart_stays_in_view_on_a_laptop_and_after_closing_on_a_phone(
    fresh: Shop, artifacts_dir: Path, lane: str
) -> None:
    """1280x720: the cart (left column) is beside the open panel, not under it. 390x844: the
    panel takes the screen; the answer says what is in the cart, and closing the panel shows
    the cart first."""
    page = fresh.page
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": 1280, "height": 720})
        fresh.ask("add two mugs to my cart")
        fresh.card().locator(".allow").click()
        fresh.wait_cart(2)
        fresh.last_ask()
        page.screenshot(path=str(artifacts_dir / f"demo-shop-1280x720-{lane}.png"))
        cart, panel = page.evaluate(BOX, "#cart"), page.evaluate(BOX, "site-agent .panel")
        assert inside(cart, 1280, 720) and not overlap(cart, panel)

        fresh.reset()
        page.set_viewport_size({"width": 390, "height": 844})
        page.evaluate("window.scrollTo(0, 0)")
        fresh.ask("add two mugs to my cart")
        fresh.card().locator(".allow").click()
        fresh.wait_cart(2)
        answer = fresh.last_ask()["result"]["answer"]
        assert "The cart has 2 items (2 × Classic mug), total $24.00." in answer
        page.screenshot(path=str(artifacts_dir / f"demo-shop-390x844-panel-{lane}.png"))
        assert inside(page.evaluate(BOX, "site-agent .close"), 390, 844)
        page.click("site-agent >> .close")
        page.screenshot(path=str(artifacts_dir / f"demo-shop-390x844-closed-{lane}.png"))
        cart = page.evaluate(BOX, "#cart")
        assert inside(cart, 390, 844)
        assert cart["top"] < page.evaluate(BOX, "#products")["top"]
    finally:
        page.set_viewport_size(size)
        page.evaluate("window.scrollTo(0, 0)")


def test_the_proxy_hint_names_the_origin_the_page_is_served_from(fresh: Shop) -> None:
    """The settings' proxy command allows this page's own origin, whatever the demo's port."""
    shown, origin = fresh.page.evaluate(
        "() => [document.getElementById('page-origin').textContent, location.origin]"
    )
    assert shown == origin and origin.rsplit(":", 1)[-1] != "5180"
    hint = fresh.page.locator(".settings .hint code").first.inner_text()
    assert f"--allowed-origin {origin}" in hint
