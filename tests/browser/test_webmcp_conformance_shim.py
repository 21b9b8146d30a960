"""WebMCP spec behaviour that Chromium 156 lacks: shim lane only (marker ``shim_only``).

Each behaviour here is checked by the public web-platform-tests for WebMCP and fails in native
Chromium 156 (measured with ``benchmarks/wpt_webmcp.py``, see docs/webmcp-native.md), so these
tests run in the shim lane only; none is skipped. Written in the project's own words:

- ``toolactivated``/``toolcancel`` reach both ``window`` and ``document.modelContext`` as
  ``ToolActivatedEvent``/``ToolCancelEvent``;
- arguments are checked against the tool's ``inputSchema`` and rejected with a ``DataError``
  whose message is JSON ``{path, reason, schemaPath, message}`` (the tool does not run);
- schemas outside the spec's subset (as Chromium, ``test_shim_schemas.py``) are registered, and
  their ``patternProperties`` and ``additionalProperties`` schema checked at each call;
- ``exposedTo`` across origins: a frame's tool exposed to this page's origin is listed here
  with the frame's origin and runs there; nothing goes to an origin not named, nor to a frame
  without ``allow="tools"``.
"""

from __future__ import annotations

from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"
FRAME = "tests/browser/pages/webmcp-frame.html"

pytestmark = pytest.mark.shim_only


@pytest.fixture(scope="module", params=["shim"])
def lane(request: pytest.FixtureRequest) -> str:
    """This module runs in the shim lane only (Chromium 156 fails these behaviours)."""
    return str(request.param)


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def run(page: Any, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"async (arg) => {{ const mc = window.modelContext; {body} }}", arg)


def test_tool_events_reach_window_and_the_model_context_as_their_classes(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const log = [];
        const describe = (where) => (e) => log.push({
          where, type: e.type, toolName: e.toolName, cls: e.constructor.name,
          activated: e instanceof ToolActivatedEvent, cancel: e instanceof ToolCancelEvent,
          target: e.target === mc ? 'modelContext' : e.target === window ? 'window' : '?',
          bubbles: e.bubbles, cancelable: e.cancelable, composed: e.composed});
        for (const type of ['toolactivated', 'toolcancel']) {
          mc.addEventListener(type, describe('mc'));
          window.addEventListener(type, describe('window'));
        }
        await mc.registerTool({name: 'slow', description: 'd',
                               execute: () => new Promise(() => {})});
        const [tool] = await mc.getTools();
        const c = new AbortController();
        const call = outcome(mc.executeTool(tool, {}, {signal: c.signal}));
        await settle();
        c.abort();
        await call;
        await settle();
        const made = new ToolActivatedEvent('toolactivated', {toolName: 'x'});
        return {log, made: [made.toolName, made.isTrusted]};
        """,
    )
    common = {"toolName": "slow", "bubbles": False, "cancelable": False, "composed": False}
    assert got["log"] == [
        {**common, "where": "mc", "type": "toolactivated", "cls": "ToolActivatedEvent",
         "activated": True, "cancel": False, "target": "modelContext"},
        {**common, "where": "window", "type": "toolactivated", "cls": "ToolActivatedEvent",
         "activated": True, "cancel": False, "target": "window"},
        {**common, "where": "mc", "type": "toolcancel", "cls": "ToolCancelEvent",
         "activated": False, "cancel": True, "target": "modelContext"},
        {**common, "where": "window", "type": "toolcancel", "cls": "ToolCancelEvent",
         "activated": False, "cancel": True, "target": "window"},
    ]  # fmt: skip
    # A script cannot make trusted events: the one subtest of this kind no shim can pass.
    assert got["made"] == ["x", False]


def test_arguments_that_fail_the_schema_reject_with_a_data_error(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        let runs = 0;
        await mc.registerTool({name: 'order', description: 'd', inputSchema: {
          type: 'object', additionalProperties: false, required: ['item', 'count'],
          properties: {item: {type: 'string', pattern: '^[a-z]+$'},
                       count: {type: 'integer', minimum: 1, maximum: 9},
                       size: {type: 'string', enum: ['s', 'm']},
                       tags: {type: 'array', prefixItems: [{type: 'string'}],
                              items: {type: 'number'}}}},
          execute: (args) => { runs += 1; return JSON.stringify(args); }});
        const [tool] = await mc.getTools();
        const cases = {
          missing: {item: 'mug'}, type: {item: 'mug', count: 'two'},
          pattern: {item: 'Mug!', count: 1}, enum: {item: 'mug', count: 1, size: 'xl'},
          maximum: {item: 'mug', count: 10}, extra: {item: 'mug', count: 1, colour: 'red'},
          items: {item: 'mug', count: 1, tags: ['a', 'b']},
        };
        const out = {};
        for (const [k, args] of Object.entries(cases)) {
          const r = await outcome(mc.executeTool(tool, args));
          out[k] = [r.type, r.name, JSON.parse(r.message)];
        }
        out.runsAfterBad = runs;
        out.good = await mc.executeTool(tool, {item: 'mug', count: 2, size: 'm', tags: ['a', 1]});
        out.runs = runs;
        return out;
        """,
    )

    def problem(path: str, reason: str) -> list[Any]:
        return ["DOMException", "DataError", {"path": path, "reason": reason,
                                              "schemaPath": f"/{reason}"}]  # fmt: skip

    for case, (path, reason) in {
        "missing": ("/count", "required"),
        "type": ("/count", "type"),
        "pattern": ("/item", "pattern"),
        "enum": ("/size", "enum"),
        "maximum": ("/count", "maximum"),
        "extra": ("/colour", "additionalProperties"),
        "items": ("/tags/1", "type"),
    }.items():
        kind, name, detail = got[case]
        assert [kind, name] == problem(path, reason)[:2], case
        assert {k: detail[k] for k in ("path", "reason", "schemaPath")} == problem(path, reason)[2]
        assert detail["message"], case  # and words for a person
    assert got["runsAfterBad"] == 0  # the tool never ran for bad arguments
    assert got["good"] == '{"item":"mug","count":2,"size":"m","tags":["a",1]}'
    assert got["runs"] == 1


