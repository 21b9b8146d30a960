"""``<site-agent>`` on real sites, end to end in headless Chromium (both lanes): what framework
apps and real pages do to the element that the project's own pages never did.

- Properties set before ``loader.js`` defined the element (``el.options = ...``) go through
  the accessors (the "upgrade property" pattern).
- The element removed and put back (a re-render, a portal, a route): the conversation the panel
  shows is the one the model receives; no second Python.
- Relative ``proxy-url`` with a ``<base href>``: resolved against the page, not the worker.
- IME: WebKit's Enter after ``compositionend`` (keyCode 229, ``isComposing`` false) sends nothing.
- Keys typed right after the launcher's click, while the panel's code loads, arrive whole.

A stand-in proxy (a ``POST`` route of the demo server) records what the model receives.
"""

from __future__ import annotations

import json
import threading
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
<site-agent {attrs}></site-agent>
{before}
<script type="module" src="/loader.js"></script>
</body></html>"""


class Proxy:
    """What the stand-in proxy received: the request bodies, per path."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: dict[str, list[dict[str, Any]]] = {}

    def route(self, path: str) -> Any:
        def handle(body: bytes, _headers: Any) -> tuple[int, Any]:
            with self.lock:
                self.bodies.setdefault(path, []).append(json.loads(body))
            return 200, {"type": "answer", "text": "ok"}

        return handle

    def user_texts(self, path: str, index: int = -1) -> list[str]:
        """The user messages of request ``index`` to ``path``, as text."""
        with self.lock:
            messages = self.bodies[path][index]["messages"]
        return [m.get("content") or m.get("text") or "" for m in messages if m["role"] == "user"]


PATHS = ["/api/agent", "/app/api/agent"]


@pytest.fixture(scope="module")
def proxy() -> Proxy:
    return Proxy()


@pytest.fixture(scope="module")
def site(proxy: Proxy) -> Iterator[Any]:
    server = start_site({path: proxy.route(path) for path in PATHS})
    yield server
    server.stop()


@pytest.fixture
def open_page(page: Any, site: Any, proxy: Proxy) -> Any:
    """``open_page(attrs, path=..., head=..., before=...)``: a page with ``<site-agent ATTRS>``;
    ``before`` is markup placed before loader.js's script (a page's own inline script)."""

    def go(
        attrs: str = 'models="demo"', *, path: str = "", head: str = "", before: str = ""
    ) -> Any:
        path = path or f"realsites-{abs(hash((attrs, head, before)))}.html"
        body = PAGE.format(attrs=attrs, head=head, before=before)
        page.route(
            f"**/{path}",
            lambda route: route.fulfill(status=200, content_type="text/html", body=body),
        )
        if page.url.startswith(site.url):  # each test page starts a new visit
            page.evaluate("sessionStorage.clear()")
        with proxy.lock:
            proxy.bodies.clear()
        page.goto(site.url + path)
        page.wait_for_function("customElements.get('site-agent') !== undefined")
        return page

    return go


def ready(page: Any) -> None:
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)


# ---------------------------------------------------------------- properties before define


def test_properties_set_before_the_element_is_defined_go_through_the_accessors(
    open_page: Any,
) -> None:
    early = """<script>
      const el = document.querySelector('site-agent');
      el.strings = { label: 'Early label' };
      el.options = { greeting: 'Set before define', maxSteps: 3 };
    </script>"""
    page = open_page(before=early)
    own = page.evaluate(
        f"""() => {{
          const el = {EL};
          return ['options', 'strings'].filter((n) => Object.prototype.hasOwnProperty.call(el, n));
        }}"""
    )
    assert own == []  # no instance value hides the accessor any more
    assert page.inner_text("site-agent >> .launcher") == "Early label"
    assert page.evaluate(f"{EL}.options") == {"greeting": "Set before define", "maxSteps": 3}
    # configure() merges into the early options (it would drop them if they shadowed #options).
    page.evaluate(f"{EL}.configure({{ examples: ['Show mugs'] }})")
    page.click("site-agent >> .launcher")
    page.wait_for_selector("site-agent >> .welcome >> text=Set before define")
    assert page.locator("site-agent >> .welcome button", has_text="Show mugs").count() == 1


