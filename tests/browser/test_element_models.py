"""``<site-agent>``'s models and settings, end to end in headless Chromium, in both lanes.

- Debian Chromium's real ``LanguageModel`` reports ``unavailable``: with ``proxy-url`` the
  element falls back to the proxy (a loopback stub speaking protocol v1); without it, the
  element shows the no-model state.
- A fake ``LanguageModel`` that follows the documented API (availability, ``create`` with a
  ``monitor`` and ``downloadprogress``, ``NotAllowedError`` without user activation) shows the
  "Download the on-device model" button, which never downloads by itself.
- JS values in ``element.options`` (model, confirm, tools), string overrides, the small-screen
  layout, and a failed Python start with its retry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from element_support import BOOT_TIMEOUT_MS, EL, RECORDER, Shop, start_site

pytestmark = pytest.mark.browser

PROXY_PATH = "/api/agent"

FAKE_LANGUAGE_MODEL = """
if (new URLSearchParams(location.search).has('fake-lm')) {
  const calls = { availability: 0, create: [], prompt: [], destroyed: 0 };
  let state = 'downloadable';
  class Session {
    async prompt(text, options = {}) {
      calls.prompt.push({
        constrained: !!options.responseConstraint,
        signal: options.signal instanceof AbortSignal,
      });
      return JSON.stringify({ type: 'answer', text: 'Hello from the on-device model.' });
    }
    promptStreaming(text, options = {}) {
      const reply = this.prompt(text, options);
      return new ReadableStream({
        async start(controller) { controller.enqueue(await reply); controller.close(); },
      });
    }
    async clone() { return new Session(); }
    destroy() { calls.destroyed += 1; }
  }
  const LanguageModel = {
    async availability() { calls.availability += 1; return state; },
    async create(options = {}) {
      const active = navigator.userActivation.isActive;
      calls.create.push({ active, monitor: typeof options.monitor === 'function' });
      if (state === 'downloadable' && !active) {
        throw new DOMException('Requires a user gesture', 'NotAllowedError');
      }
      if (state !== 'available') {
        const monitor = new EventTarget();
        options.monitor?.(monitor);
        state = 'downloading';
        for (const loaded of [0, 0.5, 1]) {
          await new Promise((r) => setTimeout(r, 60));
          const event = new Event('downloadprogress');
          Object.assign(event, { loaded, total: 1 });
          monitor.dispatchEvent(event);
        }
        state = 'available';
      }
      return new Session();
    },
  };
  Object.defineProperty(window, 'LanguageModel', {
    value: LanguageModel, configurable: true, writable: true,
  });
  window.__lm = calls;
  if (new URLSearchParams(location.search).has('fake-lm-tools')) {
    // Prompt API tool use, as documented: three classes, availability() with the tool-call
    // and tool-response types, tool-call parts from promptStreaming(). Each part the page
    // receives is checked to be a real instance of its class.
    class LanguageModelToolCall { constructor(init) { Object.assign(this, init); } }
    class LanguageModelToolSuccess { constructor(init) { Object.assign(this, init); } }
    class LanguageModelToolError { constructor(init) { Object.assign(this, init); } }
    Object.assign(window, {
      LanguageModelToolCall, LanguageModelToolSuccess, LanguageModelToolError });
    calls.parts = [];
    const plainAvailability = LanguageModel.availability;
    LanguageModel.availability = async (options = {}) => {
      const wanted = (options.expectedInputs ?? []).map((t) => t.type);
      calls.toolTypesAsked = calls.toolTypesAsked || wanted.includes('tool-call');
      return plainAvailability(options);
    };
    Session.prototype.promptStreaming = function (input) {
      const parts = (Array.isArray(input) ? input : [])
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []));
      for (const part of parts) {
        const cls = part.type === 'tool-call' ? LanguageModelToolCall : LanguageModelToolSuccess;
        calls.parts.push([part.type, part.value instanceof cls]);
      }
      const answered = parts.some((p) => p.type === 'tool-response');
      return new ReadableStream({
        start(controller) {
          if (answered) controller.enqueue('Added with native tool use.');
          else {
            controller.enqueue('Adding. ');
            const value = new LanguageModelToolCall({ callID: 'call-1', name: 'add_to_cart',
              arguments: { product: 'mug', quantity: 2 } });
            controller.enqueue({ type: 'tool-call', value });
          }
          controller.close();
        },
      });
    };
  }
}
"""


class ProxyStub:
    """Protocol v1 with scripted replies: a tool call for a fresh message, then an answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, Any]:
        request = json.loads(body)
        self.requests.append(request)
        last = request["messages"][-1]
        if last["role"] == "tool":
            return 200, {"type": "answer", "text": f"Proxy says: {last['content']}"}
        return 200, {
            "type": "tool",
            "name": "add_to_cart",
            "arguments": {"product": "mug", "quantity": 2},
            "id": "stub-1",
        }


