"""Shared helpers for the ``<site-agent>`` end-to-end tests (``test_element_*.py``).

- :func:`e2e_bundle` builds the self-hosted bundle from the working tree once per session
  (``dist/e2e-bundle``; downloads come from the cache, a rebuild takes well under a second).
- :func:`start_site` serves it with ``examples/`` on top, exactly as ``python -m pysite_agent
  demo`` does (:class:`pysite_agent.cli.demo.DemoServer`), on a free loopback port; extra ``POST``
  routes stand in for endpoints such as a proxy.
- :data:`RECORDER` is an init script that records every ``site-agent-event`` and
  ``site-agent-done`` reaching ``document`` (so they bubbled out of the shadow root).
- The ``Shop`` helper drives the demo shop page: open the panel, ask, read the card and the
  cart, reset between tests (one page boot per module, since Pyodide takes seconds to start).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pysite_agent.cli.demo import DemoServer, PostHandler

REPO = Path(__file__).resolve().parents[2]
BUNDLE_DIR = REPO / "dist" / "e2e-bundle"
BOOT_TIMEOUT_MS = 60_000

RECORDER = """
window.__events = [];
window.__done = [];
document.addEventListener('site-agent-event', (e) => window.__events.push(e.detail));
document.addEventListener('site-agent-done', (e) => window.__done.push(e.detail));
"""

EL = "document.querySelector('site-agent')"


@functools.cache
def e2e_bundle() -> Path:
    """The bundle built from the working tree (once per test session)."""
    from pysite_agent.bundle import build_bundle

    return build_bundle(BUNDLE_DIR, progress=lambda _msg: None).out_dir


def start_site(post_routes: Mapping[str, PostHandler] | None = None) -> DemoServer:
    """The demo site (bundle + examples) on a free loopback port, served from a thread."""
    return DemoServer([e2e_bundle(), REPO / "examples"], port=0, post_routes=post_routes).start()


class Shop:
    """Drives ``examples/demo-shop.html`` in one Playwright page."""

    def __init__(self, page: Any, base_url: str) -> None:
        self.page = page
        self.base_url = base_url

    # ---- navigation

    def open(self, query: str = "", *, boot: bool = True) -> Shop:
        """The shop's page as a new visit: no conversation kept from an earlier test's page
        (the element restores one, with its panel open, from ``sessionStorage``)."""
        origin = "{0.scheme}://{0.netloc}/".format(urlsplit(self.base_url))
        if self.page.url.startswith(origin):
            self.page.evaluate("sessionStorage.clear()")
        self.page.goto(self.base_url + query)
        self.page.wait_for_selector("html[data-ready=true]")
        if boot:
            self.page.click("site-agent >> .launcher")
            self.wait_state("ready")
        return self

    def wait_state(self, state: str, timeout: float = BOOT_TIMEOUT_MS) -> None:
        self.page.wait_for_function(f"{EL}.state === {json.dumps(state)}", timeout=timeout)

    def reset(self, **attributes: str | None) -> None:
        """Fresh conversation, empty cart, no recorded events, default attributes."""
        attrs = {"pre-approved": None, "models": "demo", "proxy-url": None, **attributes}
        self.page.evaluate(
            """async (attrs) => {
                const el = document.querySelector('site-agent');
                el.stop();
                for (const [name, value] of Object.entries(attrs)) {
                  if (value === null) el.removeAttribute(name); else el.setAttribute(name, value);
                }
                // Wait until no run is active, then start afresh.
                for (let i = 0; i < 200 && el.agent.running; i++) {
                  await new Promise((r) => setTimeout(r, 10));
                }
                el.reset();
                el.show({ focus: false });
                window.shop.reset();
                window.__events.length = 0;
                window.__done.length = 0;
            }""",
            attrs,
        )

    # ---- the agent

    def ask(self, text: str) -> None:
        """Start a run without waiting for it (its result lands in ``window.__asks``)."""
        self.page.evaluate(
            """(text) => {
                window.__asks ??= [];
                const slot = { text };
                window.__asks.push(slot);
                document.querySelector('site-agent').ask(text).then(
                  (r) => { slot.result = r; },
                  (e) => { slot.error = { code: e.code, message: e.message }; });
            }""",
            text,
        )

    def ask_and_wait(self, text: str) -> dict[str, Any]:
        """Run ``text`` to the end (no card expected); returns the RunResult JSON."""
        result: dict[str, Any] = self.page.evaluate(f"(text) => {EL}.ask(text)", text)
        return result

    def last_ask(self, timeout: float = 20_000) -> dict[str, Any]:
        """The outcome of the latest :meth:`ask` once it settled."""
        self.page.wait_for_function(
            "() => { const a = window.__asks.at(-1); return a.result || a.error; }",
            timeout=timeout,
        )
        outcome: dict[str, Any] = self.page.evaluate("window.__asks.at(-1)")
        return outcome

    def card(self, timeout: float = 10_000) -> Any:
        locator = self.page.locator("site-agent >> .card")
        locator.wait_for(timeout=timeout)
        return locator

    def no_card(self) -> None:
        self.page.locator("site-agent >> .card").wait_for(state="detached", timeout=5_000)

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.page.evaluate("window.__events")
        return [e for e in events if kind is None or e["type"] == kind]

    def done(self) -> list[dict[str, Any]]:
        done: list[dict[str, Any]] = self.page.evaluate("window.__done")
        return done

    def log_text(self) -> str:
        return str(self.page.inner_text("site-agent >> .log"))

    def focused(self) -> str:
        """A description of what has focus: ``class`` of the shadow's active element, or of
        the page's."""
        return str(
            self.page.evaluate(
                f"""() => {{
                const el = {EL};
                const inner = el.shadowRoot.activeElement;
                if (inner) return 'shadow:' + (inner.className || inner.tagName.toLowerCase());
                const a = document.activeElement;
                return 'page:' + (a ? a.tagName.toLowerCase() : 'none');
            }}"""
            )
        )

    # ---- the page's state

    def cart_count(self) -> int:
        return int(self.page.inner_text("#cart-count"))

    def cart_items(self) -> list[str]:
        items: list[str] = self.page.eval_on_selector_all(
            "#cart-items li", "els => els.map(e => e.textContent)"
        )
        return items

    def wait_cart(self, count: int, timeout: float = 10_000) -> None:
        self.page.wait_for_function(
            f"document.getElementById('cart-count').textContent === '{count}'", timeout=timeout
        )

    def settle(self, ms: int = 100) -> None:
        time.sleep(ms / 1000)
