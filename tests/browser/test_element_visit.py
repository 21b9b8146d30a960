"""The conversation across pages of a visit, end to end in headless Chromium, in both
WebMCP lanes, on the demo shop's two pages (``demo-shop.html`` and ``product.html``).

The model is a small scripted JS model (``options.model``, installed by an init script on
every page, before the element boots) that decides from the conversation it is sent: so a
reply on page 2 that names what was said on page 1 shows that the conversation came along.
Every page load boots Python, so each test keeps to the few page loads it needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import BOOT_TIMEOUT_MS, EL, RECORDER, start_site

pytestmark = pytest.mark.browser

MODEL = """
window.__requests = [];
window.__model = {
  name: 'scripted',
  respond(request) {
    window.__requests.push(JSON.parse(JSON.stringify({
      instructions: request.instructions, messages: request.messages,
      tools: request.tools.map((t) => t.name) })));
    const messages = request.messages;
    const last = messages[messages.length - 1];
    const firstUser = [...messages].reverse().find((m) => m.role === 'user');
    const asked = firstUser.content.toLowerCase();
    const tools = request.tools.map((t) => t.name);
    const earlier = messages.filter((m) => m.toolCall).map((m) => m.toolCall);
    const mentioned = earlier.map((c) => c.arguments.product || c.arguments.query).find(Boolean);
    if (last.role === 'tool') {
      const opened = last.name === 'open_product' && tools.includes('add_to_cart');
      if (asked.includes('add it') && opened) {
        return { type: 'tool', name: 'add_to_cart',
                 arguments: { product: mentioned, quantity: 1 } };
      }
      return { type: 'answer', text: `Done (${last.name}): ${last.content.slice(0, 60)}` };
    }
    if (asked.startsWith('open')) {
      return { type: 'tool', name: 'open_product', arguments: { product: 'classic mug' } };
    }
    if (asked.startsWith('tell me')) {
      return { type: 'tool', name: 'search_products', arguments: { query: 'classic mug' } };
    }
    if (asked.startsWith('reviews')) {
      return { type: 'tool', name: 'get_reviews', arguments: { product: 'classic mug' } };
    }
    if (asked.startsWith('add it')) {
      if (!mentioned) return { type: 'answer', text: 'Add what?' };
      return { type: 'tool', name: 'add_to_cart', arguments: { product: mentioned, quantity: 1 } };
    }
    return { type: 'answer', text: 'ok' };
  },
};
customElements.whenDefined('site-agent').then(() => {
  for (const el of document.querySelectorAll('site-agent')) {
    el.options = { ...el.options, model: window.__model };
    if (sessionStorage.getItem('test-pre-approved')) el.setAttribute('pre-approved', 'add_to_cart');
  }
});
"""

KEY = "site-agent:default"


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page_(page: Any) -> Any:
    page.add_init_script(RECORDER)
    page.add_init_script(MODEL)
    return page


class Visit:
    def __init__(self, page: Any, base: str) -> None:
        self.page = page
        self.base = base

    def goto(self, path: str = "") -> None:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)

    def start(self) -> Visit:
        """The shop's first page with no stored conversation, the panel open and ready."""
        self.goto()
        self.page.evaluate("sessionStorage.clear()")
        self.goto()
        self.open()
        return self

    def open(self) -> None:
        if not self.page.evaluate(f"{EL}.shadowRoot.querySelector('.panel')?.hidden === false"):
            self.page.click("site-agent >> .launcher")
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_TIMEOUT_MS)

    def ask(self, text: str) -> dict[str, Any]:
        result: dict[str, Any] = self.page.evaluate(f"(t) => {EL}.ask(t)", text)
        return result

    def ask_later(self, text: str) -> None:
        self.page.evaluate(f"(t) => {{ {EL}.ask(t).catch(() => {{}}); }}", text)

    def card(self) -> Any:
        locator = self.page.locator("site-agent >> .card")
        locator.wait_for(timeout=15_000)
        return locator

    def log(self) -> str:
        if not self.page.evaluate(f"!!{EL}.shadowRoot.querySelector('.log')"):
            return ""  # the panel never loaded: nothing was shown
        return str(self.page.inner_text("site-agent >> .log"))

    def record(self, wait: bool = False) -> Any:
        """The stored record (``wait``: until there is one; it is written after each step)."""
        if wait:
            self.page.wait_for_function(f"sessionStorage.getItem({json.dumps(KEY)}) !== null")
        text = self.page.evaluate(f"sessionStorage.getItem({json.dumps(KEY)})")
        return None if text is None else json.loads(text)

    def wait_done(self) -> dict[str, Any]:
        self.page.wait_for_function("window.__done.length > 0", timeout=BOOT_TIMEOUT_MS)
        done: dict[str, Any] = self.page.evaluate("window.__done.at(-1)")
        return done

    def requests(self) -> list[dict[str, Any]]:
        requests: list[dict[str, Any]] = self.page.evaluate("window.__requests")
        return requests

    def cart(self) -> list[Any]:
        return list(
            self.page.evaluate("JSON.parse(sessionStorage.getItem('demo-shop-cart') || '[]')")
        )