def test_keywords_the_shim_knows_are_checked_in_schemas_chromium_accepts(mc_page: Any) -> None:
    got = mc_page.evaluate(
        """async () => {
          const mc = window.modelContext;
          let runs = 0;
          const execute = () => { runs++; return 'ran'; };
          await mc.registerTool({name: 'p', description: 'd', execute,
            inputSchema: {type: 'object', properties: {q: {type: 'string'}},
              patternProperties: {'^n_': {type: 'integer'}, '([': {type: 'null'}},
              additionalProperties: {type: 'boolean'}}});
          const [tool] = await mc.getTools();
          const call = async (args) => {
            const r = await outcome(mc.executeTool(tool, args));
            return r.ok ? r.value : [r.name, JSON.parse(r.message)];
          };
          return {
            good: await call({q: 'a', n_1: 2, extra: true}),
            pattern: await call({n_1: 'two'}),
            additional: await call({extra: 'yes'}),
            runs,
          };
        }"""
    )
    assert got["good"] == "ran"
    assert got["pattern"][0] == "DataError"
    assert (got["pattern"][1]["path"], got["pattern"][1]["reason"]) == ("/n_1", "type")
    assert got["additional"][0] == "DataError"
    assert (got["additional"][1]["path"], got["additional"][1]["reason"]) == ("/extra", "type")
    assert got["runs"] == 1


