"""Conformance of web/webmcp/shim.js against Chromium 156's own WebMCP.

Every test runs in both lanes against tests/browser/pages/webmcp.html, which calls
``installShim()``: in the ``native`` lane that returns the browser's ``document.modelContext``,
in the ``shim`` lane the shim. The same assertions hold for both unless a test branches on
``lane``; those branches are the documented differences (docs/webmcp-native.md).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    """The module's page, freshly navigated to the conformance page (empty registry)."""
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def run(page: Any, body: str, arg: Any = None) -> Any:
    """Evaluate ``async (arg) => { body }`` in the page; ``mc`` is the page's model context."""
    return page.evaluate(f"async (arg) => {{ const mc = window.modelContext; {body} }}", arg)


def test_lane_has_the_expected_model_context(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        const s = window.webmcpShim;
        const fresh = s.createModelContext();
        return {
          hadBefore: window.hadModelContextBefore,
          isShim: s.isShim(document.modelContext),
          hasNative: s.hasNativeModelContext(),
          same: s.installShim() === document.modelContext && mc === document.modelContext,
          freshIsShim: s.isShim(fresh),
          freshInstalled: fresh === document.modelContext,
          plain: [s.isShim({}), s.isShim(null), s.isShim(undefined)],
          tag: Object.prototype.toString.call(mc),
          eventTarget: mc instanceof EventTarget,
          methods: ['registerTool', 'getTools', 'executeTool'].map((m) => typeof mc[m]),
        };
        """,
    )
    assert got["same"] is True  # installShim() is idempotent and never replaces
    assert got["freshIsShim"] is True and got["freshInstalled"] is False
    assert got["plain"] == [False, False, False]
    assert got["tag"] == "[object ModelContext]"
    assert got["eventTarget"] is True
    assert got["methods"] == ["function"] * 3
    if lane == "native":
        assert got["hadBefore"] is True
        assert got["isShim"] is False
        assert got["hasNative"] is True
    else:
        assert got["hadBefore"] is False
        assert got["isShim"] is True
        assert got["hasNative"] is False


def test_register_and_list_sorted(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        const schema = {type: 'object', properties: {q: {type: 'string'}}, required: ['q']};
        const r = await outcome(mc.registerTool({
          name: 'search', title: 'Search', description: 'Find things.', inputSchema: schema,
          execute: () => 'ok'}));
        for (const name of ['b', 'B', '_z', '1x', 'a.b', 'a-b', 'ab', 'Z_'])
          await mc.registerTool({name, description: 'd', execute: () => 'x'});
        const tools = await mc.getTools();
        const search = tools.find((t) => t.name === 'search');
        const plain = tools.find((t) => t.name === 'b');
        return {
          resolved: r,
          names: tools.map((t) => t.name),
          searchKeys: Object.keys(search).sort(),
          search: {name: search.name, title: search.title, description: search.description,
                   inputSchema: search.inputSchema},
          originOk: search.origin === location.origin,
          windowOk: search.window === window,
          plainKeys: Object.keys(plain).sort(),
          plainTitle: plain.title,
        };
        """,
    )
    assert got["resolved"] == {"ok": True, "value": "<undefined>"}
    # Code-unit order: digits < upper case < '_' < lower case; '-' < '.'.
    assert got["names"] == ["1x", "B", "Z_", "_z", "a-b", "a.b", "ab", "b", "search"]
    extra: list[str] = []  # the shim's `source` (Chrome 160's name) is not enumerable
    assert got["searchKeys"] == sorted(
        ["description", "inputSchema", "name", "origin", "title", "window", *extra]
    )
    assert got["search"] == {
        "name": "search",
        "title": "Search",
        "description": "Find things.",
        "inputSchema": {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
        },
    }
    assert got["originOk"] and got["windowOk"]
    # No inputSchema given: the key is absent. No title: "".
    assert got["plainKeys"] == sorted(["description", "name", "origin", "title", "window", *extra])
    assert got["plainTitle"] == ""


