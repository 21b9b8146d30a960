"""The shim on documents and registrations it must follow as Chromium does (both lanes).

Measured with Chromium 156 (``--enable-features=WebMCP``) and asserted in both lanes:

- a ``<form toolname>`` in a document made by ``document.implementation.createHTMLDocument`` or
  ``DOMParser`` is no tool of the page; moved into the page (``adoptNode`` or ``importNode``)
  it becomes one, with a ``toolchange``; moved out again it is gone, with a ``toolchange``;
- changing ``tooldescription`` or ``toolname`` re-registers the form's tool (``toolchange``;
  listed with the new description or under the new name only); removing ``toolname`` ends it;
- ``registerTool`` on the ``document.modelContext`` of a frame removed from the page rejects
  with the frame's ``InvalidStateError`` ("The document is not active."), and nothing is listed;
- an unregister racing a call: a call that has not started when its tool is unregistered
  rejects (``UnknownError``, the tool never runs); one already running finishes with its result
  (webmachinelearning/webmcp#300: unregistration must not fail an in-flight execution).

Caveat (native only): reading ``modelContext`` of a ``createHTMLDocument``/``DOMParser``
document crashes Chromium 156's renderer, so no test touches it; in the shim it is undefined.
"""

from __future__ import annotations

from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp.html"
FRAME = "tests/browser/pages/webmcp-frame.html"

HELPERS = """
const mc = window.modelContext;
let changes = 0;
mc.addEventListener('toolchange', () => { changes += 1; });
const names = async () => (await mc.getTools()).map((t) => t.name);
const until = async (check, ms = 3000) => {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value || Date.now() > end) return value;
    await settle(10);
  }
};
const same = (want) => async () => JSON.stringify(await names()) === JSON.stringify(want);
"""


@pytest.fixture
def mc_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    return page


def run(page: Any, body: str) -> Any:
    return page.evaluate(f"async () => {{ {HELPERS} {body} }}")


def test_forms_of_inert_documents_are_no_tools_until_moved_into_the_page(
    mc_page: Any, lane: str
) -> None:
    got = run(
        mc_page,
        """
        const made = document.implementation.createHTMLDocument('made');
        const form = (n) => `<form toolname="${n}" tooldescription="D."><input name=q></form>`;
        made.body.innerHTML = form('made_form');
        const parsed = new DOMParser().parseFromString(form('parsed_form'), 'text/html');
        await settle(100);
        const out = {inert: await names(), inertChanges: changes};
        const adopted = document.adoptNode(parsed.querySelector('form'));
        document.body.append(adopted);
        out.adopted = await until(same(['parsed_form']));
        const imported = document.importNode(made.querySelector('form'), true);
        document.body.append(imported);
        out.imported = await until(same(['made_form', 'parsed_form']));
        out.stillInMade = made.querySelectorAll('form').length;  // importNode copies
        const before = changes;
        made.body.append(made.adoptNode(adopted));  // moved out of the page again
        out.movedOut = await until(same(['made_form']));
        out.movedOutChanged = await until(async () => changes > before);
        out.shimOnInert = lane === 'shim' ? 'modelContext' in made : null;
        return out;
        """.replace("lane", repr(lane)),
    )
    assert got["inert"] == [] and got["inertChanges"] == 0
    assert got["adopted"] is True
    assert got["imported"] is True
    assert got["stillInMade"] == 1
    assert got["movedOut"] is True and got["movedOutChanged"] is True
    if lane == "shim":
        assert got["shimOnInert"] is False  # the shim is the page's document's only


def test_toolname_and_tooldescription_changes_fire_toolchange(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        document.body.insertAdjacentHTML('beforeend',
          '<form id="f" toolname="note" tooldescription="Send a note."><input name="text"></form>');
        const form = document.getElementById('f');
        const out = {first: await until(same(['note']))};
        const described = async (name, words) => (await mc.getTools())
          .some((t) => t.name === name && t.description === words);
        let before = changes;
        form.setAttribute('tooldescription', 'Send a short note.');
        out.description = await until(() => described('note', 'Send a short note.'));
        out.descriptionChanged = await until(async () => changes > before);
        before = changes;
        form.setAttribute('toolname', 'short_note');
        out.renamed = await until(same(['short_note']));
        out.renameChanged = await until(async () => changes > before);
        before = changes;
        form.removeAttribute('toolname');
        out.removed = await until(same([]));
        out.removeChanged = await until(async () => changes > before);
        return out;
        """,
    )
    assert got == {
        "first": True,
        "description": True,
        "descriptionChanged": True,
        "renamed": True,
        "renameChanged": True,
        "removed": True,
        "removeChanged": True,
    }


def test_register_tool_from_a_removed_frame_is_an_invalid_state_error(
    mc_page: Any, lane: str
) -> None:
    got = run(
        mc_page,
        """
        const frame = document.createElement('iframe');
        frame.src = '/FRAME';
        const loaded = new Promise((resolve) => { frame.onload = resolve; });
        document.body.append(frame);
        await loaded;
        const win = frame.contentWindow;
        await until(() => win.document.modelContext);
        const frameMC = win.document.modelContext;
        const FrameDOMException = win.DOMException;
        await frameMC.getTools();  // the shim's implementation is loaded in the frame
        frame.remove();
        const r = await outcome(frameMC.registerTool({name: 'from_gone_frame', description: 'd',
                                                      execute: () => 'x'}));
        let own = false;
        try { await frameMC.registerTool({name: 'again', description: 'd', execute: () => 'x'}); }
        catch (e) { own = e instanceof FrameDOMException; }
        await settle(50);
        return {r, own, listed: await names()};
        """.replace("/FRAME", "/" + FRAME),
    )
    assert got["r"]["ok"] is False
    assert (got["r"]["name"], got["r"]["message"]) == (
        "InvalidStateError",
        "The document is not active.",
    )
    assert got["own"] is True  # the frame's own DOMException
    assert got["listed"] == []


def test_an_unregister_racing_a_call(mc_page: Any, lane: str) -> None:
    got = run(
        mc_page,
        """
        // Not started yet: the call rejects and the tool never runs.
        let ran = 0;
        const early = new AbortController();
        const execute = () => { ran += 1; return 'ran'; };
        await mc.registerTool({name: 'early', description: 'd', execute}, {signal: early.signal});
        const [tool] = await mc.getTools();
        const call = outcome(mc.executeTool(tool, {}));
        early.abort();
        const out = {early: await call, ran};
        // Already running: it finishes with its result (webmcp#300), and the tool is gone.
        let started;
        const running = new Promise((resolve) => { started = resolve; });
        const late = new AbortController();
        await mc.registerTool({name: 'late', description: 'd', execute: () => {
          started();
          return new Promise((resolve) => setTimeout(() => resolve('finished'), 100));
        }}, {signal: late.signal});
        const [lateTool] = await mc.getTools();
        const lateCall = outcome(mc.executeTool(lateTool, {}));
        await running;
        late.abort();
        out.late = await lateCall;
        out.listed = await names();
        return out;
        """,
    )
    assert got["early"]["ok"] is False and got["early"]["name"] == "UnknownError", got
    assert got["ran"] == 0
    assert got["late"] == {"ok": True, "value": "finished"}
    assert got["listed"] == []
