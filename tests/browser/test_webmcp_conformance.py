"""WebMCP conformance that the shim and Chromium 156 share (both lanes).

The behaviours the public web-platform-tests for WebMCP check (``webmcp/`` in
web-platform-tests/wpt), written again here in the project's own words: the order of what an
abort does, synchronous rejection for an already aborted signal, independent signals for
concurrent calls, tools that unregister themselves, the arguments object, and same-origin
frames sharing one registry. What only the shim does (the spec's behaviour that 156 lacks)
is in ``test_webmcp_conformance_shim.py``; the WPT measurement is ``benchmarks/wpt_webmcp.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"
FRAME = "tests/browser/pages/webmcp-frame.html"


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def run(page: Any, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"async (arg) => {{ const mc = window.modelContext; {body} }}", arg)


def test_an_abort_rejects_the_call_then_aborts_the_tool_then_fires_toolcancel(
    mc_page: Any,
) -> None:
    got = run(
        mc_page,
        """
        const log = [];
        let toolReason;
        mc.addEventListener('toolactivated', (e) => log.push('toolactivated:' + e.toolName));
        const cancelled = new Promise((resolve) => mc.addEventListener('toolcancel', (e) => {
          log.push('toolcancel:' + e.toolName); resolve(); }));
        let started;
        const running = new Promise((resolve) => { started = resolve; });
        await mc.registerTool({name: 'wait', description: 'd', execute: (input, {signal}) => {
          signal.onabort = () => { toolReason = signal.reason; log.push('tool signal aborted'); };
          log.push('tool started'); started(); return new Promise(() => {}); }});
        const [tool] = await mc.getTools();
        const controller = new AbortController();
        const call = mc.executeTool(tool, {}, {signal: controller.signal})
          .catch((reason) => { log.push('call rejected'); return reason; });
        await running;
        await settle();
        controller.abort('stopped by the visitor');
        const reason = await call;
        await cancelled;
        return {log, reason, toolReason: [toolReason.constructor.name, toolReason.name]};
        """,
    )
    assert got["log"] == [
        "tool started",
        "toolactivated:wait",
        "call rejected",  # the caller first
        "tool signal aborted",  # then the tool, with an AbortError of its own
        "toolcancel:wait",
    ]
    assert got["reason"] == "stopped by the visitor"  # the caller's reason, as given
    assert got["toolReason"] == ["DOMException", "AbortError"]


def test_an_already_aborted_signal_rejects_before_the_next_microtask(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        let ran = false;
        await mc.registerTool({name: 't', description: 'd', execute: () => { ran = true; }});
        const [tool] = await mc.getTools();
        let seen = null;
        mc.executeTool(tool, {}, {signal: AbortSignal.abort('too late')})
          .catch((e) => { seen = e; });
        await Promise.resolve();
        const early = seen;
        await settle();
        return {early, ran};
        """,
    )
    assert got == {"early": "too late", "ran": False}


def test_an_abort_right_after_the_call_still_reaches_the_tool(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        let late;
        const lateValue = new Promise((resolve) => { late = resolve; });
        await mc.registerTool({name: 't', description: 'd', execute: (input, {signal}) => {
          signal.onabort = () => late('the tool saw the abort');
          return lateValue; }});
        const [tool] = await mc.getTools();
        const controller = new AbortController();
        const call = outcome(mc.executeTool(tool, {}, {signal: controller.signal}));
        controller.abort();
        return {call: await call, late: await lateValue};
        """,
    )
    assert (got["call"]["ok"], got["call"]["name"]) == (False, "AbortError")
    assert got["late"] == "the tool saw the abort"


def test_concurrent_calls_have_their_own_signals(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const signals = [];
        let finishSecond;
        await mc.registerTool({name: 't', description: 'd', execute: (input, {signal}) => {
          signals.push(signal);
          return signals.length === 1 ? new Promise(() => {})
                                      : new Promise((r) => { finishSecond = r; }); }});
        const [tool] = await mc.getTools();
        const a = new AbortController();
        const first = outcome(mc.executeTool(tool, {}, {signal: a.signal}));
        const second = mc.executeTool(tool, {}, {signal: new AbortController().signal});
        while (signals.length < 2) await settle(5);
        a.abort('first only');
        const firstOutcome = await first;
        await settle();
        finishSecond('second result');
        return {first: firstOutcome, second: await second,
                aborted: signals.map((s) => s.aborted)};
        """,
    )
    assert got["first"]["ok"] is False and got["first"]["message"] == "first only"
    assert got["second"] == "second result"
    assert got["aborted"] == [True, False]