def test_name_rules(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const names = {
          dot: 'a.b', dash: 'a-b', under: '_a', digitFirst: '9a', onlyDot: '.',
          len128: 'a'.repeat(128), number: 42,
          empty: '', space: 'a b', bang: 'a!', len129: 'a'.repeat(129), unicode: 'caf\u00e9',
          slash: 'a/b', colon: 'a:b',
        };
        const out = {};
        for (const [k, name] of Object.entries(names))
          out[k] = await outcome(mc.registerTool({name, description: 'd', execute: () => 'x'}));
        out.listed = (await mc.getTools()).map((t) => t.name);
        return out;
        """,
    )
    for ok in ["dot", "dash", "under", "digitFirst", "onlyDot", "len128", "number"]:
        assert got[ok]["ok"] is True, ok
    for bad in ["empty", "space", "bang", "len129", "unicode", "slash", "colon"]:
        assert got[bad] == {
            "ok": False,
            "type": "DOMException",
            "name": "InvalidStateError",
            "message": "Invalid tool name",
        }, bad
    assert "42" in got["listed"]  # a non-string name is converted to a string


def test_duplicate_name_and_reuse_after_unregister(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const c = new AbortController();
        await mc.registerTool({name: 'dup', description: 'first', execute: () => 'one'},
                              {signal: c.signal});
        const second = await outcome(mc.registerTool(
          {name: 'dup', description: 'second', execute: () => 'two'}));
        // Same name registered twice in one tick: the second fails right away.
        const both = await Promise.all([
          outcome(mc.registerTool({name: 'twin', description: 'd', execute: () => 1})),
          outcome(mc.registerTool({name: 'twin', description: 'd', execute: () => 2})),
        ]);
        const kept = (await mc.getTools()).find((t) => t.name === 'dup').description;
        c.abort();  // unregistering frees the name at once
        const again = await outcome(mc.registerTool(
          {name: 'dup', description: 'third', execute: () => 'three'}));
        const now = (await mc.getTools()).find((t) => t.name === 'dup').description;
        return {second, both: both.map((o) => o.ok), kept, again: again.ok, now};
        """,
    )
    assert got["second"] == {
        "ok": False,
        "type": "DOMException",
        "name": "InvalidStateError",
        "message": "Duplicate tool name",
    }
    assert got["both"] == [True, False]
    assert got["kept"] == "first"
    assert got["again"] is True and got["now"] == "third"