# ---------------------------------------------------------------- removed and put back


COUNT_PYTHON_WORKERS = """<script>
window.__pythonWorkers = 0;
const PageWorker = window.Worker;
window.Worker = class extends PageWorker {
  constructor(url, options) {
    super(url, options);
    if (options && options.name === 'site-agent') window.__pythonWorkers += 1;
  }
};
</script>"""


def test_put_back_after_a_while_the_model_receives_the_conversation_it_shows(
    open_page: Any, site: Any, proxy: Proxy
) -> None:
    page = open_page('models="proxy" proxy-url="/api/agent"', before=COUNT_PYTHON_WORKERS)
    first = page.evaluate(f"{EL}.ask('first question')")
    assert first["status"] == "answered", first
    # Removed for longer than the grace period: the agent is released ...
    page.evaluate(
        f"""async () => {{
          const el = {EL};
          window.__kept = el;
          el.remove();
          await new Promise((r) => setTimeout(r, 2600));
          window.__after = el.state;
          document.body.append(el);
        }}"""
    )
    assert page.evaluate("window.__after") == "idle"
    # ... and the next one takes up the conversation the panel still shows.
    assert "first question" in page.inner_text("site-agent >> .log")
    second = page.evaluate(f"{EL}.ask('second question')")
    assert second["status"] == "answered", second
    assert proxy.user_texts("/api/agent") == ["first question", "second question"]
    # One Python for the page (the snapshot maker, a worker of its own, may start beside it).
    assert page.evaluate("window.__pythonWorkers") == 1


def test_moved_within_the_grace_period_the_same_agent_goes_on(open_page: Any, proxy: Proxy) -> None:
    page = open_page('models="proxy" proxy-url="/api/agent"')
    page.evaluate(f"{EL}.ask('before the move')")
    moved = page.evaluate(
        f"""async () => {{
          const el = {EL};
          const frame = document.createElement('div');
          document.body.append(frame);
          el.remove();                                    // a re-render: out ...
          await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50)));
          frame.append(el);                               // ... and in, elsewhere
          return el.state;
        }}"""
    )
    assert moved == "ready"
    result = page.evaluate(f"{EL}.ask('after the move')")
    assert result["status"] == "answered", result
    assert proxy.user_texts("/api/agent") == ["before the move", "after the move"]
    # The listeners were moved, not added twice: one pagehide listener stores one record.
    assert page.locator("site-agent >> .log .msg.user").count() == 2


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


def test_a_pending_card_survives_a_route_change_that_moves_the_element(open_page: Any) -> None:
    page = open_page()
    page.click("site-agent >> .launcher")
    ready(page)
    page.evaluate(POKE)
    page.wait_for_function(f"!{EL}.agent.running")
    page.evaluate(f"() => {{ window.__result = {EL}.ask('poke it'); }}")
    page.locator("site-agent >> .card").wait_for(timeout=10_000)
    page.evaluate(
        f"""async () => {{
          const el = {EL};
          el.remove();                                     // the old route unmounts ...
          await new Promise((r) => setTimeout(r, 300));
          document.body.prepend(el);                       // ... the new one mounts it again
        }}"""
    )
    page.locator("site-agent >> .card .allow").click(timeout=5_000)
    result = page.evaluate("window.__result")
    assert result["status"] == "answered", result
    assert page.evaluate("window.__ran") == 1


