"""The site's own model (``models="local"``): load, speed and accuracy, in headless Chromium.

SmolLM2-135M-Instruct Q4_1 from the bundle (``bundle --with-local-model``), run by the engine
host ``web/runtime/local-model.js`` (``@wllama/wllama`` 3.8.1) on the CPU (``--disable-gpu``),
served on loopback. Each figure is a median of ``--runs`` (default 5) fresh pages:

- ``load first``: download (98 MB from loopback, size and sha256 checked, kept in Cache
  Storage) and load, in a fresh browser context; ``load cached``: the same context reloaded,
  the model loaded from its kept copy (its sha256 checked again);
- ``prompt tokens/s`` and ``generated tokens/s``: llama.cpp's own timings of one step on the
  demo shop's tools ("add two mugs to my cart", the prompt the adapter builds), with 1 thread
  (a plain page) and 2 threads (the page served with COOP/COEP: cross-origin isolated);
- ``ask -> first token`` and ``ask -> tool call``: from ``el.ask()`` in the demo shop
  (``models=local``, model kept and loaded by an earlier ask) to the first streamed token
  (the engine's onText) and to the ``tool-call`` event or the answer;
- accuracy: ``el.agent.evaluate()`` in the demo shop on ``examples/demo-shop-evals.json`` and
  ``examples/bakery-evals.json`` (tool choice and argument accuracy, as ``python -m
  pysite_agent eval`` reports them), once (greedy decoding: the same every run).

The load average is printed before and after: the machine is shared, so read the spread.

Usage: python benchmarks/local_model.py [--runs 5] [--skip-evals] [--only-evals] [--only-load]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pysite_agent.bundle import build_bundle  # noqa: E402
from pysite_agent.cli.demo import DemoServer  # noqa: E402
from pysite_agent.core.instructions import build_instructions  # noqa: E402
from pysite_agent.core.wire import user_message  # noqa: E402
from pysite_agent.models.chrome import build_prompt  # noqa: E402
from pysite_agent.models.local import LocalModel  # noqa: E402
from pysite_agent.models.local_schema import reply_schema  # noqa: E402

BUNDLE = ROOT / "dist" / "local-model-bench"
MODEL = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
EL = "document.querySelector('site-agent')"


def shop_prompt() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The messages and schema the adapter sends for the demo shop's first step."""
    evals = json.loads((ROOT / "examples" / "demo-shop-evals.json").read_text())
    tools = evals["tools"]
    instructions = LocalModel.system_prompt(
        build_instructions(
            "You help visitors of a shop. Products: mug, red mug, tote bag, t-shirt."
        )
    )
    text, _ = build_prompt(
        [user_message("add two mugs to my cart")], tools, max_history=6, max_prompt_chars=3000
    )
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": text}]
    return messages, reply_schema(tools)


ENGINE_RUN = """async ([model, sha, messages, schema, download, chat]) => {
  const { createLocalEngine } = await import('/web/runtime/local-model.js');
  const e = createLocalEngine({ url: model, sha256: sha });
  const out = {};
  let t = performance.now();
  if (download) await e.download({});
  out.downloadMs = performance.now() - t;
  t = performance.now();
  out.info = await e.load({});
  out.loadMs = performance.now() - t + out.downloadMs;
  if (!chat) return out;
  t = performance.now();
  const res = await e.chat({ messages, response_format: { type: 'json_schema',
    json_schema: { name: 'reply', schema } }, max_tokens: 96, temperature: 0 }, {});
  out.chatMs = performance.now() - t;
  out.text = res.text;
  out.timings = res.timings;
  out.isolated = crossOriginIsolated;
  return out;
}"""