def test_descriptor_errors(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const x = () => 'x';
        const cases = {
          noExecute: [{name: 'a', description: 'd'}],
          executeNotFn: [{name: 'a', description: 'd', execute: 'x'}],
          noDescription: [{name: 'a', execute: x}],
          emptyDescription: [{name: 'a', description: '', execute: x}],
          noName: [{description: 'd', execute: x}],
          notObject: ['tool'],
          nothing: [],
          annotationsString: [{name: 'a', description: 'd', annotations: 'x', execute: x}],
          schemaNumber: [{name: 'a', description: 'd', inputSchema: 5, execute: x}],
          schemaNull: [{name: 'a', description: 'd', inputSchema: null, execute: x}],
          schemaCycle: [(() => {
            const s = {type: 'object'}; s.s = s;
            return {name: 'a', description: 'd', inputSchema: s, execute: x};
          })()],
          signalNotSignal: [{name: 'a', description: 'd', execute: x}, {signal: 'x'}],
          optionsString: [{name: 'a', description: 'd', execute: x}, 'x'],
          badNameAndEmptyDesc: [{name: 'a b', description: '', execute: x}],
        };
        const out = {};
        for (const [k, args] of Object.entries(cases)) {
          let returned;
          try {
            returned = mc.registerTool(...args);
          } catch (e) {
            out[k] = 'sync throw';
            continue;
          }
          out[k] = await outcome(returned);
          out[k].promise = returned instanceof Promise;
        }
        out.listed = (await mc.getTools()).length;
        return out;
        """,
    )
    type_errors = [
        "noExecute",
        "executeNotFn",
        "noDescription",
        "noName",
        "notObject",
        "nothing",
        "annotationsString",
        "schemaNumber",
        "schemaNull",
        "schemaCycle",
        "signalNotSignal",
        "optionsString",
    ]
    for k in type_errors:
        assert got[k]["ok"] is False and got[k]["type"] == "TypeError", (k, got[k])
        assert got[k]["promise"] is True, k  # errors reject; registerTool never throws
    assert got["emptyDescription"]["name"] == "InvalidStateError"
    assert got["emptyDescription"]["message"] == "Description is required"
    assert got["badNameAndEmptyDesc"]["message"] == "Invalid tool name"  # name checked first
    assert got["listed"] == 0


def test_annotations(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        const reg = (name, annotations) =>
          mc.registerTool({name, description: 'd', annotations, execute: () => 'x'});
        await reg('all', {readOnlyHint: true, untrustedContentHint: true,
                          consequentialHint: true, destructiveHint: true, openWorldHint: false});
        await reg('consequential', {consequentialHint: true});
        await reg('truthy', {readOnlyHint: 'yes', consequentialHint: 1});
        await reg('empty', {});
        await reg('nullish', null);
        await mc.registerTool({name: 'none', description: 'd', execute: () => 'x'});
        const tools = Object.fromEntries((await mc.getTools()).map((t) => [t.name, t]));
        return {
          all: tools.all.annotations, consequential: tools.consequential.annotations,
          truthy: tools.truthy.annotations, empty: tools.empty.annotations,
          nullish: tools.nullish.annotations, noneHasKey: 'annotations' in tools.none,
        };
        """,
    )
    falses = {
        "readOnlyHint": False,
        "untrustedContentHint": False,
        "consequentialHint": False,
        "debugging": False,
    }
    known_all = {
        **falses,
        "readOnlyHint": True,
        "untrustedContentHint": True,
        "consequentialHint": True,
    }
    if lane == "native":
        assert got["all"] == known_all  # unknown annotations are dropped
    else:
        assert got["all"] == {**known_all, "destructiveHint": True, "openWorldHint": False}
    # consequentialHint survives in both lanes; missing known hints read false.
    assert got["consequential"] == {**falses, "consequentialHint": True}
    assert got["truthy"] == {**falses, "readOnlyHint": True, "consequentialHint": True}
    assert got["empty"] == falses
    assert got["nullish"] == falses
    assert got["noneHasKey"] is False