@pytest.fixture
def visit(page_: Any, site: Any) -> Visit:
    return Visit(page_, site.url).start()


def test_ask_follow_a_link_then_ask_about_page_one(visit: Visit) -> None:
    first = visit.ask("tell me about the classic mug")
    assert first["status"] == "answered"
    record = visit.record(wait=True)
    assert record["v"] == 1 and record["open"] is True
    assert record["state"]["conversation"]["afterUntrusted"] is False
    visit.page.click("#products a >> nth=0")  # the visitor follows a link to product.html
    visit.page.wait_for_url("**/product.html?id=mug-classic")
    visit.page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    visit.ready()  # the panel was open: it opens again and Python starts
    assert "tell me about the classic mug" in visit.log()  # the visible log came along
    visit.ask_later("add it to my cart")
    card = visit.card()
    assert "Classic mug" in card.inner_text() or "classic mug" in card.inner_text()
    card.locator(".allow").click()
    visit.page.wait_for_function("window.__done.length > 0")
    assert visit.cart() == [["mug-classic", 1]]
    request = visit.requests()[0]
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert users == ["tell me about the classic mug", "add it to my cart"]
    assert "this_product" in request["tools"]  # the tools are listed afresh on page 2
    trace = visit.page.evaluate(f"{EL}.lastTrace")
    pages = [s for s in trace["steps"] if s["kind"] == "page"]
    assert pages[0]["path"] == "/product.html"  # origin and path only: no ?id=
    assert "mug-classic" not in json.dumps(pages)


def test_a_navigating_tool_and_the_run_goes_on(visit: Visit) -> None:
    visit.ask_later("open the classic mug and add it to my cart")
    visit.page.wait_for_url("**/product.html?id=mug-classic", timeout=30_000)
    visit.page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    visit.ready()
    card = visit.card()  # the run went on here: add_to_cart, on this page's tools
    card.locator(".allow").click()
    done = visit.wait_done()
    assert done["status"] == "answered", done
    assert visit.cart() == [["mug-classic", 1]]
    steps = done["trace"]["steps"]
    kinds = [s["kind"] for s in steps]
    assert kinds[0] == "user" and kinds.count("page") == 2
    assert [s["path"] for s in steps if s["kind"] == "page"] == ["/", "/product.html"]
    opened = next(s for s in steps if s["kind"] == "tool-result" and s["name"] == "open_product")
    assert opened["navigated"] is True and "/product.html" in opened["text"]
    assert "?id=" not in json.dumps(done["trace"])
    model_steps = [s["step"] for s in steps if s["kind"] == "model"]
    assert model_steps == [1, 2, 3]  # one run, counted across both pages
    request = visit.requests()[0]
    assert "/product.html" in request["instructions"]  # the model was told where it is


@pytest.mark.parametrize("leave", ["link", "reload"])
def test_a_pending_card_is_denied_by_navigation(visit: Visit, leave: str) -> None:
    visit.ask("tell me about the classic mug")
    visit.ask_later("add it to my cart")
    visit.card()
    if leave == "link":
        visit.page.click("#products a >> nth=0")  # the visitor leaves with the card open
        visit.page.wait_for_url("**/product.html?id=mug-classic")
    else:
        visit.page.reload()  # the visitor reloads with the card open
        visit.page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    visit.ready()
    done = visit.wait_done()
    decision = next(s for s in done["trace"]["steps"] if s["kind"] == "decision")
    assert decision["allowed"] is False and decision["cause"] == "navigated"
    assert visit.cart() == []
    # The line says why (the page was left), by the tool's title on this page too, never
    # "was not allowed": the visitor did not deny it.
    log = visit.log()
    assert "the page was left or reloaded while Add to cart waited for your answer" in log, log
    assert "was not allowed" not in log, log
    assert "while add_to_cart waited" not in log, log
    assert log.count("waited for your answer") == 1, log
    assert "Using Add to cart" not in log, log  # its line is replaced, not left running
    visit.page.locator("site-agent >> .card").wait_for(state="detached")  # not carried over


