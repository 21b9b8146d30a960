"""The demo shop in Firefox and WebKit: the visitor's main paths, with one browser per engine.

The same paths as Chromium's shim lane (``tests/browser/test_element_shop.py``,
``test_worker_channel.py``, ``test_element_form_tool.py``, ``test_element_stream.py``,
``test_element_proxy_server.py``), on the same helpers (``element_support.Shop``): neither
engine has WebMCP, so ``document.modelContext`` is the shim; neither has the Prompt API or
JSPI, so the model is demo rules or the site's proxy and every entry point is async. The first
test boots Python (cold, in the worker); the rest reuse that page.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from element_support import EL, Shop
from engine_support import instrument, start_engine_site

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from stub_upstream import (
    KEY,
    MODEL,
    AppServer,
    Reply,
    StubUpstream,
    base_url,
    serve_tool_chooser,
    stream_reply,
)

pytestmark = pytest.mark.engines

#: A cold start on a loaded 2-core machine (WebKit's took up to a minute there).
BOOT_MS = 180_000
WORKER_PROXIES = (
    "async () => (await import('/web/runtime/worker-host.js')).workerPyProxies({ trace: %s })"
)


@pytest.fixture(scope="module")
def site(overlay: Path) -> Iterator[Any]:
    server = start_engine_site(instrument(overlay))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    return Shop(page, site.url)


@pytest.fixture
def fresh(shop: Shop) -> Shop:
    if shop.page.evaluate(f"{EL} ? {EL}.state : null") != "ready":
        shop.open(boot=False)
        shop.page.click("site-agent >> .launcher")
        shop.wait_state("ready", timeout=BOOT_MS)
    shop.reset()
    return shop


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# ---------------------------------------------------------------------------- starting


def test_launcher_at_once_then_python_in_the_worker_and_a_message_typed_while_it_starts(
    shop: Shop, site: Any, engine: str
) -> None:
    site.requests.clear()
    shop.open(boot=False)
    launcher = shop.page.locator("site-agent >> .launcher")
    assert launcher.is_visible()
    assert shop.page.evaluate(f"{EL}.state") == "idle"
    shop.page.wait_for_timeout(1000)  # idle time: nothing starts by itself
    fetched = {p.split("?")[0] for m, p, _s in site.requests if m == "GET"}
    assert not any(p.startswith("/pyodide/") for p in fetched), sorted(fetched)
    state = shop.page.evaluate(
        """async () => {
            const m = await import('/loader.js');
            return { native: m.hasNativeModelContext(), shim: m.isShim(document.modelContext),
                     shown: document.documentElement.dataset.webmcp,
                     languageModel: typeof LanguageModel };
        }"""
    )
    assert state == {"native": False, "shim": True, "shown": "shim", "languageModel": "undefined"}

    launcher.click()
    assert shop.page.evaluate(f"{EL}.state") == "loading"
    shop.page.fill("site-agent >> textarea", "find red mugs")
    shop.page.click("site-agent >> .send")
    assert shop.page.evaluate(f"{EL}.state") == "loading"
    assert (
        shop.page.locator("site-agent >> .msg.user.queued").inner_text().endswith("find red mugs")
    )
    shop.wait_state("ready", timeout=BOOT_MS)
    shop.page.wait_for_function("window.__done.length === 1", timeout=BOOT_MS)
    [done] = shop.done()
    assert done["status"] == "answered", done
    assert "Red enamel mug" in done["answer"]
    assert shop.page.locator("site-agent >> .queued").count() == 0
    # Python runs in a module worker (the default), not on the page.
    assert isinstance(shop.page.evaluate(WORKER_PROXIES % "false"), int)
    assert shop.page.evaluate("typeof globalThis.pyodide") == "undefined"
    fetched = {p.split("?")[0] for m, p, _s in site.requests if m == "GET"}
    assert {"/web/runtime/worker.js", "/pyodide/pyodide.asm.wasm"} <= fetched


# ---------------------------------------------------------------------------- the rules


def test_ask_a_read_only_tool_and_the_answer(fresh: Shop) -> None:
    result = fresh.ask_and_wait("find red mugs")
    assert result["status"] == "answered"
    assert "Red enamel mug" in result["answer"]
    assert fresh.events("confirm-request") == []
    [decision] = fresh.events("confirm-result")
    assert decision["decision"] == {"allowed": True, "by": "read-only"}
    assert "Red enamel mug" in fresh.log_text()
    assert fresh.cart_count() == 0


def test_a_card_allow_runs_the_tool(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    card = fresh.card()
    assert card.locator("h3").inner_text() == "Allow Add to cart?"
    labels = card.locator("dt").all_inner_texts()
    values = card.locator("dd").all_inner_texts()
    assert dict(zip(labels, values, strict=True)) == {"Product": "mugs", "Quantity": "2"}
    assert fresh.focused() == "shadow:box card"
    assert fresh.cart_count() == 0
    card.locator(".allow").click()
    fresh.wait_cart(2)
    assert fresh.cart_items() == ["2 × Classic mug — $24.00"]
    assert "Added 2 × Classic mug" in fresh.last_ask()["result"]["answer"]


def test_a_card_deny_does_not_run_it(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card().locator(".deny").click()
    outcome = fresh.last_ask()
    assert fresh.cart_count() == 0
    [decision] = fresh.events("confirm-result")
    assert decision["decision"] == {"allowed": False, "by": "visitor", "reason": "not-read-only"}
    assert fresh.events("tool-result") == []
    assert outcome["result"]["answer"] == "I did not run add_to_cart: it was not allowed."


def test_escape_denies_the_card_and_focus_goes_back_to_the_input(fresh: Shop) -> None:
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
    assert fresh.page.locator("site-agent >> .panel").is_visible()
    assert fresh.focused() == "shadow:textarea"


def test_stop_during_a_tool_call(fresh: Shop) -> None:
    fresh.ask("add two mugs to my cart")
    fresh.card()
    fresh.page.locator("site-agent >> .stop").click()
    fresh.no_card()
    outcome = fresh.last_ask()
    assert outcome["result"]["status"] == "aborted"
    assert fresh.cart_count() == 0
    assert fresh.page.inner_text("site-agent >> .status") == "Stopped."
    [decision] = fresh.events("confirm-result")
    assert decision["decision"]["cause"] == "stopped"


def test_after_untrusted_output_a_pre_approved_tool_asks(fresh: Shop) -> None:
    fresh.reset(**{"pre-approved": "add_to_cart"})
    fresh.ask_and_wait("show the reviews of the classic mug")
    [tool_result] = fresh.events("tool-result")
    assert tool_result["untrusted"] is True
    fresh.ask("add one mug")
    card = fresh.card()
    assert card.get_attribute("data-reason") == "after-untrusted"
    card.locator(".deny").click()
    fresh.last_ask()
    assert fresh.cart_count() == 0


def test_a_form_tool_through_the_shim(fresh: Shop) -> None:
    tools = [t["name"] for t in fresh.page.evaluate(f"{EL}.agent.tools()")]
    assert "send_feedback" in tools
    fresh.ask("send feedback: love the mugs")
    card = fresh.card()
    assert card.get_attribute("data-reason") == "annotations-unknown"
    card.locator(".allow").click()
    fresh.page.wait_for_function("document.getElementById('feedback-message').value !== ''")
    fresh.page.click("#feedback-form button[type=submit]")
    outcome = fresh.last_ask()
    assert outcome["result"]["answer"] == (
        'send_feedback: The note was sent to the shop team: "love mugs"'
    )
    assert fresh.page.inner_text("#feedback-sent").splitlines()[-1] == "love mugs"


def test_no_pyproxy_leaks_after_runs(fresh: Shop) -> None:
    before = fresh.page.evaluate(WORKER_PROXIES % "true")
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
    assert fresh.page.evaluate(WORKER_PROXIES % "false") == before


# ---------------------------------------------------------------------------- the proxy


def test_the_proxy_json_on_loopback(shop: Shop, site: Any) -> None:
    with serve_tool_chooser(
        "add_to_cart",
        {"product": "mug", "quantity": 2},
        allowed_origins=[origin_of(site.url)],
        answer="Your mugs are in the cart.",
    ) as proxy_url:
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        shop.ask("add two mugs to my cart")
        shop.card().locator(".allow").click()
        shop.wait_cart(2)
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "answered", outcome
        assert outcome["result"]["answer"] == "Your mugs are in the cart."
        models = [s["model"] for s in outcome["result"]["trace"]["steps"] if s["kind"] == "model"]
        assert models == [f"proxy ({proxy_url})"] * 2
        assert KEY not in shop.page.content()


def streaming_proxy(site: Any, chunks: list[bytes | float]) -> Any:
    from pysite_agent.server import create_proxy_app

    class Proxy:
        def __enter__(self) -> tuple[str, StubUpstream]:
            self.stub = StubUpstream(lambda _r: Reply(stream=chunks)).__enter__()
            app = create_proxy_app(
                provider="openai",
                model=MODEL,
                api_key=KEY,
                allowed_origins=[origin_of(site.url)],
                base_url=base_url(self.stub, "openai"),
                rate_limit=False,
            )
            self.server = AppServer(app).__enter__()
            return f"{self.server.url}/", self.stub

        def __exit__(self, *exc: object) -> None:
            self.server.__exit__(*exc)
            self.stub.__exit__(*exc)

    return Proxy()


def test_the_proxy_streaming_and_stop_during_the_model_call(shop: Shop, site: Any) -> None:
    chunks = stream_reply("openai", ["Here are ", "two mugs."])
    with streaming_proxy(site, chunks) as (proxy_url, _stub):
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        result = shop.ask_and_wait("which mugs do you have?")
        assert result["status"] == "answered", result
        assert result["answer"] == "Here are two mugs."
        assert [e["text"] for e in shop.events("text-delta")] == ["Here are ", "two mugs."]

    chunks = stream_reply("openai", ["Let me think ", "about that."])
    cut = next(i for i, c in enumerate(chunks) if b"Let me think" in c) + 1
    paused: list[bytes | float] = [*chunks[:cut], 10.0, *chunks[cut:]]
    with streaming_proxy(site, paused) as (proxy_url, stub):
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        shop.ask("tell me about mugs")
        shop.page.locator("site-agent >> .msg.assistant.streaming").wait_for(timeout=20_000)
        shop.page.click("site-agent >> .stop")
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "aborted", outcome
        assert stub.closed_by_client.wait(5), "the upstream request stayed open after Stop"
        incomplete = shop.page.locator("site-agent >> .msg.assistant.incomplete")
        assert "Let me think" in incomplete.inner_text()
    shop.reset()


def test_a_proxy_that_refuses_the_origin(shop: Shop) -> None:
    with serve_tool_chooser(
        "add_to_cart", {"product": "mug", "quantity": 2}, allowed_origins=["https://shop.example"]
    ) as proxy_url:
        shop.reset(models="proxy", **{"proxy-url": proxy_url})
        outcome = shop.ask_and_wait("add two mugs to my cart")
        assert outcome["status"] == "error", outcome
        assert outcome["error"]["code"] in ("model-error", "model-unavailable")
        assert shop.cart_count() == 0
    shop.reset()