def test_toolchange_events_and_unregister_by_abort(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const log = [];
        mc.addEventListener('toolchange', (e) => log.push(
          `event:${e.type}:${e.bubbles}:${e.cancelable}:${e.constructor.name}`));
        const handlerDefault = mc.ontoolchange;
        mc.ontoolchange = function (e) { log.push('handler:' + (this === mc)); };
        const c = new AbortController();
        log.push('call');
        const p = mc.registerTool({name: 't', description: 'd', execute: () => 'x'},
                                  {signal: c.signal});
        log.push('returned');
        const listedAtOnce = (await mc.getTools()).map((t) => t.name);
        await p;
        log.push('resolved');
        c.abort();
        log.push('aborted');
        const listedAfterAbort = (await mc.getTools()).map((t) => t.name);
        await settle();
        log.push('settled');
        c.abort();  // a second abort changes nothing
        await mc.registerTool({name: 'u', description: 'd', execute: () => 'x'});
        mc.ontoolchange = 'not a function';
        const handlerAfterString = mc.ontoolchange;
        await settle();
        return {log, listedAtOnce, listedAfterAbort, handlerDefault, handlerAfterString,
                left: (await mc.getTools()).map((t) => t.name)};
        """,
    )
    ev = "event:toolchange:false:false:Event"
    assert got["log"] == [
        "call",
        "returned",
        ev,
        "handler:true",
        "resolved",  # the registration promise resolves after the event
        "aborted",  # unregistering fires the event later, not inside abort()
        ev,
        "handler:true",
        "settled",
        ev,
        "handler:true",
    ]
    assert got["listedAtOnce"] == ["t"]
    assert got["listedAfterAbort"] == []
    assert got["handlerDefault"] is None
    assert got["handlerAfterString"] is None
    assert got["left"] == ["u"]


def test_already_aborted_signal_rejects_without_registering(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        let events = 0;
        mc.addEventListener('toolchange', () => events++);
        const c1 = new AbortController(); c1.abort();
        const plain = await outcome(mc.registerTool(
          {name: 'a', description: 'd', execute: () => 'x'}, {signal: c1.signal}));
        const c2 = new AbortController(); c2.abort(new RangeError('my reason'));
        const reason = await outcome(mc.registerTool(
          {name: 'b', description: 'd', execute: () => 'x'}, {signal: c2.signal}));
        await settle();
        return {plain, reason, events, listed: (await mc.getTools()).length};
        """,
    )
    assert got["plain"]["ok"] is False
    assert (got["plain"]["type"], got["plain"]["name"]) == ("DOMException", "AbortError")
    assert got["reason"] == {
        "ok": False,
        "type": "RangeError",
        "name": "RangeError",
        "message": "my reason",
    }
    assert got["events"] == 0
    assert got["listed"] == 0


def test_execute_with_object_args(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        const seen = [];
        const order = [];
        mc.addEventListener('toolactivated', (e) => order.push('activated:' + e.toolName));
        await mc.registerTool({name: 'echo', description: 'd',
          inputSchema: {type: 'object', properties: {q: {type: 'string'}}},
          execute: function (args, client) {
            order.push('execute');
            seen.push({args, argc: arguments.length,
                       clientSignal: client && client.signal instanceof AbortSignal,
                       clientAborted: client && client.signal.aborted});
            return JSON.stringify(args);
          }});
        const [tool] = await mc.getTools();
        const input = {q: 'x', n: 5, nested: {a: [1, 2]}, f: () => 1, u: undefined, d: new Date(0)};
        order.push('call');
        const p = mc.executeTool(tool, input);
        order.push('returned');
        const result = await p;
        const noArgs = await mc.executeTool(tool);
        const wrong = await outcome(mc.executeTool(tool, {q: 5}));
        return {result, noArgs, wrong, order, sameObject: seen[0].args === input,
                clientSignal: seen[0].clientSignal, clientAborted: seen[0].clientAborted};
        """,
    )
    assert got["result"] == '{"q":"x","n":5,"nested":{"a":[1,2]},"d":"1970-01-01T00:00:00.000Z"}'
    assert got["noArgs"] == "{}"
    if lane == "native":
        assert got["wrong"] == {"ok": True, "value": '{"q":5}'}  # 156 checks nothing
    else:
        # The spec (and the shim) check the arguments first: a DataError (see
        # test_webmcp_conformance.py for its message).
        assert (got["wrong"]["ok"], got["wrong"]["name"]) == (False, "DataError")
    assert got["order"][:3] == ["call", "returned", "execute"]  # the tool runs later
    assert got["order"][3] == "activated:echo"
    assert got["sameObject"] is False  # the tool gets a JSON copy
    assert got["clientSignal"] is True and got["clientAborted"] is False


def test_execute_result_to_string(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const values = {
          str: 'hello', empty: '', undef: undefined, nul: null, num: 42, nan: NaN, bool: false,
          obj: {a: 1}, arr: [1, 'x'], mcp: {content: [{type: 'text', text: 'Added'}]},
          boxed: new String('boxed'), fn: () => 1, asyncStr: Promise.resolve('later'),
        };
        for (const [k, v] of Object.entries(values))
          await mc.registerTool({name: 'r_' + k, description: 'd', execute: () => v});
        const tools = Object.fromEntries((await mc.getTools()).map((t) => [t.name, t]));
        const out = {};
        for (const k of Object.keys(values)) {
          const r = await mc.executeTool(tools['r_' + k], {});
          out[k] = [typeof r, r];
        }
        return out;
        """,
    )
    expected = {
        "str": "hello",
        "empty": "Operation succeeded",
        "undef": "undefined",
        "nul": "null",
        "num": "42",
        "nan": "NaN",
        "bool": "false",
        "obj": '{"a":1}',
        "arr": '[1,"x"]',
        "mcp": '{"content":[{"type":"text","text":"Added"}]}',
        "boxed": '"boxed"',
        "fn": "undefined",
        "asyncStr": "later",
    }
    assert got == {k: ["string", v] for k, v in expected.items()}


