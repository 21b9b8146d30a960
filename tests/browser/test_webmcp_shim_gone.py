"""The shim when frames go away mid-call, and the shape of its tool objects (shim lane).

- An ``executeTool`` whose tool's frame is removed rejects at once (same-origin frames share
  one registry; cross-origin frames are reached over ``postMessage``).
- A calling page that goes away (a frame that navigates) ends its call: the tool's signal
  aborts and ``toolcancel`` fires where the tool runs.
- A ``respondWith()`` made before its form was removed answers the call with its value.
- Tool objects are the dictionary Chromium 156 gives (``window``), with ``source`` (Chrome
  160's name) as a non-enumerable alias: code written for either works, and code for Chrome
  up to 159 that leaves out ``window`` can ``postMessage``/``JSON.stringify`` a tool.
"""

from __future__ import annotations

from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"
FRAME = "tests/browser/pages/webmcp-frame.html"
FORMS = "tests/browser/pages/webmcp-forms.html"

pytestmark = pytest.mark.shim_only

SETUP = """
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
const within = (promise, ms) => Promise.race([
  outcome(promise), new Promise((r) => setTimeout(() => r({timedOut: true}), ms))]);
"""


@pytest.fixture(scope="module", params=["shim"])
def lane(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def run(page: Any, body: str, arg: Any = None) -> Any:
    return page.evaluate(
        f"async (arg) => {{ const mc = window.modelContext; {SETUP} {body} }}", arg
    )


def test_a_call_to_a_same_origin_frames_tool_rejects_when_the_frame_is_removed(
    mc_page: Any, http_server: Any
) -> None:
    got = run(
        mc_page,
        """
        const frame = await addFrame(arg.url + '?tool=framed&slow=1', '');
        await settle(50);
        const [tool] = (await mc.getTools()).filter((t) => t.name === 'framed');
        const call = mc.executeTool(tool, {});
        await settle(50);
        frame.remove();
        return within(call, 2000);
        """,
        {"url": http_server.url(FRAME)},
    )
    assert got.get("timedOut") is None, "the call hung after its frame went away"
    assert got["ok"] is False and got["name"] == "UnknownError"


def test_a_call_to_a_cross_origin_frames_tool_rejects_when_the_frame_is_removed(
    mc_page: Any, http_server: Any
) -> None:
    here = http_server.base_url.rstrip("/")
    other = f"http://localhost:{http_server.port}"
    got = run(
        mc_page,
        """
        const frame = await addFrame(arg.url + '?tool=far&slow=1&expose=' + arg.here, '');
        await settle(100);
        const [tool] = (await mc.getTools()).filter((t) => t.name === 'far');
        const call = mc.executeTool(tool, {});
        await settle(50);
        frame.remove();
        return within(call, 2000);
        """,
        {"url": f"{other}/{FRAME}", "here": here},
    )
    assert got.get("timedOut") is None, "the call hung after its frame went away"
    assert got["ok"] is False and got["name"] == "UnknownError"


def test_a_calling_frame_that_navigates_away_cancels_its_call(
    mc_page: Any, http_server: Any
) -> None:
    other = f"http://localhost:{http_server.port}"
    got = run(
        mc_page,
        """
        const seen = {aborted: false, cancel: false};
        mc.addEventListener('toolcancel', () => { seen.cancel = true; });
        await mc.registerTool({name: 'shared', description: 'd', execute: (args, {signal}) =>
          new Promise(() => signal.addEventListener('abort', () => { seen.aborted = true; }))},
          {exposedTo: [arg.other]});
        const frame = await addFrame(arg.url, 'tools *');
        await settle(100);
        frame.contentWindow.postMessage({probe: true}, '*', [new MessageChannel().port2]);
        await settle(150);
        frame.src = 'about:blank';  // the caller goes away mid-call
        for (let i = 0; i < 40 && !(seen.aborted && seen.cancel); i++) await settle(50);
        return seen;
        """,
        {"url": f"{other}/{FRAME}?probe=1", "other": other},
    )
    assert got == {"aborted": True, "cancel": True}


def test_a_same_origin_calling_frame_that_navigates_away_cancels_its_call(
    mc_page: Any, http_server: Any
) -> None:
    got = run(
        mc_page,
        """
        const seen = {aborted: false, cancel: false};
        mc.addEventListener('toolcancel', () => { seen.cancel = true; });
        await mc.registerTool({name: 'local', description: 'd', execute: (args, {signal}) =>
          new Promise(() => signal.addEventListener('abort', () => { seen.aborted = true; }))});
        const frame = await addFrame(arg.url, '');
        await settle(50);
        const framed = frame.contentWindow.document.modelContext;
        const [tool] = await framed.getTools();
        framed.executeTool(tool, {}).catch(() => {});
        await settle(100);
        frame.src = 'about:blank';
        for (let i = 0; i < 40 && !(seen.aborted && seen.cancel); i++) await settle(50);
        return seen;
        """,
        {"url": http_server.url(FRAME)},
    )
    assert got == {"aborted": True, "cancel": True}


def test_tool_objects_work_for_code_written_for_chrome_159_and_for_chrome_160(
    mc_page: Any,
) -> None:
    got = run(
        mc_page,
        """
        await mc.registerTool({name: 'search', description: 'Find', execute: () => 'found'});
        const [tool] = await mc.getTools();
        // Chrome up to 159: leave out `window`, then send or serialise the rest.
        const { window: w, ...rest } = tool;
        const channel = new MessageChannel();
        const received = new Promise((r) => { channel.port2.onmessage = (e) => r(e.data); });
        let sent = 'ok';
        try { channel.port1.postMessage(rest); } catch (e) { sent = e.name; }
        // Chrome 160: `source`, attributes read one by one, the object passed back.
        return {
          keys: Object.keys(tool).sort(), json: JSON.parse(JSON.stringify(rest)), sent,
          received: await received, windowOk: w === window, sourceOk: tool.source === window,
          result: await mc.executeTool(tool, {}),
        };
        """,
    )
    assert got["keys"] == ["description", "name", "origin", "title", "window"]
    assert got["sent"] == "ok"
    assert got["received"]["name"] == "search" and "source" not in got["received"]
    assert got["json"]["name"] == "search"
    assert got["windowOk"] and got["sourceOk"]
    assert got["result"] == "found"


def test_respond_with_before_the_form_is_removed_answers_the_call(
    page: Any, http_server: Any
) -> None:
    page.goto(http_server.url(FORMS))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    got = page.evaluate(
        """async () => {
        const form = document.getElementById('auto');
        form.addEventListener('submit', () => form.remove());  // after the page's respondWith
        let tool;
        for (let i = 0; i < 400 && !tool; i++) {  // form tools are registered in a later task
          [tool] = (await mc.getTools()).filter((t) => t.name === 'quick_search');
          if (!tool) await settle(25);
        }
        return outcome(mc.executeTool(tool, {q: 'mug'}));
    }"""
    )
    assert got == {"ok": True, "value": '{"found":"mug"}'}


def test_a_thrown_non_error_value_is_named_in_the_rejection(mc_page: Any) -> None:
    got = run(
        mc_page,
        """
        const thrown = {string: 'out of stock', number: 42, object: {code: 'E_STOCK', left: 0},
                        nothing: null, missing: undefined, empty: ''};
        const out = {};
        for (const [name, value] of Object.entries(thrown)) {
          await mc.registerTool({name, description: 'd', execute: () => { throw value; }});
          const [tool] = (await mc.getTools()).filter((t) => t.name === name);
          out[name] = await outcome(mc.executeTool(tool, {}));
        }
        return out;
        """,
    )
    for name, words in {
        "string": "out of stock",
        "number": "42",
        "object": '{"code":"E_STOCK","left":0}',
        "nothing": "threw null",
        "missing": "threw undefined",
        "empty": "empty string",
    }.items():
        assert got[name]["ok"] is False and got[name]["name"] == "UnknownError"
        assert words in got[name]["message"], (name, got[name])
        assert "[object Object]" not in got[name]["message"]