def test_a_message_sent_while_python_starts_is_kept_once(visit: Visit) -> None:
    visit.page.evaluate("sessionStorage.clear()")
    visit.goto()  # a fresh page: Python has not started
    queued = visit.page.evaluate(
        f"""async (text) => {{
        const el = {EL};
        el.shadowRoot.querySelector('.launcher').click();
        for (let i = 0; i < 500 && !el.shadowRoot.querySelector('textarea'); i += 1) {{
          await new Promise((r) => setTimeout(r, 10));
        }}
        el.shadowRoot.querySelector('textarea').value = text;
        el.shadowRoot.querySelector('form').requestSubmit();
        return [el.state, !!el.shadowRoot.querySelector('.msg.user.queued')];
    }}""",
        "tell me about the classic mug",
    )
    assert queued == ["loading", True]  # sent while the runtime was starting: queued
    assert visit.wait_done()["status"] == "answered"
    visit.page.wait_for_function(
        f"JSON.parse(sessionStorage.getItem({json.dumps(KEY)}) || 'null')?.state?.run === null"
    )
    log = visit.record()["log"]
    assert [text for kind, text in log if kind == "user"] == ["tell me about the classic mug"]
    assert not [text for _kind, text in log if "as soon as the assistant is ready" in text]
    visit.goto()  # reloaded: the conversation shows the message once
    visit.ready()
    assert visit.log().count("tell me about the classic mug") == 1, visit.log()


def test_after_untrusted_still_asks_on_page_two(visit: Visit) -> None:
    visit.page.evaluate("sessionStorage.setItem('test-pre-approved', '1')")
    visit.goto()
    visit.open()
    visit.ask("reviews of the classic mug please")
    assert visit.record(wait=True)["state"]["conversation"]["afterUntrusted"] is True
    visit.page.click("#products a >> nth=0")
    visit.page.wait_for_url("**/product.html?id=mug-classic")
    visit.ready()
    visit.ask_later("add it to my cart")  # add_to_cart is pre-approved, but not after reviews
    card = visit.card()
    assert card.get_attribute("data-reason") == "after-untrusted"
    card.locator(".deny").click()
    visit.page.evaluate("sessionStorage.removeItem('test-pre-approved')")


@pytest.mark.parametrize(
    "stored",
    [
        "{not json",
        json.dumps({"v": 1, "name": "default", "savedAt": 1, "hiddenAt": None, "open": True}),
        json.dumps(
            {
                "v": 1,
                "name": "default",
                "savedAt": 1,
                "hiddenAt": None,
                "open": True,
                "log": [["user", "hi"]],
                "state": {
                    "conversation": {
                        "version": 1,
                        "messages": [{"role": "tool", "content": "a result without its call"}],
                        "afterUntrusted": False,
                    },
                    "run": None,
                },
            }
        ),
    ],
)
def test_a_corrupted_record_starts_fresh(visit: Visit, stored: str) -> None:
    visit.page.evaluate(f"sessionStorage.setItem({json.dumps(KEY)}, {json.dumps(stored)})")
    visit.goto()
    visit.open()
    visit.page.wait_for_function(
        f"sessionStorage.getItem({json.dumps(KEY)}) === null", timeout=BOOT_TIMEOUT_MS
    )
    assert visit.log() == ""
    result = visit.ask("tell me about the classic mug")
    assert result["status"] == "answered"
    users = [m for m in visit.requests()[-1]["messages"] if m["role"] == "user"]
    assert len(users) == 1


def test_the_last_step_is_stored_by_pagehide(visit: Visit) -> None:
    # Steps are stored at most every 250 ms; pagehide (the page is going away) stores the
    # latest at once, in the same task as the answer here.
    stored = visit.page.evaluate(
        f"""async () => {{
        const result = await {EL}.ask('tell me about the classic mug');
        dispatchEvent(new PageTransitionEvent('pagehide', {{ persisted: false }}));
        return [result.status, sessionStorage.getItem({json.dumps(KEY)})];
    }}"""
    )
    assert stored[0] == "answered"
    record = json.loads(stored[1])
    assert record["hiddenAt"] is not None
    messages = record["state"]["conversation"]["messages"]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].startswith("Done")
    visit.page.evaluate("dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))")


def test_new_conversation_control(visit: Visit) -> None:
    visit.ask("tell me about the classic mug")
    assert visit.record(wait=True) is not None
    button = visit.page.locator("site-agent >> .fresh")
    assert button.inner_text() == "New conversation"
    button.focus()
    visit.page.keyboard.press("Enter")  # keyboard-accessible
    assert visit.record() is not None  # it asks first
    visit.page.locator("site-agent >> .fresh-yes").focus()
    visit.page.keyboard.press("Enter")
    assert visit.record() is None
    assert visit.log() == ""
    status = visit.page.locator("site-agent >> .status")
    assert status.inner_text() == "New conversation started."
    assert status.get_attribute("role") == "status"  # announced
    visit.ask("tell me more")
    users = [m for m in visit.requests()[-1]["messages"] if m["role"] == "user"]
    assert [m["content"] for m in users] == ["tell me more"]


