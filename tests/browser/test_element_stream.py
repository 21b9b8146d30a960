"""Streaming answers in the element, end to end against the real proxy, in both WebMCP lanes.

The demo shop's ``proxy-url`` points at :func:`pysite_agent.server.create_proxy_app` under
uvicorn, in front of a stub upstream that streams in a provider's recorded shapes, with pauses
between chunks so the page can be looked at while the text is being written:

- the text shows as it is written, hidden from assistive technology until it is finished; the
  finished message then lands in the log (``role=log``, ``aria-live``) once, so it is announced
  once, not per fragment;
- text followed by a tool call in the same reply stays, marked as part of that step;
- a failure mid-stream keeps the text, marked incomplete, and the run ends with the error.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from element_support import RECORDER, Shop, start_site

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from stub_upstream import (
    KEY,
    MODEL,
    AppServer,
    Recorded,
    Reply,
    StubUpstream,
    base_url,
    last_turn_is_tool_result,
    stream_error,
    stream_reply,
)

pytestmark = pytest.mark.browser

DRAFT = "site-agent >> .msg.assistant.streaming"
FINISHED = "site-agent >> .msg.assistant:not(.streaming)"


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    page.add_init_script(RECORDER)
    return Shop(page, site.url)


@contextlib.contextmanager
def streaming_proxy(
    site: Any, provider: str, respond: Callable[[Recorded], Reply]
) -> Iterator[tuple[str, StubUpstream]]:
    from pysite_agent.server import create_proxy_app

    parts = urlsplit(site.url)
    with StubUpstream(respond) as stub:
        app = create_proxy_app(
            provider=provider,  # type: ignore[arg-type]
            model=MODEL,
            api_key=KEY,
            allowed_origins=[f"{parts.scheme}://{parts.netloc}"],
            base_url=base_url(stub, provider),
            rate_limit=False,
        )
        with AppServer(app) as server:
            yield f"{server.url}/", stub


def paused(chunks: list[bytes], after: bytes, seconds: float) -> list[bytes | float]:
    """``chunks`` with a pause after the first chunk that contains ``after``."""
    cut = next(i for i, chunk in enumerate(chunks) if after in chunk) + 1
    return [*chunks[:cut], seconds, *chunks[cut:]]


def text_of(locator: Any) -> str:
    """A message's visible text without the screen-reader prefix ("Assistant:")."""
    return str(locator.inner_text()).replace("Assistant:", "").strip()


def open_with(shop: Shop, proxy_url: str) -> None:
    if not shop.page.url.startswith(shop.base_url) or "proxy" not in shop.page.url:
        shop.open("?models=proxy")
    shop.reset(models="proxy", **{"proxy-url": proxy_url})


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_answer_shows_as_it_is_written_and_is_announced_once(
    shop: Shop, site: Any, provider: str
) -> None:
    chunks = stream_reply(provider, ["Here are ", "two mugs."])
    with streaming_proxy(
        site, provider, lambda r: Reply(stream=paused(chunks, b"Here are", 1.5))
    ) as (proxy_url, stub):
        open_with(shop, proxy_url)
        shop.ask("which mugs do you have?")
        draft = shop.page.locator(DRAFT)
        draft.wait_for(timeout=20_000)
        assert draft.inner_text().strip() == "Here are"  # on the page before the rest exists
        assert draft.get_attribute("aria-hidden") == "true"
        assert shop.page.locator(FINISHED).count() == 0
        log = shop.page.locator("site-agent >> .log")
        assert log.get_attribute("aria-live") == "polite"
        assert "Here are" not in log.aria_snapshot()  # nothing read out while it is written
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "answered", outcome
        assert outcome["result"]["answer"] == "Here are two mugs."
        assert draft.count() == 0
        finished = shop.page.locator(FINISHED)
        assert finished.count() == 1
        assert text_of(finished) == "Here are two mugs."
        assert finished.get_attribute("aria-hidden") is None
        assert "Here are two mugs." in log.aria_snapshot()
        deltas = [e["text"] for e in shop.events("text-delta")]
        assert deltas == ["Here are ", "two mugs."]
        # The trace records the final text only.
        steps = outcome["result"]["trace"]["steps"]
        assert [s["text"] for s in steps if s["kind"] == "answer"] == ["Here are two mugs."]
        assert stub.requests[0].headers["accept"] == "text/event-stream"