def test_execute_bad_args(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        await mc.registerTool({name: 'echo', description: 'd', execute: (a) => JSON.stringify(a)});
        const [tool] = await mc.getTools();
        const cycle = {}; cycle.c = cycle;
        return {
          json: await outcome(mc.executeTool(tool, '{"q":"x"}')),
          badJson: await outcome(mc.executeTool(tool, '{nope')),
          nul: await outcome(mc.executeTool(tool, null)),
          num: await outcome(mc.executeTool(tool, 5)),
          arr: await outcome(mc.executeTool(tool, [1, 2])),
          cycle: await outcome(mc.executeTool(tool, cycle)),
          nothing: await outcome(() => mc.executeTool()),
          byName: await outcome(mc.executeTool('echo', {q: 1})),
          notTool: await outcome(mc.executeTool(42, {})),
        };
        """,
    )
    for k in ["nul", "num", "cycle", "nothing", "badJson", "notTool"]:
        assert got[k]["ok"] is False and got[k]["type"] == "TypeError", (k, got[k])
    assert got["arr"] == {"ok": True, "value": "[1,2]"}
    if lane == "native":
        # Chromium 156 takes only an object and only a tool object.
        assert got["json"]["type"] == "TypeError"
        assert "value is not an object" in got["json"]["message"]
        assert got["byName"]["type"] == "TypeError"
    else:
        # The shim also takes a JSON string (older Chrome) and a plain tool name.
        assert got["json"] == {"ok": True, "value": '{"q":"x"}'}
        assert got["byName"] == {"ok": True, "value": '{"q":1}'}


def test_error_tool(mc_page: Any, lane: str, page_log: Any) -> None:
    got = run(
        mc_page,
        """
        await mc.registerTool({name: 'throws', description: 'd',
                               execute: () => { throw new Error('out of stock'); }});
        await mc.registerTool({name: 'rejects', description: 'd',
                               execute: async () => { throw 'plain text'; }});
        await mc.registerTool({name: 'cycle', description: 'd',
                               execute: () => { const c = {}; c.c = c; return c; }});
        const t = Object.fromEntries((await mc.getTools()).map((x) => [x.name, x]));
        return {
          throws: await outcome(mc.executeTool(t.throws, {})),
          rejects: await outcome(mc.executeTool(t.rejects, {})),
          cycle: await outcome(mc.executeTool(t.cycle, {})),
        };
        """,
    )
    failed = ["throws", "rejects", "cycle"] if lane == "native" else ["throws", "rejects"]
    for k in failed:
        outcome = (got[k]["ok"], got[k]["type"], got[k]["name"])
        assert outcome == (False, "DOMException", "UnknownError"), k
        assert got[k]["message"].startswith("Tool was executed but the invocation failed"), k
    if lane != "native":
        # The tool ran: the shim says so (an error result), rather than that it failed.
        assert got["cycle"]["ok"] is True
        result = json.loads(got["cycle"]["value"])
        assert result["isError"] is True
        assert "cycle ran, but its return value could not be read" in result["content"][0]["text"]
    if lane == "native":
        # Native hides the message from the caller and logs it to the console instead.
        assert "out of stock" not in got["throws"]["message"]
        assert any("out of stock" in e for e in page_log.console_errors)
    else:
        # The shim keeps it, so the agent (and its model) can read what went wrong.
        assert got["throws"]["message"].endswith("Error: out of stock")
        assert got["rejects"]["message"].endswith("plain text")
    assert page_log.page_errors == []


def test_execute_abort(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const events = [];
        for (const type of ['toolactivated', 'toolcancel'])
          mc.addEventListener(type, (e) => events.push(type + ':' + e.toolName));
        let client, calls = 0;
        await mc.registerTool({name: 'hang', description: 'd', execute: (a, c) => {
          calls++; client = c; return new Promise(() => {}); }});
        const [tool] = await mc.getTools();
        const ac = new AbortController();
        const t0 = performance.now();
        const p = outcome(mc.executeTool(tool, {}, {signal: ac.signal}));
        setTimeout(() => ac.abort(), 50);
        const mid = await p;
        const ms = performance.now() - t0;
        const pre = new AbortController(); pre.abort(new Error('before'));
        const before = await outcome(mc.executeTool(tool, {}, {signal: pre.signal}));
        const badSignal = await outcome(mc.executeTool(tool, {}, {signal: 'x'}));
        await settle();
        return {mid, ms, clientAborted: client.signal.aborted,
                clientReason: client.signal.reason && client.signal.reason.name,
                events, calls, before, badSignal: badSignal.type};
        """,
    )
    assert (got["mid"]["type"], got["mid"]["name"]) == ("DOMException", "AbortError")
    assert got["ms"] < 2000
    assert got["clientAborted"] is True and got["clientReason"] == "AbortError"
    assert got["events"] == ["toolactivated:hang", "toolcancel:hang"]
    assert got["calls"] == 1  # an already-aborted call never reaches the tool
    assert got["before"] == {"ok": False, "type": "Error", "name": "Error", "message": "before"}
    assert got["badSignal"] == "TypeError"


