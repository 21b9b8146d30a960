"""Drives one framework app of tests/frameworks in a Playwright page (``Bakery``).

Every app shows the same bakery (``apps/bakery.js``): routes ``catalog`` and ``orders`` switched
with ``history.pushState`` by the buttons ``#to-catalog`` and ``#to-orders``, ``#move`` moving
``<site-agent>`` between ``#side`` and ``#foot`` (a re-render that makes a new element), the
cart in ``#cart`` and the orders in ``#orders li[data-status]``. :data:`PROBES` is an init script
that counts the page's Python workers (``new Worker(..., {name: 'site-agent'})``) and the
``toolchange`` listeners on ``document.modelContext``.
"""

from __future__ import annotations

import json
from typing import Any

from element_support import BOOT_TIMEOUT_MS, RECORDER

EL = "document.querySelector('site-agent')"

PROBES = (
    "if (!window.__probed) {\nwindow.__probed = true;\n"
    + RECORDER
    + """
window.__workers = 0;
const PageWorker = window.Worker;
window.Worker = class extends PageWorker {
  constructor(url, options) {
    super(url, options);
    if (options && options.name === 'site-agent') window.__workers += 1;
  }
};
window.__toolchangeListeners = new Set();
const add = EventTarget.prototype.addEventListener;
const remove = EventTarget.prototype.removeEventListener;
EventTarget.prototype.addEventListener = function (type, fn, options) {
  if (type === 'toolchange' && this === document.modelContext) window.__toolchangeListeners.add(fn);
  return add.call(this, type, fn, options);
};
EventTarget.prototype.removeEventListener = function (type, fn, options) {
  const listeners = window.__toolchangeListeners;
  if (type === 'toolchange' && this === document.modelContext) listeners.delete(fn);
  return remove.call(this, type, fn, options);
};
}
"""
)


class Bakery:
    """One framework's bakery app in ``page`` (opened and booted once by :meth:`open`)."""

    def __init__(self, page: Any, base_url: str, framework: str) -> None:
        self.page = page
        self.url = f"{base_url}{framework}/index.html"
        self.framework = framework

    def open(self) -> Bakery:
        if self.page.url.startswith(self.url.split("/" + self.framework)[0]):
            self.page.evaluate("sessionStorage.clear()")
        self.page.goto(self.url)
        self.page.wait_for_selector("html[data-ready=true]")
        self.page.wait_for_function(f"{EL} && {EL}.shadowRoot")
        self.page.click("site-agent >> .launcher")
        self.wait_state("ready")
        return self

    def wait_state(self, state: str, timeout: float = BOOT_TIMEOUT_MS) -> None:
        self.page.wait_for_function(f"{EL}.state === {json.dumps(state)}", timeout=timeout)

    def reset(self) -> None:
        """Catalog route, fresh conversation, no recorded events."""
        self.goto("catalog")
        self.page.evaluate(
            """async () => {
                const el = document.querySelector('site-agent');
                el.stop();
                for (let i = 0; i < 200 && el.agent.running; i++) {
                  await new Promise((r) => setTimeout(r, 10));
                }
                el.reset();
                el.show({ focus: false });
                window.__events.length = 0;
                window.__done.length = 0;
            }"""
        )
        self.wait_tools({"add_to_cart", "open_page", "search_cakes", "bake_special"})

    def goto(self, route: str) -> None:
        """Click the app's own link to ``route`` and wait for it to render."""
        self.page.click(f"#to-{route}")
        self.page.wait_for_selector(f"main[data-route={route}]")

    def tool_names(self) -> list[str]:
        names: list[str] = self.page.evaluate(
            "async () => (await document.modelContext.getTools()).map((t) => t.name)"
        )
        return names

    def wait_tools(self, names: set[str]) -> None:
        self.page.wait_for_function(
            """async (want) => {
                const have = (await document.modelContext.getTools()).map((t) => t.name).sort();
                return JSON.stringify(have) === JSON.stringify(want);
            }""",
            arg=sorted(names),
        )

    def ask(self, text: str) -> None:
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
        result: dict[str, Any] = self.page.evaluate(f"(text) => {EL}.ask(text)", text)
        return result

    def last_ask(self, timeout: float = 20_000) -> dict[str, Any]:
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

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.page.evaluate("window.__events")
        return [e for e in events if kind is None or e["type"] == kind]

    def log_text(self) -> str:
        return str(self.page.inner_text("site-agent >> .log"))

    def probes(self) -> dict[str, Any]:
        found: dict[str, Any] = self.page.evaluate(
            """() => ({
                workers: window.__workers,
                toolchangeListeners: window.__toolchangeListeners.size,
                elements: document.querySelectorAll('site-agent').length,
                registrationErrors: window.bakeryErrors ?? [],
                registrations: window.bakeryRegistrations,
            })"""
        )
        return found