def median(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"


def load_average() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def engine_runs(
    p: Any, bundle: Path, runs: int, *, chat: bool = True, threads: tuple[bool, ...] = (False, True)
) -> None:
    messages, schema = shop_prompt()
    results: dict[str, dict[str, list[float]]] = {}
    for isolated in threads:
        server = DemoServer([bundle, ROOT / "examples"], port=0, cross_origin_isolated=isolated)
        server.start()
        label = "2 threads (COOP/COEP)" if isolated else "1 thread"
        row = results.setdefault(label, {})
        try:
            for _ in range(runs):
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                context = browser.new_context()
                page = context.new_page()
                page.goto(server.url + "probe-blank.html")
                first = page.evaluate(ENGINE_RUN, [MODEL, SHA, messages, schema, True, chat])
                page.goto(server.url + "probe-blank.html")
                later = page.evaluate(ENGINE_RUN, [MODEL, SHA, messages, schema, False, chat])
                browser.close()
                t = later.get("timings") or {}
                row.setdefault("load first (s)", []).append(first["loadMs"] / 1000)
                row.setdefault("load cached (s)", []).append(later["loadMs"] / 1000)
                row.setdefault("prompt tokens/s", []).append(t.get("prompt_per_second"))
                row.setdefault("generated tokens/s", []).append(t.get("predicted_per_second"))
                row.setdefault("prompt tokens", []).append(t.get("prompt_n"))
                row.setdefault("threads", []).append(later["info"]["threads"])
                print(
                    f"  {label}: {first['loadMs']:.0f} / {later['loadMs']:.0f} ms "
                    f"{json.dumps(later.get('text'))[:120]} {json.dumps(t)}",
                    flush=True,
                )
        finally:
            server.stop()
    for label, row in results.items():
        print(f"\n{label}:")
        for key, values in row.items():
            print(f"  {key:20} {median(values)}")


def shop_page(p: Any, server: DemoServer) -> Any:
    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
    page = browser.new_context().new_page()
    page.set_default_timeout(600_000)
    page.goto(server.url + "?models=local")
    page.wait_for_selector("html[data-ready=true]")
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'")
    page.locator("site-agent >> .download").click()
    page.locator("site-agent >> .stored-box").wait_for()
    page.evaluate(f"{EL}.setAttribute('max-steps', '1')")
    return browser, page


ASK = """async (text) => {
  const el = document.querySelector('site-agent');
  el.reset();
  const t0 = performance.now();
  let call = null;
  const onEvent = (e) => {
    const kind = e.detail.type;
    if ((kind === 'tool-call' || kind === 'answer') && call === null) call = performance.now() - t0;
  };
  document.addEventListener('site-agent-event', onEvent);
  const stop = setInterval(() => {
    const card = el.shadowRoot.querySelector('.card');
    if (card) card.querySelector('button.deny, button:last-child')?.click();
  }, 200);
  try {
    await el.ask(text);
  } finally {
    clearInterval(stop);
    document.removeEventListener('site-agent-event', onEvent);
  }
  const status = await el.agent.status();
  const usage = status.models.find((m) => m.name === 'local model')?.usage;
  // The first token: the engine's own clock from the request to the first piece of text,
  // plus what came before the request in this step (ask -> the step began).
  const before = call !== null && usage?.seconds ? call - usage.seconds * 1000 : 0;
  const first = usage?.firstTokenMs != null ? before + usage.firstTokenMs : null;
  return { first, call, usage };
}"""


def ask_runs(p: Any, bundle: Path, runs: int) -> None:
    server = DemoServer([bundle, ROOT / "examples"], port=0).start()
    try:
        browser, page = shop_page(p, server)
        page.evaluate(ASK, "hello")  # loads the model
        firsts, calls = [], []
        for _ in range(runs):
            r = page.evaluate(ASK, "add two mugs to my cart")
            print(f"  ask: {json.dumps(r)}", flush=True)
            if r["first"] is not None:
                firsts.append(r["first"] / 1000)
            if r["call"] is not None:
                calls.append(r["call"] / 1000)
        browser.close()
    finally:
        server.stop()
    print("\nask in the demo shop (1 thread, model loaded, new conversation each time):")
    print(f"  ask -> first token (s)   {median(firsts)}")
    print(f"  ask -> tool call (s)     {median(calls)}")


def eval_runs(p: Any, bundle: Path) -> None:
    server = DemoServer([bundle, ROOT / "examples"], port=0).start()
    try:
        browser, page = shop_page(p, server)
        for name in ("demo-shop-evals.json", "bakery-evals.json"):
            cases = (ROOT / "examples" / name).read_text()
            started = time.monotonic()
            report = page.evaluate(f"(cases) => {EL}.agent.evaluate(cases)", cases)
            seconds = time.monotonic() - started
            print(f"\n{name} ({seconds:.0f} s):")
            print(f"  total: {json.dumps(report['total'])}")
            for case in report["cases"]:
                got = [s["reply"] for s in case["steps"]] or case.get("error")
                print(
                    f"  {case['name']}: tool {case['toolChoice']}, args {case['argumentsExact']},"
                    f" {case['durationMs'] / 1000:.0f} s: {json.dumps(got)[:160]}"
                )
        browser.close()
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-evals", action="store_true")
    parser.add_argument("--only-evals", action="store_true")
    parser.add_argument("--only-load", action="store_true", help="load times only (1 thread)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    report = build_bundle(BUNDLE, include_local_model=True, progress=lambda _m: None)
    (report.out_dir / "probe-blank.html").write_text("<!doctype html><title>bench</title>\n")
    print(f"load average before: {load_average()}", flush=True)
    with sync_playwright() as p:
        if args.only_load:
            engine_runs(p, report.out_dir, args.runs, chat=False, threads=(False,))
            return 0
        if not args.only_evals:
            engine_runs(p, report.out_dir, args.runs)
            ask_runs(p, report.out_dir, args.runs)
        if not args.skip_evals:
            eval_runs(p, report.out_dir)
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
