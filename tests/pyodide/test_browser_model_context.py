"""ModelContextSource inside Pyodide, against real JS objects.

Lanes:

- the project's JS shim (``web/webmcp/shim.js``, loaded from source with ``createModelContext()``)
  and a plain JS fake: on Node and in Chromium;
- Chromium's native ``document.modelContext`` (``--enable-features=WebMCP``): in Chromium only.

Each lane also proves that a whole agent run leaves no PyProxy behind (Pyodide's own allocation
tracing, ``pyodide._module.pyproxy_alloc_map``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pytest_pyodide import get_global_config, run_in_pyodide

ROOT = Path(__file__).resolve().parents[2]

# pytest-pyodide's Node runner evaluates code in a vm context with few globals; the shim (and
# the JS fakes) need the DOM event classes that Node 20 has.
_NODE_GLOBALS = ("EventTarget", "Event", "DOMException")
_config = get_global_config()
_config.add_node_extra_globals(
    g for g in _NODE_GLOBALS if g not in _config.get_node_extra_globals()
)


def _module(name: str, exports: list[str]) -> str:
    """``web/NAME`` as an expression whose value holds ``exports`` (no import())."""
    text = (ROOT / "web" / name).read_text(encoding="utf-8")
    body = re.sub(r"^export (async function|function|const) ", r"\1 ", text, flags=re.M)
    assert not re.search(r"^export ", body, flags=re.M), f"{name}: an export form not handled"
    body = body.replace("import.meta.url", json.dumps(f"http://127.0.0.1/web/{name}"))
    return "(() => {\n" + body + f"\nreturn {{{', '.join(exports)}}};\n}})()"


def _inline(source: str, module: str, value: str) -> str:
    """Replace the dynamic import of ``web/MODULE`` in ``source`` with ``value``."""
    call = f"import(new URL('./{module}', HERE).href)"
    assert call in source, f"the shim no longer loads {module} as this test expects"
    return source.replace(call, f"Promise.resolve({value})")


def shim_source() -> str:
    """``web/webmcp/shim.js`` with the implementation it loads on first use (webmcp/core.js, the
    webmcp/schema.js it imports, and the webmcp/calls.js it loads on the first call with the
    webmcp/arguments.js that imports) inlined, as an expression whose value holds the shim's
    exports."""
    schema = _module("webmcp/schema.js", ["readSchema", "isObject"])
    arguments = _module("webmcp/arguments.js", ["checkArguments"])
    static = "import { isObject } from './schema.js';"
    assert static in arguments, "webmcp/arguments.js no longer imports schema.js as expected"
    arguments = arguments.replace(static, f"const {{ isObject }} = {schema};")
    calls = _module("webmcp/calls.js", ["checkInput", "executeTool", "run", "settleCall"])
    static = "import { checkArguments } from './arguments.js';"
    assert static in calls, "webmcp/calls.js no longer imports arguments.js as this test expects"
    calls = calls.replace(static, f"const {{ checkArguments }} = {arguments};")
    core = _module("webmcp/core.js", ["attach", "startForms"])
    static = "import { readSchema as readSchemaText } from './schema.js';"
    assert static in core, "webmcp/core.js no longer imports webmcp/schema.js as this test expects"
    core = core.replace(static, f"const {{ readSchema: readSchemaText }} = {schema};")
    core = _inline(core, "calls.js", calls)
    shim = _module(
        "webmcp/shim.js", ["createModelContext", "isShim", "installShim", "hasNativeModelContext"]
    )
    return _inline(shim, "core.js", core)


# A plain JS stand-in with Chromium's shape; `oldStringArgs` makes it refuse an object (as WebMCP
# before Chrome 155 did), to show that a refused input is never sent again in another form.
JS_FAKE = r"""
(() => {
  const target = new EventTarget();
  const tools = new Map();
  let listeners = 0;
  const mc = {
    calls: [],
    oldStringArgs: false,
    register(t) { tools.set(t.name, t); target.dispatchEvent(new Event('toolchange')); },
    addEventListener(type, fn) { listeners++; target.addEventListener(type, fn); },
    removeEventListener(type, fn) { listeners--; target.removeEventListener(type, fn); },
    get listeners() { return listeners; },
    async getTools() {
      return [...tools.values()]
        .map(({ execute, ...rest }) => ({ description: '', title: '', ...rest }))
        .sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    async executeTool(tool, input, options) {
      mc.calls.push({ type: typeof input, isMap: input instanceof Map, input,
                      hasSignal: options?.signal instanceof AbortSignal });
      if (mc.oldStringArgs && typeof input !== 'string') {
        throw new TypeError("Failed to execute 'executeTool': parameter 2 is not a string");
      }
      const args = typeof input === 'string' ? JSON.parse(input) : input;
      return tools.get(tool.name).execute(args);
    },
  };
  return mc;
})()
"""


@pytest.fixture(scope="module")
def shim() -> str:
    return shim_source()


def needs_chromium(selenium: Any) -> None:
    if selenium.browser != "chrome":
        pytest.fail("needs Chromium (native WebMCP); this runtime is " + selenium.browser)


# -- the shim (Node and Chromium) -------------------------------------------------------------


@run_in_pyodide(packages=["pysite-agent"])
async def test_shim_listing_keys_and_revision(selenium, shim):
    from pyodide.code import run_js

    from pysite_agent.tools.model_context import ModelContextSource

    mod = run_js(shim)
    mc = mod.createModelContext()
    # Awaited: registerTool resolves once its toolchange was dispatched, so none arrives after
    # the source below starts listening (a late one would renew every key, as it should).
    await run_js(
        """(mc) => {
        globalThis.__ctl = {};
        const reg = (name, extra) => {
          const c = new AbortController(); globalThis.__ctl[name] = c;
          return mc.registerTool({name, description: 'd ' + name,
                                  execute: () => 'ok', ...extra}, {signal: c.signal});
        };
        globalThis.__reg = reg;
        return Promise.all([
          reg('search', {inputSchema: {type: 'object', properties: {q: {type: 'string',
                         default: null}}}, annotations: {readOnlyHint: true}}),
          reg('as_text', {inputSchema: '{"type": "object", "required": ["x"]}',
                          annotations: {consequentialHint: true, destructiveHint: true}}),
          reg('bare', {}),
        ]);
      }"""
    )(mc)
    source = ModelContextSource(mc)
    tools = {t.name: t for t in await source.get_tools()}
    assert sorted(tools) == ["as_text", "bare", "search"]
    # A JS null inside a schema stays None (not jsnull, not dropped).
    assert tools["search"].input_schema == {
        "type": "object",
        "properties": {"q": {"type": "string", "default": None}},
    }
    assert tools["as_text"].input_schema == {"type": "object", "required": ["x"]}
    assert type(tools["search"].annotations) is dict
    assert tools["search"].read_only
    assert tools["as_text"].consequential
    assert tools["as_text"].annotations["destructiveHint"] is True  # the shim keeps it
    assert tools["bare"].annotations is None
    assert tools["bare"].input_schema is None

    keys = {name: t.key for name, t in tools.items()}
    again = {t.name: t.key for t in await source.get_tools()}
    assert again == keys
    revision = source.revision

    # A new tool: one toolchange, explained by the listing; the other keys stay.
    await run_js("globalThis.__reg('extra', {})")
    listed = {t.name: t.key for t in await source.get_tools()}
    assert {n: listed[n] for n in keys} == keys
    assert source.revision > revision
    revision = source.revision

    # Unregister and register again with identical content: nothing in the listing differs,
    # but two toolchange events arrived, so the keys are renewed (the event does not say which
    # tool changed) and the revision rises.
    await run_js(
        """async () => {
        globalThis.__ctl.bare.abort();
        await new Promise((r) => setTimeout(r, 0));
        await globalThis.__reg('bare', {});
      }"""
    )()
    after = {t.name: t.key for t in await source.get_tools()}
    assert after["bare"] != keys["bare"]
    assert source.revision >= revision + 2
    source.close()


@run_in_pyodide(packages=["pysite-agent"])
async def test_shim_execution_results_errors_and_abort(selenium, shim):
    import asyncio

    import pytest
    from pyodide.code import run_js

    from pysite_agent.core.signals import AbortController, AbortedError
    from pysite_agent.ffi import BrowserError
    from pysite_agent.tools.model_context import ModelContextSource

    mc = run_js(shim).createModelContext()
    await run_js(
        """(mc) => {
        globalThis.__seen = {};
        return Promise.all([
          mc.registerTool({name: 'echo', description: 'echo', execute: (args) => {
            globalThis.__seen.args = args; globalThis.__seen.isMap = args instanceof Map;
            return 'got ' + JSON.stringify(args); }}),
          mc.registerTool({name: 'mcp', description: 'mcp', execute: () =>
            ({content: [{type: 'text', text: 'hello'}], isError: true})}),
          mc.registerTool({name: 'boom', description: 'boom', execute: () => {
            throw new Error('out of mugs'); }}),
          mc.registerTool({name: 'slow', description: 'slow', execute: (args, client) =>
            new Promise((resolve) => {
              globalThis.__seen.clientSignal = client.signal;
              setTimeout(() => resolve('late'), 10000);
            })}),
        ]);
      }"""
    )(mc)
    source = ModelContextSource(mc)
    tools = {t.name: t for t in await source.get_tools()}

    result = await source.execute_tool(tools["echo"], {"n": 2, "nested": {"x": None, "l": [1]}})
    assert result == 'got {"n":2,"nested":{"x":null,"l":[1]}}'
    assert run_js("globalThis.__seen.isMap") is False

    # Chromium and the shim JSON-stringify an MCP result: it comes back as the MCP dict.
    assert await source.execute_tool(tools["mcp"], {}) == {
        "content": [{"type": "text", "text": "hello"}],
        "isError": True,
    }

    with pytest.raises(BrowserError) as info:
        await source.execute_tool(tools["boom"], {})
    assert info.value.name == "UnknownError"
    assert "out of mugs" in str(info.value)

    controller = AbortController()
    asyncio.get_running_loop().call_later(0.05, controller.abort, "stop")
    with pytest.raises(AbortedError):
        await source.execute_tool(tools["slow"], {}, signal=controller.signal)
    # The call rejects first; the tool's own signal aborts in a later task (WebMCP's order).
    await asyncio.sleep(0.05)
    assert run_js("globalThis.__seen.clientSignal.aborted") is True

    # The bridge's per-call timeout cancels the awaiting task: the browser call is aborted too.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(source.execute_tool(tools["slow"], {}), 0.05)
    await asyncio.sleep(0.01)
    assert run_js("globalThis.__seen.clientSignal.aborted") is True
    source.close()


@run_in_pyodide(packages=["pysite-agent"])
async def test_js_fake_null_window_string_args_and_broken_schema(selenium, js_fake):
    import pytest
    from pyodide.code import run_js

    from pysite_agent.agent import _gateway as gateway
    from pysite_agent.core.types import ToolCall
    from pysite_agent.tools.model_context import ModelContextSource

    mc = run_js(js_fake)
    here = run_js("({name: 'this window'})")
    elsewhere = run_js("({name: 'a frame'})")
    mc.register(run_js("(w) => ({name: 'nav', execute: () => null, window: w})")(here))
    mc.register(run_js("(w) => ({name: 'framed', execute: () => 'x', window: w})")(elsewhere))
    mc.register(run_js("({name: 'echo', execute: (a) => JSON.stringify(a)})"))
    mc.register(run_js("({name: 'broken', inputSchema: '{not json', execute: () => 'x'})"))
    source = ModelContextSource(mc, window=here)
    tools = {t.name: t for t in await source.get_tools()}
    assert sorted(tools) == ["broken", "echo", "nav"]  # the frame's tool is skipped

    from pysite_agent.core.results import NAVIGATED

    assert await source.execute_tool(tools["nav"], {}) is NAVIGATED  # null: the page navigated
    call = mc.calls[-1]
    assert call.type == "object" and call.isMap is False and call.hasSignal is True

    mc.oldStringArgs = True
    before = len(mc.calls)
    with pytest.raises(Exception, match="could not take these arguments, so the tool did not run"):
        await source.execute_tool(tools["echo"], {"a": [1, None]})
    assert [c.type for c in mc.calls[before:]] == ["object"]  # one attempt, never a string

    checked = gateway.check_call(ToolCall("c1", "broken", {}), list(tools.values()))
    assert isinstance(checked, gateway.InvalidCall)
    assert checked.code == "invalid-schema"
    assert "not JSON" in checked.message

    assert mc.listeners == 1
    source.close()
    assert mc.listeners == 0
    with pytest.raises(TypeError):
        ModelContextSource(run_js("({getTools() { return []; }})"))


@pytest.fixture(scope="module")
def js_fake() -> str:
    return JS_FAKE


@run_in_pyodide(packages=["pysite-agent"])
async def test_numbers_reach_a_js_tool_exactly_or_not_at_all(selenium, js_fake):
    """docs/boundaries.md, the model's reply: 2^53 - 1 arrives as that JS number; 2^53 + 1,
    NaN and a 10,000-deep value are invalid calls the model is told about (no executeTool)."""
    from pyodide.code import run_js

    import pysite_agent as sa
    from pysite_agent.tools.model_context import ModelContextSource

    mc = run_js(js_fake)
    mc.register(
        run_js(
            """({name: 'set_id', annotations: {readOnlyHint: true},
                 inputSchema: {type: 'object', properties: {id: {type: 'number'}}},
                 execute: (a) => (globalThis.__got = a.id,
                                  Number.isSafeInteger(a.id) ? 'exact ' + a.id : 'not exact')})"""
        )
    )
    deep = '{"id": 1, "x": ' + "[" * 10_000 + "]" * 10_000 + "}"
    replies = [
        {"type": "tool", "name": "set_id", "arguments": {"id": 2**53 - 1}},
        {"type": "tool", "name": "set_id", "arguments": '{"id": 9007199254740993}'},
        {"type": "tool", "name": "set_id", "arguments": '{"id": NaN}'},
        {"type": "tool", "name": "set_id", "arguments": deep},
        {"type": "answer", "text": "done"},
    ]
    seen = []

    async def respond(request):
        seen.append(request.messages[-1])
        return replies.pop(0)

    agent = sa.create_site_agent(model=sa.custom(respond), tools=ModelContextSource(mc))
    result = await agent.run("set the id").done
    assert result.status == "answered", result.error
    assert len(mc.calls) == 1  # only the exact one ran
    results = [m["content"] for m in seen[1:]]
    got = run_js("`${typeof globalThis.__got} ${String(globalThis.__got)}`")
    assert (got, results[0]) == ("number 9007199254740991", "exact 9007199254740991")
    assert "beyond 2^53" in results[1]
    assert "NaN is not a JSON number" in results[2]
    assert "nested deeper than 32 levels" in results[3]


@run_in_pyodide(packages=["pysite-agent"])
async def test_a_run_over_the_shim_leaves_no_pyproxy(selenium, shim):
    from pyodide.code import run_js

    import pysite_agent as sa
    from pysite_agent import ffi
    from pysite_agent.tools.model_context import ModelContextSource

    count = ffi.pyproxy_tracing(True)
    try:
        mc = run_js(shim).createModelContext()
        await run_js(
            """(mc) => Promise.all([
              mc.registerTool({name: 'search', description: 'Find', annotations:
                {readOnlyHint: true}, execute: () => 'Mugs: blue, red'}),
              mc.registerTool({name: 'add_to_cart', description: 'Add', inputSchema:
                {type: 'object', properties: {id: {type: 'string'}}, required: ['id']},
                execute: ({id}) => ({content: [{type: 'text', text: 'added ' + id}]})}),
            ])"""
        )(mc)
        baseline = count()
        callbacks = ffi.live_callbacks()
        source = ModelContextSource(mc)
        assert count() == baseline + 1  # the source's one toolchange listener
        replies = [
            {"type": "tool", "name": "search", "arguments": {}},
            {"type": "tool", "name": "add_to_cart", "arguments": {"id": "blue"}},
            {"type": "answer", "text": "Added the blue mug."},
        ]
        agent = sa.create_site_agent(
            model=sa.custom(lambda request: replies.pop(0), name="scripted"),
            tools=source,
            confirm=lambda request: True,
        )
        result = await agent.run("add a blue mug").done
        assert result.status == "answered", result
        texts = [s.get("text") for s in result.trace["steps"] if s["kind"] == "tool-result"]
        assert texts == ["Mugs: blue, red", "added blue"]
        assert count() == baseline + 1, "a run left PyProxies behind"
        source.close()
        assert count() == baseline
        assert ffi.live_callbacks() == callbacks
    finally:
        ffi.pyproxy_tracing(False)


# -- Chromium's native document.modelContext --------------------------------------------------


@run_in_pyodide(packages=["pysite-agent"])
async def _native_source(selenium):
    import asyncio

    import pytest
    from pyodide.code import run_js

    import pysite_agent as sa
    from pysite_agent import ffi
    from pysite_agent.core.signals import AbortController, AbortedError
    from pysite_agent.ffi import BrowserError
    from pysite_agent.tools.model_context import ModelContextSource

    native = run_js(
        """(() => {
        const d = Object.getOwnPropertyDescriptor(Document.prototype, 'modelContext');
        return !!d && typeof d.get === 'function' &&
          /\\{\\s*\\[native code\\]\\s*\\}\\s*$/.test(Function.prototype.toString.call(d.get));
      })()"""
    )
    assert native is True, "document.modelContext is not Chromium's own (run with WebMCP)"

    # Measured identity facts: fresh objects per getTools(), lookup by name in executeTool.
    facts = await run_js(
        """(async () => {
        const mc = document.modelContext;
        const c1 = new AbortController();
        await mc.registerTool({name: 'probe', description: 'p', execute: () => 'one'},
                              {signal: c1.signal});
        const a = (await mc.getTools()).find((t) => t.name === 'probe');
        const b = (await mc.getTools()).find((t) => t.name === 'probe');
        c1.abort();
        const c2 = new AbortController();
        await mc.registerTool({name: 'probe', description: 'p', execute: () => 'two'},
                              {signal: c2.signal});
        const oldRuns = await mc.executeTool(a, {});
        c2.abort();
        await new Promise((r) => setTimeout(r, 0));
        return {same: a === b, keys: Object.keys(a).join(','), oldRuns};
      })()"""
    )
    assert facts.same is False
    assert facts.keys == "description,name,origin,title,window"
    assert facts.oldRuns == "two"  # an old tool object runs the new registration

    await run_js(
        """(async () => {
        const mc = document.modelContext;
        globalThis.__ctl = {};
        globalThis.__seen = {};
        globalThis.__reg = async (name, extra) => {
          const c = new AbortController(); globalThis.__ctl[name] = c;
          await mc.registerTool({name, description: 'd ' + name, ...extra},
                                {signal: c.signal});
        };
        await __reg('search', {annotations: {readOnlyHint: true}, inputSchema: {type: 'object',
          properties: {q: {type: 'string'}}}, execute: (args) => {
            __seen.args = args; return 'found ' + args.q; }});
        await __reg('mcp', {execute: () => ({content: [{type: 'text', text: 'hi'}]})});
        await __reg('boom', {execute: () => { throw new Error('no'); }});
        await __reg('slow', {execute: () => new Promise((r) => setTimeout(() => r('x'), 5000))});
        await __reg('buy', {annotations: {consequentialHint: true},
          execute: () => { __seen.bought = (__seen.bought || 0) + 1; return 'bought'; }});
      })()"""
    )
    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        source = ModelContextSource()  # reads document.modelContext
        assert source.model_context == run_js("document.modelContext")
        tools = {t.name: t for t in await source.get_tools()}
        assert {"search", "mcp", "boom", "slow", "buy"} <= set(tools)
        assert tools["search"].annotations == {
            "consequentialHint": False,
            "debugging": False,
            "readOnlyHint": True,
            "untrustedContentHint": False,
        }
        assert tools["mcp"].annotations is None
        assert tools["search"].input_schema == {
            "type": "object",
            "properties": {"q": {"type": "string"}},
        }
        keys = {t.name: t.key for t in await source.get_tools()}
        assert keys == {name: t.key for name, t in tools.items()}

        assert await source.execute_tool(tools["search"], {"q": "mug"}) == "found mug"
        assert await source.execute_tool(tools["mcp"], {}) == {
            "content": [{"type": "text", "text": "hi"}]
        }
        with pytest.raises(BrowserError, match="UnknownError"):
            await source.execute_tool(tools["boom"], {})
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.05, controller.abort, "stop")
        with pytest.raises(AbortedError):
            await source.execute_tool(tools["slow"], {}, signal=controller.signal)

        # Re-registration with identical content: new key, higher revision.
        revision = source.revision
        await run_js(
            """(async () => {
            __ctl.search.abort();
            await __reg('search', {annotations: {readOnlyHint: true}, inputSchema:
              {type: 'object', properties: {q: {type: 'string'}}}, execute: () => 'v2'});
          })()"""
        )
        after = {t.name: t.key for t in await source.get_tools()}
        assert after["search"] != keys["search"]
        assert source.revision >= revision + 2
        # A new registration is explained by the listing: the other keys stay.
        await run_js("__reg('extra', {execute: () => 'x'})")
        listed = {t.name: t.key for t in await source.get_tools()}
        assert {n: listed[n] for n in after} == after
        assert "extra" in listed

        # A confirmed call over native WebMCP runs (no spurious stale-tools from event timing).
        replies = [
            {"type": "tool", "name": "buy", "arguments": {}},
            {"type": "answer", "text": "Bought."},
        ]
        agent = sa.create_site_agent(
            model=sa.custom(lambda request: replies.pop(0), name="scripted"),
            tools=source,
            confirm=lambda request: True,
        )
        result = await agent.run("buy it").done
        outcomes = [s["outcome"] for s in result.trace["steps"] if s["kind"] == "tool-result"]
        assert outcomes == ["ran"]
        assert run_js("globalThis.__seen.bought") == 1

        # The page re-registers a tool while the visitor decides: the call is stale, not run.
        async def confirm(request):
            await run_js(
                """(async () => {
                __ctl.buy.abort();
                await __reg('buy', {annotations: {consequentialHint: true},
                  execute: () => { __seen.bought = (__seen.bought || 0) + 1; return 'b2'; }});
              })()"""
            )
            return True

        replies = [
            {"type": "tool", "name": "buy", "arguments": {}},
            {"type": "answer", "text": "Not bought."},
        ]
        agent = sa.create_site_agent(
            model=sa.custom(lambda request: replies.pop(0), name="scripted"),
            tools=source,
            confirm=confirm,
        )
        result = await agent.run("buy it").done
        outcomes = [s["outcome"] for s in result.trace["steps"] if s["kind"] == "tool-result"]
        assert outcomes == ["stale-tools"]
        assert run_js("globalThis.__seen.bought") == 1
        assert count() == baseline + 1, "a run over native WebMCP left PyProxies behind"
        source.close()
        assert count() == baseline
    finally:
        ffi.pyproxy_tracing(False)
        run_js("Object.values(globalThis.__ctl).forEach((c) => c.abort())")


@pytest.mark.runtimes("chrome")
def test_native_model_context(selenium: Any) -> None:
    needs_chromium(selenium)
    _native_source(selenium)


@run_in_pyodide(packages=["pysite-agent"])
async def test_shim_late_toolchange_of_a_listed_change_keeps_the_revision(selenium, shim):
    # A route's component registers a tool and the agent lists it before the shim's toolchange
    # (a later task) arrives: a decision taken on that listing stays bound; a real change after
    # it still raises the revision.
    from pyodide.code import run_js

    from pysite_agent.tools.model_context import ModelContextSource

    mod = run_js(shim)
    mc = mod.createModelContext()
    await mc.registerTool(run_js("({name: 'open_search', description: 'd', execute: () => 1})"))
    source = ModelContextSource(mc)
    await source.get_tools()
    pending = mc.registerTool(run_js("({name: 'search', description: 's', execute: () => 2})"))
    listed = {t.name: t.key for t in await source.get_tools()}
    assert sorted(listed) == ["open_search", "search"]
    revision = source.revision
    await pending  # resolves once its toolchange was dispatched
    assert source.revision == revision
    assert {t.name: t.key for t in await source.get_tools()} == listed
    await mc.registerTool(run_js("({name: 'extra', description: 'e', execute: () => 3})"))
    assert source.revision > revision
    source.close()