def test_persist_off_and_another_origin(visit: Visit, site: Any) -> None:
    visit.ask("tell me about the classic mug")
    # Another origin (the same server under its other name): nothing is carried over.
    if "localhost" in site.url:
        other = site.url.replace("localhost", "127.0.0.1")
    else:
        other = site.url.replace("127.0.0.1", "localhost")
    assert other != site.url
    visit.page.goto(other + "product.html?id=mug-classic")
    visit.page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    assert visit.page.evaluate(f"sessionStorage.getItem({json.dumps(KEY)})") is None
    assert visit.log() == ""
    visit.goto()
    visit.page.evaluate(f"{EL}.setAttribute('persist', 'off'); {EL}.reset()")
    visit.ask("tell me about the classic mug")
    assert visit.record() is None


def test_a_reset_while_the_visit_module_loads_forgets_the_record(visit: Visit) -> None:
    # The panel is loaded to show a stored conversation, but the module that reads it is still
    # on its way when the page calls reset(): the record is gone and nothing is restored later.
    visit.ask("tell me about the classic mug")
    assert visit.record(wait=True) is not None
    held: list[Any] = []
    visit.page.route("**/visit.js", lambda route: held.append(route))
    try:
        visit.goto()
        for _ in range(200):
            if held:
                break
            visit.page.wait_for_timeout(50)
        assert held, "the element never asked for its visit module"
        assert visit.page.evaluate(f"!!{EL}.shadowRoot.querySelector('.log')")
        visit.page.evaluate(f"{EL}.reset()")
    finally:
        for route in held:
            route.continue_()
        visit.page.unroute("**/visit.js")
    visit.open()  # Python starts; the visit module has loaded
    visit.page.wait_for_timeout(300)
    assert visit.record() is None
    assert "classic mug" not in visit.log()


PLAIN = """<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">
<title>No assistant here</title><p>A page of the site without the assistant.</p>{script}"""


@pytest.mark.parametrize(
    ("script", "words"),
    [
        # loader.js but no <site-agent>: the interrupted run ends there, recorded
        ('<script type="module" src="/loader.js"></script>', "no assistant"),
        # no page takes the run up in time: the deadline ends it
        (
            "<script>const k = 'site-agent:default'; const r = JSON.parse(sessionStorage"
            ".getItem(k)); r.hiddenAt = Date.now() - 60000; sessionStorage.setItem(k, "
            "JSON.stringify(r));</script>",
            "within 30 s",
        ),
    ],
)
def test_an_interrupted_run_that_is_not_taken_up(visit: Visit, script: str, words: str) -> None:
    visit.page.route(
        "**/plain.html",
        lambda route: route.fulfill(content_type="text/html", body=PLAIN.format(script=script)),
    )
    visit.ask("tell me about the classic mug")
    visit.ask_later("add it to my cart")
    visit.card()
    visit.page.goto(visit.base + "plain.html")  # the visitor leaves with the card open
    visit.page.wait_for_load_state("load")
    visit.page.wait_for_timeout(300)
    visit.goto()
    visit.ready()
    visit.page.wait_for_function(f"{EL}.lastTrace !== null", timeout=BOOT_TIMEOUT_MS)
    trace = visit.page.evaluate(f"{EL}.lastTrace")
    assert trace["status"] == "aborted"
    assert words in trace["steps"][-1]["message"]
    assert "tell me about the classic mug" in visit.log()  # the conversation itself stays
    assert visit.record(wait=True)["state"]["run"] is None
    visit.page.unroute("**/plain.html")


def test_a_write_that_fails_removes_the_older_record_and_says_so(visit: Visit) -> None:
    # sessionStorage full (QuotaExceededError) or a private mode that refuses writes: the
    # next page must not restore the older conversation as if it were the current one.
    assert visit.ask("tell me about the classic mug")["status"] == "answered"
    assert visit.record(wait=True) is not None
    visit.page.evaluate(
        """() => {
        const set = Storage.prototype.setItem;
        Storage.prototype.setItem = function (key, value) {
          if (String(key).startsWith('site-agent:')) {
            throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
          }
          return set.call(this, key, value);
        };
    }"""
    )
    second = visit.ask("reviews of the classic mug, please")
    assert second["status"] == "answered"  # this page's conversation goes on
    visit.page.wait_for_function(
        f"sessionStorage.getItem({json.dumps(KEY)}) === null", timeout=BOOT_TIMEOUT_MS
    )
    assert "cannot be kept for the next page" in visit.log()
    visit.goto()  # a new page: nothing older is restored
    visit.open()
    assert "tell me about the classic mug" not in visit.log()
