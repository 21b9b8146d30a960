"""pysite_agent.ffi inside Pyodide: the conversion defaults, errors, abort links and proxies."""

from __future__ import annotations

from pytest_pyodide import get_global_config, run_in_pyodide

_config = get_global_config()
_config.add_node_extra_globals(
    g for g in ("EventTarget", "Event", "DOMException") if g not in _config.get_node_extra_globals()
)


@run_in_pyodide(packages=["pysite-agent"])
def test_conversions(selenium):
    import pytest
    from pyodide.code import run_js
    from pyodide.ffi import jsnull

    from pysite_agent import ffi

    assert ffi.IN_PYODIDE
    value = ffi.to_js({"a": {"b": None, "c": [1, {"d": True}]}, "e": "x"})
    # Plain objects (not Map), JS null (not undefined, which JSON would drop).
    assert run_js("(v) => Object.getPrototypeOf(v) === Object.prototype")(value) is True
    assert (
        run_js("(v) => JSON.stringify(v)")(value) == '{"a":{"b":null,"c":[1,{"d":true}]},"e":"x"}'
    )
    signal = run_js("new AbortController().signal")
    passed = ffi.to_js({"signal": signal})
    assert run_js("(v, s) => v.signal === s")(passed, signal) is True
    with pytest.raises(TypeError):
        ffi.to_js({"fn": lambda: 1})  # never an implicit PyProxy

    obj = run_js("({a: null, b: [1, null, {c: undefined}], w: new (class Thing {})()})")
    plain = ffi.to_py(obj)
    assert plain["a"] is None and plain["b"][:2] == [1, None]
    assert ffi.is_js(plain["w"])  # not plain data: stays a JsProxy
    assert ffi.json_to_py(run_js("({x: null, f() {}, u: undefined, n: [1]})")) == {
        "x": None,
        "n": [1],
    }
    assert ffi.is_none(None) and ffi.is_none(jsnull) and not ffi.is_none(0)
    o = run_js("globalThis.__o = {}")
    assert ffi.same_object(o, run_js("globalThis.__o"))
    assert not ffi.same_object(o, run_js("({})"))
    assert ffi.field(run_js("({n: null})"), "n") is None
    assert ffi.field(run_js("({})"), "missing") is None
    assert ffi.global_object("surely_not_defined_here") is None


@run_in_pyodide(packages=["pysite-agent"])
def test_js_errors_map_to_codes(selenium):
    import pytest
    from pyodide.code import run_js
    from pyodide.ffi import JsException

    from pysite_agent import ffi

    cases = {
        "QuotaExceededError": ("model-error", "too long"),
        "NotAllowedError": ("model-unavailable", "click"),
        "NotSupportedError": ("model-unavailable", "languages"),
        "AbortError": ("aborted", "stopped"),
        "NetworkError": ("model-error", "network"),
        "WhoKnowsError": ("model-error", "WhoKnowsError"),
    }
    for name, (code, words) in cases.items():
        with pytest.raises(JsException) as info:
            run_js(f"(() => {{ throw new DOMException('browser text', '{name}'); }})()")
        assert ffi.error_name(info.value) == name
        error = ffi.site_error(info.value, what="prompt()")
        assert error.code == code, name
        assert words in error.message and "browser text" in error.message
        readable = ffi.from_js_error(info.value)
        assert isinstance(readable, ffi.BrowserError)
        assert str(readable) == f"{name}: browser text"


@run_in_pyodide(packages=["pysite-agent"])
async def test_abort_links_and_owned_callbacks(selenium):
    import asyncio
    import contextlib

    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.core.signals import AbortController

    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        # core -> JS
        controller = AbortController()
        with ffi.JsAbortLink(controller.signal, for_js=True) as link:
            assert run_js("(s) => s instanceof AbortSignal")(link.signal) is True
            controller.abort("stop")
            assert link.signal.aborted is True
            assert link.signal.reason.name == "AbortError"
            assert link.signal.reason.message == "stop"

        # cancellation of the awaiting task aborts the JS side
        link = ffi.JsAbortLink(None, for_js=True)
        pending = run_js("new Promise(() => {})")
        task = asyncio.ensure_future(ffi.call_abortable(link, pending))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert link.signal.aborted is True

        # JS -> core, with an owned listener that is released
        js_controller = run_js("new AbortController()")
        signal, release = ffi.signal_from_js(js_controller.signal)
        assert ffi.live_callbacks() == 1
        js_controller.abort()
        assert signal.aborted
        release()
        release()
        assert ffi.live_callbacks() == 0

        seen = []
        owned = ffi.callback(seen.append, run_js("({})"))
        run_js("(f) => f(42)")(owned.value)
        assert seen == [42] and count() == baseline + 1
        owned.destroy()
        owned.destroy()
        assert owned.destroyed and count() == baseline
    finally:
        ffi.pyproxy_tracing(False)


@run_in_pyodide(packages=["pysite-agent"])
def test_json_to_js_parses_once_and_keeps_js_members(selenium):
    import math

    import pytest
    from pyodide.code import run_js

    from pysite_agent import ffi

    signal = run_js("new AbortController().signal")
    data = {"messages": [{"role": "user", "text": "é <b>", "n": None}], "tools": []}
    value = ffi.json_to_js(data, signal=signal)
    assert run_js("(v) => Object.getPrototypeOf(v) === Object.prototype")(value) is True
    assert run_js("(v, s) => v.signal === s")(value, signal) is True
    assert (
        run_js("(v) => JSON.stringify({...v, signal: undefined})")(value)
        == '{"messages":[{"role":"user","text":"é <b>","n":null}],"tools":[]}'
    )
    # What JSON cannot carry goes the element-wise way: NaN stays a number, a JS value inside
    # passes through, a Python object is refused.
    odd = ffi.json_to_js({"x": math.nan, "s": signal})
    assert run_js("(v, s) => Number.isNaN(v.x) && v.s === s")(odd, signal) is True
    with pytest.raises(TypeError):
        ffi.json_to_js({"fn": lambda: 1})


@run_in_pyodide(packages=["pysite-agent"])
async def test_batched_webloop_runs_an_agent(selenium):
    import asyncio

    from pysite_agent import Tool, create_site_agent, custom
    from pysite_agent.browser import event_loop

    loop = asyncio.get_running_loop()
    assert type(loop).__name__ == "WebLoop"

    def respond(request):
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done >= 5:
            return {"type": "answer", "text": f"done {done}"}
        return {"type": "tool", "name": "ping", "arguments": {"n": done}}

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = Tool(
        "ping", "Ping.", lambda a: "pong", input_schema=schema, annotations={"readOnlyHint": True}
    )
    assert event_loop.install(loop)
    try:
        seen = []
        for i in range(20):
            loop.call_soon(seen.append, i)
        await asyncio.sleep(0)
        assert seen == list(range(20))
        result = await create_site_agent(model=custom(respond), tools=[tool]).run("go").done
        assert (result.status, result.answer) == ("answered", "done 5")
        started = loop.time()
        await asyncio.sleep(0.03)  # timers keep their delay
        assert loop.time() - started >= 0.025
    finally:
        assert event_loop.uninstall(loop)
