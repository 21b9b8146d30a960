"""What a visitor sees and does, on the demo shop, in both lanes: the card seen whole before
Allow, errors in plain words with "Try again", focus that never falls to ``<body>``, the
full-screen panel as a modal, form hand-offs, sizes that follow the visitor, forced colours,
and the basics (greeting, examples, links, unread mark, "New conversation" that asks).

One page per module and lane (one Python start); each test starts from a fresh
conversation (``Shop.reset``) at a desktop size, and puts back what it changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, RECORDER, Shop, start_site

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
LONG_NOTE = (
    "send feedback: the red enamel mug arrived with a chipped rim and the box was soaked, "
    "please send a new one to the same address and tell the courier to ring twice, because "
    "the bell in the hallway is broken and nobody hears a knock from the kitchen upstairs"
)

GEOMETRY = """() => {
  const root = document.querySelector('site-agent').shadowRoot;
  const body = root.querySelector('.body').getBoundingClientRect();
  const top = Math.max(body.top, 0), bottom = Math.min(body.bottom, innerHeight);
  const inView = (el) => { const r = el.getBoundingClientRect();
    return r.top >= top - 1 && r.bottom <= bottom + 1; };
  const card = root.querySelector('.card');
  return { heading: inView(card.querySelector('h3')), allow: inView(card.querySelector('.allow')),
           disabled: card.querySelector('.allow').getAttribute('aria-disabled') === 'true',
           moreAbove: !root.querySelector('.more-above').hidden };
}"""

#: A JS model whose answers and failures a test scripts through ``window.__model``.
SCRIPTED_MODEL = """(mode) => {
  window.__calls = 0;
  document.querySelector('site-agent').options = { ...(window.__keep || {}), model: {
    name: 'scripted',
    async respond(request) {
      window.__calls += 1;
      const step = window.__script.shift();
      if (step === undefined) return { type: 'answer', text: 'Done.' };
      if (step.wait) await new Promise((resolve, reject) => {
        const stop = () => reject(new DOMException('stop', 'AbortError'));
        request.signal.addEventListener('abort', stop);
        if (step.wait > 0) setTimeout(resolve, step.wait);
      });
      if (step.throw) throw new Error(step.throw);
      return { type: 'answer', text: step.answer };
    } } };
}"""


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
def fresh(shop: Shop) -> Iterator[Shop]:
    shop.page.set_viewport_size(DESKTOP)
    shop.reset()
    yield shop
    shop.page.evaluate(f"{EL}.stop()")
    shop.page.set_viewport_size(DESKTOP)
    shop.page.emulate_media(forced_colors="none")


def script(shop: Shop, *steps: dict[str, Any]) -> None:
    """Replace the model by a scripted JS model that plays ``steps`` (then answers 'Done.')."""
    shop.page.evaluate("(steps) => { window.__script = steps; }", list(steps))
    shop.page.evaluate(SCRIPTED_MODEL, None)
    shop.page.wait_for_function(f"{EL}.agent.model === 'scripted' || !{EL}.agent.running")


def unscript(shop: Shop) -> None:
    shop.page.evaluate(f"{EL}.options = {{}}")


def status(shop: Shop) -> str:
    return str(shop.page.inner_text("site-agent >> .status")).strip()


def shadow_focus(shop: Shop) -> str:
    return str(
        shop.page.evaluate(
            f"""() => {{ const el = {EL}; const a = el.shadowRoot.activeElement;
            if (a) return 'shadow:' + (a.className || a.localName);
            const p = document.activeElement;
            return 'page:' + (p?.id || p?.localName); }}"""
        )
    )


# ---------------------------------------------------------------------------- the card


def test_the_card_is_read_from_its_top_and_allow_waits_until_all_was_seen(fresh: Shop) -> None:
    page = fresh.page
    page.set_viewport_size({"width": 480, "height": 300})  # 1440x900 at 300 % zoom
    fresh.ask_and_wait("find red mugs")
    fresh.ask_and_wait("find tote bags")
    fresh.ask(LONG_NOTE)
    fresh.card()
    page.wait_for_timeout(300)
    seen = page.evaluate(GEOMETRY)
    assert seen["heading"], "the card's heading must be on screen when it appears"
    assert not seen["allow"], "this card is taller than the panel's view (the test's premise)"
    assert seen["disabled"]
    # Allow pressed without scrolling (a script, a stray click): nothing is allowed.
    page.evaluate(f"{EL}.shadowRoot.querySelector('.card .allow').click()")
    page.wait_for_timeout(300)
    assert fresh.page.locator("site-agent >> .card").count() == 1
    feedback = [e for e in fresh.events("confirm-result") if e["call"]["name"] == "send_feedback"]
    assert feedback == []
    assert "read the whole request" in page.inner_text("site-agent >> .blocked-hint")
    # Its top is now above the view: a "more above" button leads back to it.
    seen = page.evaluate(GEOMETRY)
    assert seen["allow"] and not seen["heading"] and seen["moreAbove"]
    page.click("site-agent >> .more-above")
    page.wait_for_timeout(200)
    assert page.evaluate(GEOMETRY)["heading"]
    # A visitor who scrolls down to Allow can allow.
    page.evaluate(f"{EL}.shadowRoot.querySelector('.card .allow').scrollIntoView({{block: 'end'}})")
    page.wait_for_function(
        f"!{EL}.shadowRoot.querySelector('.card .allow').hasAttribute('aria-disabled')"
    )
    page.click("site-agent >> .card .allow")
    fresh.no_card()
    # The card goes at once; the confirm-result event comes back from the worker after it.
    for _ in range(100):
        found = [e for e in fresh.events("confirm-result") if e["call"]["name"] == "send_feedback"]
        if found:
            break
        page.wait_for_timeout(100)
    [decision] = found
    assert decision["decision"]["allowed"] is True
    page.wait_for_function("document.getElementById('feedback-message').value !== ''")


def test_at_400_percent_zoom_the_panel_scrolls_as_one_to_the_cards_top(fresh: Shop) -> None:
    page = fresh.page
    page.set_viewport_size({"width": 320, "height": 200})  # 1280x800 at 400 % zoom
    fresh.ask(LONG_NOTE)
    fresh.card()
    page.wait_for_timeout(300)
    seen = page.evaluate(GEOMETRY)
    assert seen["heading"] and not seen["allow"] and seen["disabled"]
    page.evaluate(f"{EL}.shadowRoot.querySelector('.card .allow').scrollIntoView({{block: 'end'}})")
    page.wait_for_function(
        f"!{EL}.shadowRoot.querySelector('.card .allow').hasAttribute('aria-disabled')"
    )
    page.click("site-agent >> .card .deny")
    fresh.last_ask()


def test_a_short_viewport_gets_a_full_screen_modal_panel(fresh: Shop) -> None:
    page = fresh.page
    page.evaluate(f"{EL}.hide()")
    page.set_viewport_size({"width": 740, "height": 375})  # a phone in landscape
    page.click("site-agent >> .launcher")
    page.wait_for_timeout(300)
    box = page.locator("site-agent >> .panel").bounding_box()
    assert box == {"x": 0, "y": 0, "width": 740, "height": 375}
    state = page.evaluate(
        f"""() => ({{ modal: {EL}.shadowRoot.querySelector('.panel').getAttribute('aria-modal'),
            main: document.querySelector('main').inert, launcher:
            {EL}.shadowRoot.querySelector('.launcher').inert }})"""
    )
    assert state == {"modal": "true", "main": True, "launcher": True}
    for _ in range(12):  # Tab never leaves the panel for the page behind it
        page.keyboard.press("Tab")
        assert page.evaluate(f"document.activeElement === {EL}"), shadow_focus(fresh)
    page.keyboard.press("Escape")
    state = page.evaluate(
        f"""() => ({{ modal: {EL}.shadowRoot.querySelector('.panel').hasAttribute('aria-modal'),
            main: document.querySelector('main').inert }})"""
    )
    assert state == {"modal": False, "main": False}
    assert shadow_focus(fresh) == "shadow:launcher"
    # On a desktop the panel is not modal: the page stays usable beside it.
    page.set_viewport_size(DESKTOP)
    page.click("site-agent >> .launcher")
    assert page.evaluate("document.querySelector('main').inert") is False
    assert page.get_attribute("site-agent >> .panel", "aria-modal") is None


def test_a_site_summary_is_shown_as_text_and_the_arguments_stay(fresh: Shop) -> None:
    page = fresh.page
    page.evaluate(
        f"""{EL}.configure({{ summary: ({{ tool }}) =>
            tool.name === 'add_to_cart' ? '<b>2 items</b>, $24.00' : undefined }})"""
    )
    fresh.ask("add two mugs to my cart")
    card = fresh.card()
    assert card.locator(".summary").inner_text() == "<b>2 items</b>, $24.00"
    assert card.locator(".summary b").count() == 0
    assert "Quantity" in card.locator("dl").inner_text()  # the arguments still in full
    card.locator(".deny").click()
    fresh.last_ask()
    unscript(fresh)


def test_the_demo_checkout_card_says_what_the_order_is(shop: Shop) -> None:
    shop.open()  # the demo's own options (its checkout summary)
    shop.reset()
    shop.ask("add two mugs to my cart")
    shop.card().locator(".allow").click()
    shop.last_ask()
    shop.ask("check out")
    card = shop.card()
    assert card.locator(".summary").inner_text() == "2 items, $24.00"
    card.locator(".deny").click()
    shop.last_ask()


def test_a_card_waits_for_a_visitor_typing_in_the_page(fresh: Shop) -> None:
    page = fresh.page
    page.focus("#proxy-url")
    page.keyboard.press("End")
    page.keyboard.type("x")
    fresh.ask("add two mugs to my cart")
    fresh.card()
    page.keyboard.type("y")
    assert shadow_focus(fresh) == "page:proxy-url"
    assert page.input_value("#proxy-url").endswith("xy")
    assert "It waits until you are ready" in status(fresh)
    page.click("site-agent >> .card .deny")
    fresh.last_ask()
    page.fill("#proxy-url", "http://127.0.0.1:8787/")


# ---------------------------------------------------------------------------- words


def test_a_failed_run_is_told_plainly_and_try_again_sends_it_again(fresh: Shop) -> None:
    page = fresh.page
    script(fresh, {"throw": "boom: HTTP 500 upstream-error"}, {"answer": "Here they are."})
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    page.fill("site-agent >> textarea", "find red mugs")
    page.keyboard.press("Enter")
    error = page.locator("site-agent >> .log .error")
    error.wait_for()
    assert error.inner_text().startswith("The assistant could not answer just now.")
    assert "boom" not in fresh.log_text() and "HTTP" not in fresh.log_text()
    page.wait_for_function(f"!{EL}.agent.running")
    assert status(fresh) == "The assistant could not answer just now."
    assert any("boom" in w for w in warnings)  # the detail is for developers
    page.click("site-agent >> .retry-run")
    page.locator("site-agent >> .msg.assistant", has_text="Here they are.").wait_for()
    assert page.evaluate("window.__calls") == 2
    assert fresh.log_text().count("find red mugs") == 2
    unscript(fresh)


@pytest.mark.parametrize(
    ("message", "sentence"),
    [
        ("The model endpoint is busy; try again in a moment (HTTP 429)", "busy right now"),
        ("Could not reach the model endpoint: TypeError: Failed to fetch", "connection"),
        ("The model provider behind the endpoint did not answer in time", "took too long"),
    ],
)
def test_model_errors_get_the_sentence_for_their_cause(
    fresh: Shop, message: str, sentence: str
) -> None:
    script(fresh, {"throw": message})
    fresh.ask("find red mugs")
    fresh.last_ask()
    text = fresh.page.inner_text("site-agent >> .log .error")
    assert sentence in text and message not in text
    assert "Try again" in text
    unscript(fresh)


def test_a_slow_model_shows_a_sign_of_life_and_the_time_limit_ends_the_run(fresh: Shop) -> None:
    page = fresh.page
    page.evaluate("window.__keep = { timeLimitMs: 4000 }")
    script(fresh, {"wait": -1})  # never answers
    page.evaluate("window.__keep = undefined")
    fresh.ask("find red mugs")
    page.locator("site-agent >> .log .waiting").wait_for(timeout=3500)
    assert "thinking" in page.inner_text("site-agent >> .log .waiting")
    outcome = fresh.last_ask(timeout=10_000)
    assert outcome["result"]["status"] == "aborted"
    error = page.inner_text("site-agent >> .log .error")
    assert "took too long" in error and "Try again" in error
    assert page.locator("site-agent >> .log .waiting").count() == 0
    assert "took too long" in status(fresh)
    unscript(fresh)


def test_a_failed_start_says_so_on_screen_and_in_the_status(shop: Shop) -> None:
    page = shop.page
    shop.open("", boot=False)
    page.evaluate(
        "async () => (await import('/loader.js')).configureRuntime({ indexURL: '/missing/' })"
    )
    page.click("site-agent >> .launcher")
    shop.wait_state("failed", timeout=20_000)
    assert status(shop) == "The assistant could not start."
    box = page.inner_text("site-agent >> .failed")
    assert "fetch" not in box.lower() and "lock" not in box.lower()
    page.evaluate(
        "async () => (await import('/loader.js')).configureRuntime({ indexURL: 'pyodide/' })"
    )
    page.click("site-agent >> .retry")
    shop.wait_state("ready")


def test_loading_is_told_in_the_visitors_words(shop: Shop) -> None:
    page = shop.page
    shop.open("", boot=False)
    page.evaluate(
        f"""() => {{ window.__said = [];
        const root = {EL}.shadowRoot;  // the panel loads on intent: watch the whole shadow root
        new MutationObserver(() => {{ const s = root.querySelector('.status');
          if (s && s.textContent !== window.__said.at(-1)) window.__said.push(s.textContent); }})
          .observe(root, {{ childList: true, characterData: true, subtree: true }}); }}"""
    )
    page.click("site-agent >> .launcher")
    shop.wait_state("ready")
    said: list[str] = page.evaluate("window.__said")
    assert any(re.fullmatch(r"Starting the assistant… \d{1,3} %", s) for s in said), said
    assert not any("Python" in s or "packages" in s for s in said), said


# ---------------------------------------------------------------------------- focus


def test_focus_stays_in_the_panel_after_send_and_stop(fresh: Shop) -> None:
    page = fresh.page
    page.fill("site-agent >> textarea", "find red mugs")
    page.click("site-agent >> .send")
    page.wait_for_function(f"!{EL}.agent.running && window.__done.length === 1")
    assert shadow_focus(fresh) == "shadow:textarea"
    script(fresh, {"wait": -1})
    page.fill("site-agent >> textarea", "find tote bags")
    page.keyboard.press("Enter")
    page.wait_for_function(f"{EL}.agent.running")
    page.focus("site-agent >> .stop")
    page.keyboard.press("Enter")
    page.wait_for_function(f"!{EL}.agent.running")
    page.wait_for_timeout(100)
    assert shadow_focus(fresh) == "shadow:textarea"
    unscript(fresh)


# ---------------------------------------------------------------------------- form tools


def test_a_form_tool_says_to_press_send_and_the_line_ends_with_stop(fresh: Shop) -> None:
    page = fresh.page
    fresh.ask("send feedback: love the mugs")
    fresh.card().locator(".allow").click()
    line = page.locator("site-agent >> .log .handoff")
    line.wait_for()
    assert line.inner_text() == "Check the form on the page and press Send."
    assert status(fresh) == "Check the form on the page and press Send."
    page.evaluate(f"{EL}.stop()")
    fresh.last_ask()
    assert page.locator("site-agent >> .log .handoff").count() == 0
    assert "send_feedback: not finished." in fresh.log_text()


def test_on_a_phone_the_panel_steps_aside_for_the_form(fresh: Shop) -> None:
    page = fresh.page
    page.set_viewport_size({"width": 375, "height": 740})
    fresh.ask("send feedback: love the mugs")
    fresh.card().locator(".allow").click()
    page.wait_for_function("document.getElementById('feedback-message').value !== ''")
    page.wait_for_function(f"{EL}.shadowRoot.querySelector('.panel').hidden")
    # The focus is in the form (its field; Chromium's own form filling moves it to Send).
    assert page.evaluate(
        "document.getElementById('feedback-form').contains(document.activeElement)"
    )
    assert page.evaluate("document.querySelector('main').inert") is False
    page.click("#feedback-form button[type=submit]")
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "answered"


# ---------------------------------------------------------------------------- sizes, colours


def test_text_follows_the_visitors_font_size_and_the_input_grows(fresh: Shop) -> None:
    page = fresh.page
    size = f"parseFloat(getComputedStyle({EL}.shadowRoot.querySelector('.status')).fontSize)"
    normal = page.evaluate(size)
    page.evaluate("document.documentElement.style.fontSize = '32px'")
    try:
        assert page.evaluate(size) == pytest.approx(normal * 2, rel=0.05)
    finally:
        page.evaluate("document.documentElement.style.fontSize = ''")
    height = "site-agent >> textarea"
    one = page.locator(height).bounding_box()["height"]
    page.fill(height, "one\ntwo\nthree")
    three = page.locator(height).bounding_box()["height"]
    assert three > one * 1.8
    page.fill(height, "\n".join(str(i) for i in range(30)))
    assert page.locator(height).bounding_box()["height"] < one * 5  # a few lines, then it scrolls
    page.fill(height, "")


def test_touch_screens_get_44_pixel_targets_and_a_16_pixel_input(browser: Any, site: Any) -> None:
    context = browser.new_context(
        viewport={"width": 375, "height": 740}, has_touch=True, is_mobile=True
    )
    try:
        page = context.new_page()
        page.goto(site.url)
        page.wait_for_selector("html[data-ready=true]")
        page.tap("site-agent >> .launcher")
        page.locator("site-agent >> .example").first.wait_for()
        small = page.evaluate(
            f"""() => [...{EL}.shadowRoot.querySelectorAll('.panel button')]
              .filter((b) => b.offsetParent !== null)
              .map((b) => [b.className, b.getBoundingClientRect()])
              .filter(([, r]) => r.width < 44 || r.height < 44).map(([c]) => c)"""
        )
        assert small == []
        font = page.evaluate(
            f"parseFloat(getComputedStyle({EL}.shadowRoot.querySelector('textarea')).fontSize)"
        )
        assert font >= 16
    finally:
        context.close()


def test_forced_colours_keep_borders_and_tell_allow_from_deny(fresh: Shop) -> None:
    page = fresh.page
    page.emulate_media(forced_colors="active")
    fresh.ask_and_wait("find red mugs")
    fresh.ask("add two mugs to my cart")
    fresh.card()
    look = page.evaluate(
        f"""() => {{ const root = {EL}.shadowRoot;
        const s = (sel) => {{ const c = getComputedStyle(root.querySelector(sel));
          return {{ width: c.borderTopWidth, style: c.borderTopStyle, weight: c.fontWeight }}; }};
        return {{ launcher: s('.launcher'), user: s('.msg.user'), assistant: s('.msg.assistant'),
                 allow: s('.allow'), deny: s('.deny') }}; }}"""
    )
    for part in ("launcher", "user", "assistant"):
        assert look[part]["style"] != "none" and float(look[part]["width"][:-2]) >= 1, part
    allow, deny = look["allow"], look["deny"]
    assert (allow["width"], allow["style"], allow["weight"]) != (
        deny["width"],
        deny["style"],
        deny["weight"],
    )
    page.click("site-agent >> .card .deny")
    fresh.last_ask()


# ---------------------------------------------------------------------------- the basics


def test_new_conversation_asks_first_and_keeps_room_from_close(fresh: Shop) -> None:
    page = fresh.page
    fresh.ask_and_wait("find red mugs")
    gap = page.evaluate(
        f"""() => {{ const r = (s) => {EL}.shadowRoot.querySelector(s).getBoundingClientRect();
        return r('.close').left - r('.fresh').right; }}"""
    )
    assert gap >= 12
    page.click("site-agent >> .fresh")
    assert "find red mugs" in fresh.log_text()  # nothing lost yet
    assert shadow_focus(fresh) == "shadow:fresh-no"
    page.click("site-agent >> .fresh-no")
    assert "find red mugs" in fresh.log_text()
    page.click("site-agent >> .fresh")
    page.click("site-agent >> .fresh-yes")
    assert fresh.log_text().strip() == ""
    assert status(fresh) == "New conversation started."


def test_the_empty_panel_greets_and_offers_examples(fresh: Shop) -> None:
    page = fresh.page
    welcome = page.locator("site-agent >> .welcome")
    assert "I can find products" in welcome.inner_text()
    page.click("site-agent >> .example >> text=Find red mugs")
    page.locator("site-agent >> .msg.assistant", has_text="Red enamel mug").wait_for()
    assert page.locator("site-agent >> .welcome .example").count() == 0


def test_links_in_answers_are_links_and_only_http_ones(fresh: Shop) -> None:
    page = fresh.page
    script(
        fresh,
        {
            "answer": "See https://example.com/mugs. Or [our totes](/product.html?id=tote) "
            "and [home](http://127.0.0.1:1/), not javascript:alert(1) nor "
            "[this](javascript:alert(2)) nor <b>bold</b>."
        },
    )
    fresh.ask_and_wait("find red mugs")
    links = page.evaluate(
        f"""() => [...{EL}.shadowRoot.querySelectorAll('.msg.assistant a')].map((a) =>
            [a.getAttribute('href'), a.textContent, a.target, a.rel])"""
    )
    assert links == [
        ["https://example.com/mugs", "https://example.com/mugs", "_blank", "noopener noreferrer"],
        ["http://127.0.0.1:1/", "home", "_blank", "noopener noreferrer"],
    ]
    assert page.locator("site-agent >> .msg.assistant b").count() == 0
    assert "[this](javascript:alert(2))" in fresh.log_text()
    unscript(fresh)


def test_an_answer_while_the_panel_is_closed_marks_the_launcher(fresh: Shop) -> None:
    page = fresh.page
    page.evaluate(f"{EL}.hide()")
    page.evaluate(f"{EL}.agent.run('find red mugs').done")
    launcher = page.locator("site-agent >> .launcher")
    assert launcher.get_attribute("data-unread") == ""
    assert "new reply" in launcher.inner_text()
    launcher.click()
    assert launcher.get_attribute("data-unread") is None
    assert "new reply" not in launcher.inner_text()


def test_the_header_names_the_model_only_when_the_site_asks(fresh: Shop) -> None:
    page = fresh.page
    assert page.inner_text("site-agent >> .model") == "Model: demo rules (not AI)"  # show-model
    page.evaluate(f"{EL}.removeAttribute('show-model')")
    try:
        assert page.locator("site-agent >> .model").is_hidden()
    finally:
        page.evaluate(f"{EL}.setAttribute('show-model', '')")