@pytest.fixture(scope="module")
def stub() -> ProxyStub:
    return ProxyStub()


@pytest.fixture(scope="module")
def site(stub: ProxyStub) -> Iterator[Any]:
    server = start_site({PROXY_PATH: stub})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    page.add_init_script(RECORDER)
    page.add_init_script(FAKE_LANGUAGE_MODEL)
    return Shop(page, site.url)


def status(shop: Shop) -> dict[str, Any]:
    """The setup box's state, as the visitor sees it."""
    return dict(
        shop.page.evaluate(
            f"""() => {{
            const root = {EL}.shadowRoot;
            const q = (s) => root.querySelector(s);
            return {{
              model: q('.model').textContent,
              noModel: q('.no-model')?.innerText ?? null,
              download: q('.download')?.textContent ?? null,
              sendDisabled: q('.send').disabled,
            }};
        }}"""
        )
    )


# ---------------------------------------------------------------------------- real Chromium


def test_unavailable_chrome_model_falls_back_to_the_proxy(shop: Shop, stub: ProxyStub) -> None:
    shop.open(f"?models=chrome%20proxy&proxy-url={PROXY_PATH}")
    real = shop.page.evaluate("LanguageModel.availability()")
    assert real == "unavailable"  # Debian Chromium has no on-device model
    seen = status(shop)
    # A relative proxy-url is resolved against the page before it reaches the worker.
    proxy_url = shop.page.evaluate("(p) => new URL(p, document.baseURI).href", PROXY_PATH)
    assert seen["model"] == f"Model: proxy ({proxy_url})"
    assert seen["noModel"] is None and seen["sendDisabled"] is False
    stub.requests.clear()
    shop.ask("add two mugs to my cart")
    shop.card().locator(".allow").click()
    shop.wait_cart(2)
    outcome = shop.last_ask()
    assert outcome["result"]["answer"].startswith("Proxy says: Added 2 × Classic mug")
    first, second = stub.requests
    assert first["version"] == 1 and isinstance(first["instructions"], str)
    assert first["messages"] == [{"role": "user", "content": "add two mugs to my cart"}]
    assert {t["name"] for t in first["tools"]} >= {"add_to_cart", "checkout", "search_products"}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    models = [s["model"] for s in outcome["result"]["trace"]["steps"] if s["kind"] == "model"]
    assert models == [f"proxy ({proxy_url})"] * 2


