"""The bridge's overhead per tool step inside Pyodide, in headless Chromium.

The model and the tool are instant fakes: the model asks for ``ping`` until ``STEPS`` results
are in the conversation, then answers; ``ping`` is read-only (no confirmation) and returns
``"pong"``. One sample is one run of ``STEPS`` tool steps plus the answer, divided by
``STEPS``; the report gives the median of ``--runs`` samples (after one warm-up run).

Paths, from the inside out:

- ``python tools``: a Python tool list; the agent's own work in Pyodide (policy, validation,
  result text, trace, events), no JavaScript crossing;
- ``shim``: the tool on the page's JS shim through ``ModelContextSource`` (``getTools`` and
  ``executeTool`` cross into JS each step; the shim runs each call in a later task, as
  Chromium does);
- ``native``: the same on Chromium's own ``document.modelContext`` (``--enable-features=WebMCP``);
- ``element``: the whole ``<site-agent>`` path: a JS model object and a JS tool array in
  ``element.options``, events to JS as JSON, the log rendered in the DOM; timed in JS. Twice:
  ``element (worker)``, Python in a module worker (the default: every model call, tool listing,
  tool call and event crosses the worker channel), and ``element (main)``, ``runtime="main"``.

Target: median < 5 ms per step.

Usage: python benchmarks/browser_bridge.py [--runs 7] [--steps 40]
"""

from __future__ import annotations

import argparse
from typing import Any

from browser_common import chromium, median, save, site

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,"><title>bridge</title></head><body>
<site-agent id="worker" models="demo"></site-agent>
<site-agent id="main" runtime="main" models="demo"></site-agent>
<script type="module" src="/loader.js"></script></body></html>"""

PYTHON = """
import json, time
from pysite_agent import Tool, create_site_agent, custom
from pysite_agent.tools.model_context import ModelContextSource

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

def instant(steps):
    def respond(request):
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done >= steps:
            return {"type": "answer", "text": "done"}
        return {"type": "tool", "name": "ping", "arguments": {"n": done}}
    return custom(respond, name="instant")

async def sample(source, steps):
    agent = create_site_agent(model=instant(steps), tools=source, max_steps=steps + 1)
    started = time.perf_counter()
    result = await agent.run("go").done
    elapsed = time.perf_counter() - started
    assert result.status == "answered", result
    return elapsed * 1000 / steps

async def measure(kind, steps, runs):
    if kind == "python tools":
        make = lambda: [Tool("ping", "Ping.", lambda args: "pong", input_schema=SCHEMA,
                             annotations={"readOnlyHint": True})]
        close = lambda s: None
    else:
        make = lambda: ModelContextSource(model_context=js_context)
        close = lambda s: s.close()
    out = []
    for i in range(runs + 1):
        source = make()
        try:
            value = await sample(source, steps)
        finally:
            close(source)
        if i:
            out.append(value)
    return json.dumps(out)

await measure(kind, steps, runs)
"""

SETUP_JS = """async ({ kind, steps, runs, code }) => {
  const m = await import('/loader.js');
  const py = await m.loadRuntime();
  const context = kind === 'native' ? document.modelContext : m.createModelContext();
  const controller = new AbortController();
  if (kind !== 'python tools') {
    await context.registerTool({
      name: 'ping', description: 'Ping.', annotations: { readOnlyHint: true },
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      execute: () => 'pong',
    }, { signal: controller.signal });
  }
  const ns = py.toPy({ kind, steps, runs });
  ns.set('js_context', context);
  try {
    return JSON.parse(await py.runPythonAsync(code, { globals: ns }));
  } finally {
    ns.destroy();
    controller.abort();
  }
}"""

ELEMENT_JS = """async ({ steps, runs, id }) => {
  const el = document.getElementById(id);
  el.options = {
    maxSteps: steps + 1,
    model: { name: 'instant', respond: (r) => {
      const done = r.messages.filter((m) => m.role === 'tool').length;
      return done >= steps ? { type: 'answer', text: 'done' }
        : { type: 'tool', name: 'ping', arguments: { n: done } };
    } },
    tools: [{ name: 'ping', description: 'Ping.', annotations: { readOnlyHint: true },
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      execute: () => 'pong' }],
  };
  const out = [];
  for (let i = 0; i <= runs; i++) {
    el.reset();
    const started = performance.now();
    const result = await el.ask('go');
    const perStep = (performance.now() - started) / steps;
    if (result.status !== 'answered') throw new Error(JSON.stringify(result));
    if (i) out.push(perStep);
  }
  return out;
}"""


def run(native: bool, steps: int, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with site() as server, chromium(native=native) as browser:
        page: Any = browser.new_page()
        page.route(
            "**/bridge.html",
            lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE),
        )
        page.goto(server.url + "bridge.html")
        page.evaluate("document.querySelectorAll('site-agent').forEach((e) => e.show())")
        page.wait_for_function(
            "[...document.querySelectorAll('site-agent')].every((e) => e.state === 'ready')",
            timeout=120_000,
        )
        # A first start makes its memory snapshot in a background worker: wait for it, so
        # that it does not share the CPU with the measured runs.
        page.wait_for_function(
            """() => {
            const made = performance.getEntriesByName('site-agent:snapshot')
              .filter((m) => m.detail?.made).length;
            return performance.getEntriesByName('site-agent:snapshot-saved').length >= made;
        }""",
            timeout=120_000,
        )
        kinds = ["native"] if native else ["python tools", "shim"]
        for kind in kinds:
            args = {"kind": kind, "steps": steps, "runs": runs, "code": PYTHON}
            out[kind] = page.evaluate(SETUP_JS, args)
        if not native:
            for mode in ("worker", "main"):
                out[f"element ({mode})"] = page.evaluate(
                    ELEMENT_JS, {"steps": steps, "runs": runs, "id": mode}
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    samples = {**run(False, args.steps, args.runs), **run(True, args.steps, args.runs)}
    print(f"ms per tool step, median of {args.runs} runs of {args.steps} steps (min / max)")
    summary = {}
    for kind in ("python tools", "shim", "native", "element (main)", "element (worker)"):
        values = samples[kind]
        summary[kind] = median(values)
        print(f"  {kind:16} {median(values):7.2f}   ({min(values):.2f} / {max(values):.2f})")
    path = save(
        "browser_bridge",
        {"runs": args.runs, "steps": args.steps, "median_ms": summary, "samples": samples},
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