def test_tool_objects_need_their_origin_and_json_strings_stay_supported(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        await mc.registerTool({name: 't', description: 'd', execute: (a) => JSON.stringify(a)});
        const [tool] = await mc.getTools();
        return {
          noOrigin: await outcome(mc.executeTool({name: 't', description: 'd'}, {})),
          missing: await outcome(mc.executeTool(
            {name: 'nope', description: 'd', origin: location.origin}, {})),
          json: await outcome(mc.executeTool(tool, '{"a":1}')),
          notJson: await outcome(mc.executeTool(tool, 'hello')),
        };
        """,
    )
    assert got["noOrigin"]["type"] == "TypeError"
    assert got["missing"]["name"] == "UnknownError"
    assert got["json"] == {"ok": True, "value": '{"a":1}'}
    assert got["notJson"]["type"] == "TypeError"


FRAME_SETUP = """
const addFrame = (src, allow) => new Promise((resolve) => {
  const frame = document.createElement('iframe');
  if (allow) frame.allow = allow;
  const onMessage = (e) => {
    if (e.data && e.data.frameReady && e.source === frame.contentWindow) {
      window.removeEventListener('message', onMessage); resolve(frame); }
  };
  window.addEventListener('message', onMessage);
  frame.src = src;
  document.body.append(frame);
});
"""


def test_a_cross_origin_frame_exposes_a_tool_to_this_page(mc_page: Any, http_server: Any) -> None:
    here = http_server.base_url.rstrip("/")
    other = f"http://localhost:{http_server.port}"
    frame_url = f"{other}/{FRAME}"
    got = run(
        mc_page,
        FRAME_SETUP
        + """
        let changes = 0;
        mc.addEventListener('toolchange', () => changes++);
        const exposed = await addFrame(arg.url + '?tool=framed&expose=' + arg.here, '');
        await addFrame(arg.url + '?tool=secret&expose=https://elsewhere.example', '');
        await settle(100);
        const listed = await mc.getTools();
        const tool = listed.find((t) => t.name === 'framed');
        const fromOrigins = (await mc.getTools({fromOrigins: [location.origin]})).length;
        const result = await mc.executeTool(tool, {n: 2});
        const bad = await outcome(mc.executeTool(tool, {n: 'two'}));
        const gone = new Promise((r) => mc.addEventListener('toolchange', r, {once: true}));
        exposed.contentWindow.postMessage('unregister', '*');
        await gone;
        return {names: listed.map((t) => t.name), origin: tool.origin,
                frameWindow: tool.window === exposed.contentWindow, fromOrigins, result,
                bad: bad.name, changed: changes > 0,
                after: (await mc.getTools()).map((t) => t.name)};
        """,
        {"url": frame_url, "here": here},
    )
    assert got["names"] == ["framed"]  # 'secret' is exposed to another origin only
    assert got["origin"] == other
    assert got["frameWindow"] is True
    assert got["fromOrigins"] == 0  # filtered by origin (spec)
    assert got["result"] == f'from {other} with {{"n":2}}'
    assert got["bad"] == "DataError"  # checked in the frame that owns the tool
    assert got["changed"] is True
    assert got["after"] == []


def test_this_page_exposes_tools_only_to_frames_allowed_tools(
    mc_page: Any, http_server: Any
) -> None:
    other = f"http://localhost:{http_server.port}"
    got = run(
        mc_page,
        FRAME_SETUP
        + """
        await mc.registerTool({name: 'shared', description: 'd', execute: () => 'from the page'},
                              {exposedTo: [arg.other]});
        await mc.registerTool({name: 'private', description: 'd', execute: () => 'no'});
        const allowed = await addFrame(arg.url, 'tools *');
        const denied = await addFrame(arg.url, '');
        await settle(100);
        const ask = (frame) => new Promise((resolve) => {
          const channel = new MessageChannel();
          channel.port1.onmessage = (e) => resolve(e.data);
          frame.contentWindow.postMessage({probe: true}, '*', [channel.port2]);
        });
        return {allowed: await ask(allowed), denied: await ask(denied)};
        """,
        {"url": f"{other}/{FRAME}?probe=1", "other": other},
    )
    assert got["allowed"] == {"names": ["shared"], "result": "from the page"}
    assert got["denied"] == {"names": [], "result": None}
