"""Streaming latency: from the request to the first answer text in the page's DOM.

    .venv/bin/python benchmarks/stream_latency.py            # D = 200 ms, 15 runs per lane
    .venv/bin/python benchmarks/stream_latency.py --delay-ms 500 --runs 9 --lanes shim

The demo shop (self-hosted bundle, loopback) with ``proxy-url`` pointing at the proxy app
(:func:`pysite_agent.server.create_proxy_app` under uvicorn, OpenAI provider) in front of a
stub upstream that streams the Chat Completions shape and sends its first chunk D ms after it
received the request. For each run the page asks once and records, on the page's clock
(``performance.timeOrigin + performance.now()``):

- ``ask``: when the page called the element's ``ask()``;
- ``request`` (``runtime="main"`` only): when Python called the window's ``fetch`` to POST to
  the proxy (a wrapper around it); in worker mode, the default, Python fetches from the
  worker, which the page cannot wrap;
- ``first_text``: when a MutationObserver on the element's shadow root first sees answer text
  in the message being written.

``first_text - request - D`` is the overhead streaming adds over the model's own delay (the
proxy, both HTTP hops, Pyodide reading the stream, the event reaching the element); target
(docs/performance.md: streaming): median <= 5 ms. ``first_text - ask - D`` adds the agent's
own step before the request (and in worker mode the worker channel both ways): what a
visitor waits beyond the model. Each lane runs in each ``--runtimes`` mode (default both).
Medians of ``--runs`` runs, after one warm-up run; the load average is recorded. Not a test,
not run in CI; results in ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from browser_common import REPO, chromium, machine, save, site

sys.path.insert(0, str(REPO / "tests" / "server"))
from stub_upstream import (
    KEY,
    MODEL,
    AppServer,
    Reply,
    StubUpstream,
    base_url,
    stream_reply,
)

OBSERVE = """
() => {
  const el = document.querySelector('site-agent');
  window.__firstText = null;
  if (window.__observer) window.__observer.disconnect();
  window.__observer = new MutationObserver(() => {
    if (window.__firstText !== null) return;
    const draft = el.shadowRoot.querySelector('.msg.assistant.streaming');
    if (draft && draft.textContent.trim()) {
      window.__firstText = performance.timeOrigin + performance.now();
    }
  });
  window.__observer.observe(el.shadowRoot, { subtree: true, childList: true, characterData: true });
}
"""


def run_lane(native: bool, runtime: str, delay_ms: float, runs: int) -> dict[str, Any]:
    from pysite_agent.server import create_proxy_app

    chunks = stream_reply("openai", ["The mug ", "costs 8 EUR."])
    received: list[float] = []  # when the stub had each request (wall clock, s)
    with (
        site() as server,
        StubUpstream(
            lambda r: received.append(time.time()) or Reply(stream=[delay_ms / 1000, *chunks])
        ) as stub,
    ):
        parts = urlsplit(server.url)
        app = create_proxy_app(
            provider="openai",
            model=MODEL,
            api_key=KEY,
            allowed_origins=[f"{parts.scheme}://{parts.netloc}"],
            base_url=base_url(stub, "openai"),
            rate_limit=False,
        )
        with AppServer(app) as proxy, chromium(native) as browser:
            proxy_url = f"{proxy.url}/"
            page = browser.new_page()
            # When Python runs on the page's main thread, its fetch is the window's: take the
            # request's start on the page's own clock there.
            page.add_init_script(f"window.pysiteAgent = {{ runtime: '{runtime}' }};")
            page.add_init_script(
                """
                const plain = window.fetch;
                window.__postAt = null;
                window.fetch = function (url, init) {
                  if (init && init.method === 'POST') {
                    window.__postAt = performance.timeOrigin + performance.now();
                  }
                  return plain.apply(this, arguments);
                };
                """
            )
            page.goto(
                f"{server.url}/demo-shop.html?models=proxy&proxy-url={quote(proxy_url, safe='')}"
            )
            page.wait_for_selector("html[data-ready=true]")
            page.click("site-agent >> .launcher")
            page.wait_for_function(
                "document.querySelector('site-agent').state === 'ready'", timeout=90_000
            )
            overheads: list[float] = []
            from_ask: list[float] = []
            before: list[float] = []  # page's fetch -> the stub has the request
            after: list[float] = []  # the stub sent the first text -> it is in the DOM
            for i in range(runs + 1):
                page.evaluate("document.querySelector('site-agent').reset()")
                page.evaluate(OBSERVE)
                page.evaluate("window.__postAt = null")
                stub.sent_at.clear()
                result = page.evaluate(
                    """() => {
                    window.__askAt = performance.timeOrigin + performance.now();
                    return document.querySelector('site-agent').ask('price of the mug?');
                }"""
                )
                assert result["status"] == "answered", result
                first = page.evaluate("window.__firstText")
                assert first is not None
                asked = page.evaluate("window.__askAt")
                start = page.evaluate("window.__postAt")
                if runtime == "main":
                    assert start is not None, "the page's fetch did not see the request"
                if i == 0:
                    continue  # warm-up
                from_ask.append(first - asked - delay_ms)
                after.append(first - stub.sent_at[1] * 1000)  # [0] is the role-only chunk
                if start is not None:
                    overheads.append(first - start - delay_ms)
                    before.append(received[-1] * 1000 - start)
            page.close()

    def mid(values: list[float]) -> float | None:
        return round(statistics.median(values), 2) if values else None

    return {
        "lane": "native" if native else "shim",
        "runtime": runtime,
        "delay_ms": delay_ms,
        "runs": runs,
        "overhead_ms": [round(v, 2) for v in overheads],
        "median_overhead_ms": mid(overheads),
        "from_ask_ms": [round(v, 2) for v in from_ask],
        "median_from_ask_ms": mid(from_ask),
        "median_request_to_upstream_ms": mid(before),
        "median_upstream_chunk_to_dom_ms": mid(after),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, default=200.0)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--lanes", default="shim,native")
    parser.add_argument("--runtimes", default="worker,main")
    args = parser.parse_args()
    start = machine()
    results = [
        run_lane(lane == "native", runtime, args.delay_ms, args.runs)
        for lane in args.lanes.split(",")
        for runtime in args.runtimes.split(",")
    ]
    for r in results:
        line = (
            f"{r['lane']:>6} {r['runtime']:>6}: D = {r['delay_ms']:.0f} ms, first text at "
            f"ask + D + {r['median_from_ask_ms']:.1f} ms (median of {r['runs']}); upstream's "
            f"first text -> DOM {r['median_upstream_chunk_to_dom_ms']:.1f} ms"
        )
        if r["median_overhead_ms"] is not None:
            line += (
                f"; request + D + {r['median_overhead_ms']:.1f} ms (min "
                f"{min(r['overhead_ms']):.1f}); request -> upstream "
                f"{r['median_request_to_upstream_ms']:.1f} ms"
            )
        print(line)
    path = save("stream_latency", {"start": start, "results": results})
    print(f"load average at start {start['load_average_1m']}; written to {path.relative_to(REPO)}")


if __name__ == "__main__":
    Path(REPO / "benchmarks" / "results").mkdir(parents=True, exist_ok=True)
    main()