def test_a_tool_that_unregisters_itself_still_returns_its_result(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const own = new AbortController();
        const other = new AbortController();
        await mc.registerTool({name: 'bystander', description: 'd', execute: () => 'b'},
                              {signal: other.signal});
        await mc.registerTool({name: 'leaving', description: 'd', execute: async () => {
          own.abort(); other.abort(); return {status: 'done'}; }}, {signal: own.signal});
        const tool = (await mc.getTools()).find((t) => t.name === 'leaving');
        const result = await mc.executeTool(tool);
        return {result, left: (await mc.getTools()).map((t) => t.name)};
        """,
    )
    assert got == {"result": '{"status":"done"}', "left": []}


def test_the_arguments_are_an_object_and_arrays_count(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        let received;
        await mc.registerTool({name: 't', description: 'd',
                               execute: (args) => { received = args; return 'ok'; }});
        const [tool] = await mc.getTools();
        const array = await mc.executeTool(tool, [1, 2, 3]);
        const arrayReceived = received;
        const refused = {};
        for (const [k, v] of Object.entries({number: 123, boolean: true, nul: null,
                                              noJson: {toJSON: () => undefined}}))
          refused[k] = (await outcome(mc.executeTool(tool, v))).type;
        await mc.executeTool(tool);
        const defaulted = received;
        await mc.executeTool(tool, undefined);
        return {array, arrayReceived, refused, defaulted, undef: received};
        """,
    )
    assert got["array"] == "ok" and got["arrayReceived"] == [1, 2, 3]
    assert got["refused"] == dict.fromkeys(["number", "boolean", "nul", "noJson"], "TypeError")
    assert got["defaulted"] == {} and got["undef"] == {}


def test_same_origin_frames_share_one_registry(mc_page: Any, http_server: Any) -> None:
    got = run(
        mc_page,
        """
        const frame = document.createElement('iframe');
        const ready = new Promise((resolve) => window.addEventListener('message', (e) => {
          if (e.data && e.data.frameReady) resolve(); }));
        frame.src = arg + '?tool=frame_tool';
        document.body.append(frame);
        await ready;
        const frameMc = frame.contentDocument.modelContext;
        const here = [], there = [];
        mc.addEventListener('toolactivated', (e) => here.push(e.toolName));
        frameMc.addEventListener('toolactivated', (e) => there.push(e.toolName));
        const tool = (await mc.getTools()).find((t) => t.name === 'frame_tool');
        const result = await mc.executeTool(tool, {n: 1});
        const events = {here: [...here], there: [...there]};
        await mc.registerTool({name: 'page_tool', description: 'd', execute: () => 'page'});
        const frameSees = (await frameMc.getTools()).map((t) => t.name);
        const frameRuns = await frameMc.executeTool(
          (await frameMc.getTools()).find((t) => t.name === 'page_tool'), {});
        const changed = new Promise((r) => mc.addEventListener('toolchange', r, {once: true}));
        frame.contentWindow.postMessage('unregister', '*');
        await changed;
        return {result, ...events, pageToolEvents: [...here], frameSees, frameRuns,
                origin: tool.origin, ownWindow: tool.window === window,
                frameWindow: tool.window === frame.contentWindow,
                after: (await mc.getTools()).map((t) => t.name)};
        """,
        http_server.url(FRAME),
    )
    origin = http_server.base_url.rstrip("/")
    assert got["result"] == f'from {origin} with {{"n":1}}'
    assert got["here"] == [] and got["there"] == ["frame_tool"]  # the hosting frame's events
    assert got["frameSees"] == ["frame_tool", "page_tool"]
    assert got["frameRuns"] == "page"
    assert got["pageToolEvents"] == ["page_tool"]  # run from the frame, hosted here
    assert got["origin"] == origin
    assert (got["ownWindow"], got["frameWindow"]) == (False, True)
    assert got["after"] == ["page_tool"]


def test_a_schema_with_format_is_registered_listed_and_runs(mc_page: Any) -> None:
    # Chromium 156 accepts `format` (apps use `format: "date"`); the shim must not be stricter.
    got = run(
        mc_page,
        """
        const inputSchema = {type: 'object', properties: {day: {type: 'string', format: 'date'},
                             to: {type: 'string', format: 'email'}}};
        await mc.registerTool({name: 'book', description: 'd', inputSchema,
                               execute: (args) => 'booked ' + args.day});
        const tool = (await mc.getTools()).find((t) => t.name === 'book');
        const result = await mc.executeTool(tool, {day: '2026-12-24'});
        return {format: tool.inputSchema.properties.day.format, result};
        """,
    )
    assert got == {"format": "date", "result": "booked 2026-12-24"}