def test_js_options_model_confirm_and_tools(shop: Shop) -> None:
    """Same page: a JS model object, a JS confirm and a JS tools array replace the defaults."""
    out = shop.page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            const seen = { requests: [], confirms: [] };
            el.options = {
              model: {
                name: 'scripted JS model',
                respond(request) {
                  seen.requests.push({ tools: request.tools.map((t) => t.name),
                    roles: request.messages.map((m) => m.role),
                    signal: request.signal instanceof AbortSignal,
                    instructions: typeof request.instructions });
                  const last = request.messages.at(-1);
                  if (last.role === 'tool') {
                    return { type: 'answer', text: 'JS model: ' + last.content };
                  }
                  return { type: 'tool', name: 'greet', arguments: { name: 'Ada' } };
                },
              },
              confirm: async (request, { signal }) => {
                seen.confirms.push({ tool: request.tool.name, reason: request.reason,
                  lines: request.lines, signal: signal instanceof AbortSignal });
                return true;
              },
              tools: [{
                name: 'greet', description: 'Greet someone by name.',
                inputSchema: { type: 'object', required: ['name'],
                               properties: { name: { type: 'string' } } },
                annotations: { readOnlyHint: false },
                execute: ({ name }) => `Hello, ${name}!`,
              }],
            };
            const result = await el.ask('say hello to Ada');
            const model = el.shadowRoot.querySelector('.model').textContent;
            const card = !!el.shadowRoot.querySelector('.card');
            el.options = {};
            return { result, seen, model, card };
        }"""
    )
    assert out["result"]["answer"] == "JS model: Hello, Ada!"
    assert out["card"] is False  # the JS confirm replaced the card
    assert out["model"] == "Model: scripted JS model"
    assert out["seen"]["confirms"] == [
        {
            "tool": "greet",
            "reason": "not-read-only",
            "lines": [{"key": "name", "label": "Name", "value": "Ada"}],
            "signal": True,
        }
    ]
    first = out["seen"]["requests"][0]
    assert first == {
        "tools": ["greet"],
        "roles": ["user"],
        "signal": True,
        "instructions": "string",
    }


def test_a_js_confirm_that_is_not_strictly_true_denies(shop: Shop) -> None:
    out = shop.page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            let ran = 0;
            el.options = {
              model: { respond: (r) => r.messages.at(-1).role === 'tool'
                ? { type: 'answer', text: r.messages.at(-1).content }
                : { type: 'tool', name: 'poke', arguments: {} } },
              confirm: () => 'yes',
              tools: [{ name: 'poke', description: 'Poke.', annotations: { readOnlyHint: false },
                        execute: () => { ran += 1; return 'poked'; } }],
            };
            const result = await el.ask('poke it');
            el.options = {};
            return { ran, answer: result.answer };
        }"""
    )
    assert out["ran"] == 0
    assert "denied" in out["answer"]


def test_strings_are_overridable_and_small_screens_get_the_whole_width(shop: Shop) -> None:
    page = shop.page
    page.evaluate(
        f"""() => {{
            const el = {EL};
            el.removeAttribute('label');
            el.strings = {{ label: 'Fragen', send: 'Senden', close: 'Schließen' }};
        }}"""
    )
    assert page.inner_text("site-agent >> .launcher") == "Fragen"
    assert page.inner_text("site-agent >> .send") == "Senden"
    assert page.get_attribute("site-agent >> .close", "aria-label") == "Schließen"
    page.evaluate(f"{EL}.strings = {{ label: 'Ask this site', send: 'Send', close: 'Close' }}")
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": 375, "height": 700})
        box = page.locator("site-agent >> .panel").bounding_box()
        assert box is not None
        assert (box["x"], box["width"]) == (0, 375)
        assert box["height"] == 700
    finally:
        page.set_viewport_size(size)


def test_without_a_proxy_the_no_model_state_says_what_to_do(shop: Shop) -> None:
    shop.open("")
    assert status(shop)["model"] == "Model: demo rules (not AI)"
    # The demo's picker sets models="chrome": a fresh agent, and Chromium has no model.
    shop.page.check("input[name=model][value=chrome]")
    shop.page.wait_for_function(f"!!{EL}.shadowRoot.querySelector('.no-model')")
    seen = status(shop)
    assert seen["model"] == "Model: chrome built-in"
    assert seen["sendDisabled"] is True
    assert seen["download"] is None
    assert "No AI model is available in this browser" in seen["noModel"]
    assert "Site owner: set proxy-url" in seen["noModel"]