def test_text_before_a_tool_call_stays_as_part_of_that_step(shop: Shop, site: Any) -> None:
    def respond(request: Recorded) -> Reply:
        if last_turn_is_tool_result("anthropic", request.json()):
            return Reply(stream=stream_reply("anthropic", ["They are ", "in your cart."]))
        tool = ("add_to_cart", {"product": "mug", "quantity": 2})
        return Reply(stream=stream_reply("anthropic", ["Adding ", "two mugs."], tool))

    with streaming_proxy(site, "anthropic", respond) as (proxy_url, _stub):
        open_with(shop, proxy_url)
        before = shop.cart_count()
        shop.ask("add two mugs to my cart")
        card = shop.card(timeout=20_000)
        step = shop.page.locator("site-agent >> .msg.assistant.step")
        assert step.count() == 1
        assert "Adding two mugs." in step.inner_text()
        assert step.get_attribute("aria-hidden") is None
        assert shop.page.locator(DRAFT).count() == 0
        card.locator(".allow").click()
        shop.wait_cart(before + 2)
        outcome = shop.last_ask()
        assert outcome["result"]["answer"] == "They are in your cart."
        messages = shop.page.locator("site-agent >> .msg.assistant")
        texts = [t.replace("Assistant:", "").strip() for t in messages.all_inner_texts()]
        assert texts[-1] == "They are in your cart."
        assert "Adding two mugs." in texts[-2]
        # The step's text comes before the tool's progress line, the answer after it.
        log = shop.log_text()
        assert log.index("Adding two mugs.") < log.index("They are in your cart.")


def test_a_failure_mid_stream_keeps_the_text_marked_incomplete(shop: Shop, site: Any) -> None:
    chunks = stream_reply("openai", ["Half an "], end=False)
    with streaming_proxy(
        site, "openai", lambda r: Reply(stream=[*chunks, 0.3, stream_error("openai")])
    ) as (proxy_url, _stub):
        open_with(shop, proxy_url)
        shop.ask("tell me about mugs")
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "error", outcome
        assert outcome["result"]["error"]["code"] == "model-error"
        incomplete = shop.page.locator("site-agent >> .msg.assistant.incomplete")
        assert incomplete.count() == 1
        assert "Half an" in incomplete.inner_text()
        assert "(incomplete)" in incomplete.inner_text()
        assert incomplete.get_attribute("aria-hidden") is None
        assert shop.page.locator(DRAFT).count() == 0
        assert shop.page.locator("site-agent >> .log .error").count() >= 1
        assert [e["type"] for e in shop.events()][-2:] == ["error", "done"]


def test_stop_mid_stream_closes_the_upstream_request(shop: Shop, site: Any) -> None:
    chunks = stream_reply("openai", ["Let me think ", "about that."])
    with streaming_proxy(
        site, "openai", lambda r: Reply(stream=paused(chunks, b"Let me think", 10.0))
    ) as (proxy_url, stub):
        open_with(shop, proxy_url)
        shop.ask("tell me about mugs")
        shop.page.locator(DRAFT).wait_for(timeout=20_000)
        shop.page.evaluate("document.querySelector('site-agent').stop()")
        outcome = shop.last_ask()
        assert outcome["result"]["status"] == "aborted", outcome
        assert stub.closed_by_client.wait(5), "the upstream request stayed open after Stop"
        assert not stub.stream_finished.is_set()
        incomplete = shop.page.locator("site-agent >> .msg.assistant.incomplete")
        assert "Let me think" in incomplete.inner_text()
        assert shop.page.locator(DRAFT).count() == 0