def test_unregistered_tool(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const c = new AbortController();
        await mc.registerTool({name: 'gone', description: 'd', execute: () => 'x'},
                              {signal: c.signal});
        const [stale] = await mc.getTools();
        c.abort();
        const afterAbort = await outcome(mc.executeTool(stale, {}));
        // Unregistering while a call runs does not stop that call.
        const c2 = new AbortController();
        await mc.registerTool({name: 'slow', description: 'd', execute: () =>
          new Promise((r) => setTimeout(() => r('finished'), 100))}, {signal: c2.signal});
        const slow = (await mc.getTools()).find((t) => t.name === 'slow');
        const running = outcome(mc.executeTool(slow, {}));
        setTimeout(() => c2.abort(), 20);
        // Tools are looked up by name: an old tool object runs a re-registered tool.
        const c3 = new AbortController();
        await mc.registerTool({name: 'swap', description: 'd', execute: () => 'old'},
                              {signal: c3.signal});
        const oldSwap = (await mc.getTools()).find((t) => t.name === 'swap');
        c3.abort();
        await mc.registerTool({name: 'swap', description: 'd', execute: () => 'new'});
        const swapped = await outcome(mc.executeTool(oldSwap, {}));
        return {afterAbort, during: await running, swapped};
        """,
    )
    assert (got["afterAbort"]["ok"], got["afterAbort"]["type"], got["afterAbort"]["name"]) == (
        False,
        "DOMException",
        "UnknownError",
    )
    assert got["during"] == {"ok": True, "value": "finished"}
    assert got["swapped"] == {"ok": True, "value": "new"}


def test_input_schema_object_or_string(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        const schema = {type: 'object', properties: {q: {type: 'string'}}, f: () => 1};
        await mc.registerTool(
          {name: 'obj', description: 'd', inputSchema: schema, execute: () => 'x'});
        const str = await outcome(mc.registerTool({name: 'str', description: 'd',
          inputSchema: '{"type":"object","properties":{"n":{"type":"number"}}}',
          execute: () => 'x'}));
        const badStr = await outcome(mc.registerTool({name: 'bad', description: 'd',
          inputSchema: '{not json', execute: () => 'x'}));
        const tools = Object.fromEntries((await mc.getTools()).map((t) => [t.name, t]));
        return {obj: tools.obj.inputSchema, str, strSchema: tools.str && tools.str.inputSchema,
                strType: tools.str && typeof tools.str.inputSchema, badStr};
        """,
    )
    assert got["obj"] == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert got["badStr"]["type"] == "TypeError"
    if lane == "native":
        assert got["str"]["ok"] is False and got["str"]["type"] == "TypeError"
        assert got["strSchema"] is None
    else:
        assert got["str"]["ok"] is True
        assert got["strType"] == "object"
        assert got["strSchema"] == {"type": "object", "properties": {"n": {"type": "number"}}}