# ---------------------------------------------------------------------------- fake Prompt API


def test_download_button_appears_and_never_downloads_by_itself(shop: Shop) -> None:
    page = shop.page
    shop.open("?models=chrome&fake-lm")
    seen = status(shop)
    assert seen["download"] == "Download the on-device model"
    assert seen["sendDisabled"] is True
    page.wait_for_timeout(300)
    assert page.evaluate("window.__lm.create") == []  # nothing downloads without a click
    page.click("site-agent >> .download")
    page.wait_for_function(f"!{EL}.shadowRoot.querySelector('.download')", timeout=10_000)
    calls = page.evaluate("window.__lm.create")
    assert calls == [{"active": True, "monitor": True}]
    seen = status(shop)
    assert seen["sendDisabled"] is False and seen["model"] == "Model: chrome built-in"
    result = shop.ask_and_wait("hello")
    assert result["answer"] == "Hello from the on-device model."
    prompts = page.evaluate("window.__lm.prompt")
    assert prompts == [{"constrained": True, "signal": True}]


def test_a_hidden_page_ends_the_model_sessions_in_worker_mode(shop: Shop) -> None:
    # Python runs in the worker (the default), which has no document: the page tells it.
    page = shop.page
    shop.open("?models=chrome&fake-lm")
    page.click("site-agent >> .download")
    page.wait_for_function(f"!{EL}.shadowRoot.querySelector('.download')", timeout=10_000)
    assert shop.ask_and_wait("hello")["answer"] == "Hello from the on-device model."
    assert page.evaluate(f"{EL}.getAttribute('runtime')") is None  # the default: worker
    page.wait_for_timeout(200)
    before = page.evaluate("window.__lm.destroyed")  # each step's clone, after its step
    page.evaluate(
        """() => {
        Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
        delete document.visibilityState;  // back to the real (visible) value
        document.dispatchEvent(new Event('visibilitychange'));
    }"""
    )
    # The base session (kept across steps) is destroyed; a new one is made on the next step.
    page.wait_for_function(f"window.__lm.destroyed > {before}", timeout=10_000)
    created = len(page.evaluate("window.__lm.create"))
    assert shop.ask_and_wait("hello again")["status"] == "answered"
    assert len(page.evaluate("window.__lm.create")) == created + 1


def test_native_tool_use_crosses_the_worker_channel(shop: Shop) -> None:
    # The tool-use classes exist on the page only, and their objects cannot be cloned: the
    # worker builds stand-ins, the page makes real ones of them, and tool-call parts come back
    # as plain data.
    page = shop.page
    shop.open("?models=chrome&fake-lm&fake-lm-tools")
    page.click("site-agent >> .download")
    page.wait_for_function(f"!{EL}.shadowRoot.querySelector('.download')", timeout=10_000)
    shop.ask("add two mugs to my cart")
    shop.card().locator(".allow").click()
    shop.wait_cart(2)
    outcome = shop.last_ask()
    assert outcome["result"]["answer"] == "Added with native tool use."
    assert page.evaluate("window.__lm.toolTypesAsked") is True
    # The second prompt carried the call and its result, each a real instance of its class.
    assert page.evaluate("window.__lm.parts") == [["tool-call", True], ["tool-response", True]]
    assert page.evaluate("window.__lm.prompt") == []  # no responseConstraint prompt()


def test_download_progress_is_shown(shop: Shop) -> None:
    page = shop.page
    shop.open("?models=chrome&fake-lm")
    page.evaluate(
        f"""() => {{
            window.__progress = [];
            const root = {EL}.shadowRoot;
            new MutationObserver(() => {{
              const p = root.querySelector('.download-box p');
              if (p) window.__progress.push(p.textContent);
            }}).observe(root, {{ subtree: true, childList: true, characterData: true }});
        }}"""
    )
    page.click("site-agent >> .download")
    page.wait_for_function(f"!{EL}.shadowRoot.querySelector('.download')", timeout=BOOT_TIMEOUT_MS)
    progress = page.evaluate("[...new Set(window.__progress)]")
    assert "Downloading the model… 50%" in progress
    assert "Downloading the model… 100%" in progress