def test_move_before_keeps_the_element_connected(open_page: Any) -> None:
    page = open_page()
    page.click("site-agent >> .launcher")
    page.wait_for_selector("site-agent >> .panel", state="visible")
    calls = page.evaluate(
        f"""() => {{
          const el = {EL};
          const seen = [];
          for (const name of ['addEventListener', 'removeEventListener']) {{
            const original = window[name];
            window[name] = function (type, ...rest) {{
              if (type === 'pagehide') seen.push(name);
              return original.call(this, type, ...rest);
            }};
          }}
          const frame = document.createElement('div');
          document.body.append(frame);
          frame.moveBefore(el, null);  // a state-preserving move (Chromium 133+)
          return seen;
        }}"""
    )
    assert calls == []  # no disconnect and connect: the panel's listeners stay as they were
    assert page.evaluate(f"{EL}.parentElement.tagName") == "DIV"


# ---------------------------------------------------------------- relative URLs, worker mode


def test_a_relative_proxy_url_resolves_against_the_base_href_not_the_worker(
    open_page: Any, site: Any, proxy: Proxy
) -> None:
    page = open_page(
        'models="proxy" proxy-url="api/agent"',
        path="shop/products/realsites-base.html",
        head='<base href="/app/">',
    )
    result = page.evaluate(f"{EL}.ask('relative please')")
    assert result["status"] == "answered", result
    assert proxy.user_texts("/app/api/agent") == ["relative please"]
    models = [s["model"] for s in result["trace"]["steps"] if s["kind"] == "model"]
    assert models == [f"proxy ({site.url}app/api/agent)"]


# ---------------------------------------------------------------- IME


IME_ENTER = """async ({ keyCode, sameTurn }) => {
  const el = document.querySelector('site-agent');
  const input = el.shadowRoot.querySelector('textarea');
  input.focus();
  input.dispatchEvent(new CompositionEvent('compositionstart', { data: '' }));
  input.value = 'どのマグが赤い';
  const data = input.value;
  input.dispatchEvent(new CompositionEvent('compositionend', { data, bubbles: true }));
  if (!sameTurn) await new Promise((r) => setTimeout(r, 120));
  const enter = new KeyboardEvent('keydown', {
    key: 'Enter', code: 'Enter', bubbles: true, cancelable: true, composed: true });
  Object.defineProperty(enter, 'keyCode', { get: () => keyCode });
  input.dispatchEvent(enter);
  await new Promise((r) => setTimeout(r, 100));
  return { value: input.value, sent: el.shadowRoot.querySelectorAll('.msg.user').length };
}"""


def test_safari_enter_after_compositionend_does_not_send(open_page: Any) -> None:
    page = open_page()
    page.click("site-agent >> .launcher")
    ready(page)
    # WebKit: compositionend, then keydown Enter with keyCode 229 and isComposing false.
    held = page.evaluate(IME_ENTER, {"keyCode": 229, "sameTurn": True})
    assert held == {"value": "どのマグが赤い", "sent": 0}
    # An Enter in the same turn as compositionend (keyCode 13) is the composition's too.
    held = page.evaluate(IME_ENTER, {"keyCode": 13, "sameTurn": True})
    assert held == {"value": "どのマグが赤い", "sent": 0}
    # The visitor's own Enter, later, sends the text.
    sent = page.evaluate(IME_ENTER, {"keyCode": 13, "sameTurn": False})
    assert sent == {"value": "", "sent": 1}


# ---------------------------------------------------------------- typing right after the click


def test_keys_typed_while_the_panel_loads_arrive_whole(open_page: Any, site: Any) -> None:
    held: list[Any] = []
    page = open_page()
    page.route("**/web/element/panel.js", lambda route: held.append(route))
    page.click("site-agent >> .launcher")
    page.keyboard.type("which mug is red")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert held, "the panel's code was not requested"
    for route in held:
        route.continue_()
    page.wait_for_selector("site-agent >> textarea", state="visible")
    value = page.locator("site-agent >> textarea").input_value()
    assert value == "which mug is red"
    textarea = page.locator("site-agent >> textarea")
    assert textarea.evaluate("e => e === e.getRootNode().activeElement")
    page.unroute("**/web/element/panel.js")