def test_returned_tools_are_copies(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const desc = {name: 'm', description: 'orig', inputSchema: {type: 'object'},
                      annotations: {readOnlyHint: true}, execute: () => 'orig fn'};
        await mc.registerTool(desc);
        desc.description = 'changed'; desc.inputSchema.type = 'string';
        desc.annotations.readOnlyHint = false; desc.execute = () => 'new fn';
        const [a] = await mc.getTools();
        a.name = 'hacked'; a.description = 'x'; a.inputSchema.type = 'array';
        a.annotations.readOnlyHint = false;
        const [b] = await mc.getTools();
        return {fresh: a !== b && a.inputSchema !== b.inputSchema,
                b: {name: b.name, description: b.description, type: b.inputSchema.type,
                    ro: b.annotations.readOnlyHint},
                run: await mc.executeTool(b, {})};
        """,
    )
    assert got["fresh"] is True
    assert got["b"] == {"name": "m", "description": "orig", "type": "object", "ro": True}
    assert got["run"] == "orig fn"


def test_exposed_to(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const reg = (name, exposedTo) => outcome(mc.registerTool(
          {name, description: 'd', execute: () => 'x'}, {exposedTo}));
        return {https: await reg('a', ['https://example.com']), http: await reg('b', ['http://example.com']),
                star: await reg('c', ['*'])};
        """,
    )
    assert got["https"]["ok"] is True
    for k in ["http", "star"]:
        assert (got[k]["type"], got[k]["name"]) == ("DOMException", "SecurityError"), k


def test_standalone_shim_is_separate(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const own = window.webmcpShim.createModelContext();
        await own.registerTool({name: 'private', description: 'd', execute: () => 'mine'});
        const [t] = await own.getTools();
        return {own: (await own.getTools()).map((x) => x.name),
                page: (await mc.getTools()).map((x) => x.name),
                run: await own.executeTool(t, {}), origin: t.origin === location.origin};
        """,
    )
    assert got == {"own": ["private"], "page": [], "run": "mine", "origin": True}


def test_page_log_catches_uncaught_errors(mc_page: Any, page_log: Any) -> None:
    mc_page.evaluate("setTimeout(() => { throw new Error('expected boom'); }, 0)")
    mc_page.evaluate("() => { Promise.reject(new Error('expected rejection')); }")
    mc_page.evaluate("console.error('expected console error')")
    mc_page.wait_for_timeout(50)
    assert any("expected boom" in e for e in page_log.page_errors)
    assert any("expected rejection" in e for e in page_log.page_errors)
    assert "expected console error" in page_log.console_errors
    page_log.allow_page_error("expected (boom|rejection)")