# ---------------------------------------------------------------------------- failures


def test_a_failed_start_shows_the_error_and_retry_works(shop: Shop) -> None:
    page = shop.page
    shop.open("", boot=False)
    page.evaluate(
        "async () => (await import('/loader.js')).configureRuntime({ indexURL: '/missing/' })"
    )
    page.click("site-agent >> .launcher")
    shop.wait_state("failed", timeout=20_000)
    box = page.locator("site-agent >> .failed")
    assert box.get_attribute("role") == "alert"
    assert "The assistant could not start." in box.inner_text()
    assert "Try again" in box.inner_text()
    assert page.is_disabled("site-agent >> .send")
    page.evaluate(
        "async () => (await import('/loader.js')).configureRuntime({ indexURL: 'pyodide/' })"
    )
    page.click("site-agent >> .retry")
    shop.wait_state("ready")
    assert page.locator("site-agent >> .failed").count() == 0
    result = shop.ask_and_wait("find tote bags")
    assert "Linen tote bag" in result["answer"]


# ---------------------------------------------------------------------------- tool-choice eval


def test_the_agent_handle_runs_a_tool_choice_eval_and_no_tool_runs(shop: Shop) -> None:
    shop.open("")
    out = shop.page.evaluate(
        """async () => {
            const el = document.querySelector('site-agent');
            let ran = 0;
            const seen = [];
            el.options = {
              model: {
                name: 'scripted',
                respond: (r) => {
                  seen.push({ tools: r.tools.map((t) => t.name), last: r.messages.at(-1) });
                  const text = r.messages.at(-1).content;
                  if (text.includes('twice')) {
                    return { type: 'tool', name: 'poke', arguments: { times: 2 } };
                  }
                  if (text.includes('once')) {
                    return { type: 'tool', name: 'poke', arguments: { times: 3 } };
                  }
                  return { type: 'answer', text: 'hi' };
                },
              },
              tools: [{
                name: 'poke', description: 'Poke someone.',
                inputSchema: { type: 'object', properties: { times: { type: 'integer' } } },
                annotations: { readOnlyHint: false },
                execute: () => { ran += 1; return 'poked'; },
              }],
            };
            const report = await el.agent.evaluate({ cases: [
              { name: 'poke twice', message: 'poke it twice',
                expectedCall: [{ functionName: 'poke', arguments: { times: 2 } }] },
              { name: 'hello', message: 'hello', expectedCall: null },
              { name: 'poke once', message: 'poke once',
                expectedCall: [{ functionName: 'poke', arguments: { times: 1 } }] },
            ] });
            let refused = null;
            try {
              await el.agent.evaluate({ cases: [{ message: 'x', expectedCall: [{}] }] });
            } catch (error) {
              refused = { code: error.code, message: error.message };
            }
            el.options = {};
            return { ran, report, seen, refused };
        }"""
    )
    assert out["ran"] == 0  # tools are never executed
    report = out["report"]
    assert report["model"] == "scripted"
    assert report["total"] == {
        "cases": 3,
        "toolChoice": 1.0,
        "argumentsExact": 0.6667,
        "argumentKeys": 0.6667,
        "errors": 0,
    }
    assert [c["name"] for c in report["cases"]] == ["poke twice", "hello", "poke once"]
    assert out["seen"][0]["tools"] == ["poke"]  # the page's tools, as they are now
    assert out["seen"][0]["last"] == {"role": "user", "content": "poke it twice"}
    assert out["refused"]["code"] == "config" and "functionName" in out["refused"]["message"]
