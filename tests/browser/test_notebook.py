"""``examples/notebook.html`` end to end in headless Chromium, in both lanes.

A person types Python into the notebook: declares tools, creates an agent with demo rules, runs
it with ``await``, answers the confirmation with Allow or Deny, prints the events, shows the trace
(a screenshot of it is saved to ``test-artifacts/``), and mounts the tools on
``document.modelContext`` (Chromium's own in the native lane, the shim in the shim lane). One page
boot per module and lane; the cells build on each other, in order, like a real session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from element_support import BOOT_TIMEOUT_MS, start_site

pytestmark = pytest.mark.browser

DEFINE_TOOLS = '''registry = ToolRegistry()
notes = []

@registry.tool(read_only=True)
def list_notes() -> str:
    """List the notes, oldest first."""
    return "\\n".join(notes) or "No notes yet."

@registry.tool
def add_note(text: str) -> str:
    """Add a note.

    Args:
        text: what to write down.
    """
    notes.append(text)
    return f"Added note {len(notes)}: {text}"

[t.name for t in registry.tools()]'''

RUN_AGENT = """agent = create_site_agent(
    model=demo_rules(), tools=registry.tools(), confirm=confirm
)
run = agent.run("add a note buy milk")
result = await run.done   # Allow or Deny below
result.answer"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def notebook(page: Any, site: Any) -> Any:
    page.set_viewport_size({"width": 1000, "height": 900})
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.requested = requested  # every URL the page asked for (checked: the site's own only)
    page.goto(site.url + "notebook.html")
    page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    return page


def type_cell(page: Any, code: str) -> Any:
    """Type ``code`` into the prompt and press Shift+Enter; returns the new cell's locator."""
    before = page.locator("#cells .cell").count()
    page.fill("#code", code)
    page.press("#code", "Shift+Enter")
    cell = page.locator("#cells .cell").nth(before)
    cell.wait_for()
    return cell


def finished(page: Any, cell: Any, timeout: float = 20_000) -> Any:
    page.wait_for_function(
        "(cell) => !cell.classList.contains('running')", arg=cell.element_handle(), timeout=timeout
    )
    return cell


def out(cell: Any) -> str:
    return str(cell.locator(".result").inner_text())


def test_python_runs_on_the_main_thread_with_top_level_await(notebook: Any, site: Any) -> None:
    # Offline: everything came from the demo site (the self-hosted bundle and examples/).
    origin = site.url.rstrip("/")
    elsewhere = [u for u in notebook.requested if not u.startswith((origin, "data:", "about:"))]
    assert elsewhere == []
    assert any(u.endswith("/pyodide/pyodide.asm.wasm") for u in notebook.requested)
    assert "is ready (main thread; document.modelContext is here)" in notebook.inner_text(
        "#kernel-status"
    )
    cell = finished(
        notebook,
        type_cell(
            notebook,
            "import asyncio, js\nawait asyncio.sleep(0.01)\nprint('<b>not bold</b>')\n"
            "js.eval('typeof window') + ' / ' + js.eval('typeof document.modelContext')",
        ),
    )
    assert cell.locator(".in").inner_text().startswith("import asyncio")
    assert cell.locator(".stdout").text_content() == "<b>not bold</b>\n"
    assert cell.locator(".stdout b").count() == 0  # text, never HTML
    assert out(cell) == "'object / object'"
    assert cell.locator(".result").get_attribute("data-prompt") == "Out[1]:"

    error = finished(notebook, type_cell(notebook, "def f():\n    return 1 / 0\n\nf()"))
    text = error.locator(".error").inner_text()
    assert 'File "<cell 2>", line 2, in f' in text
    assert "return 1 / 0" in text
    assert text.endswith("ZeroDivisionError: division by zero")
    assert "notebook_kernel" not in text  # the kernel's own frames are not shown
    assert "failed" in (error.get_attribute("class") or "")


def test_tools_agent_allow_events_and_trace(notebook: Any, artifacts_dir: Path, lane: str) -> None:
    defined = finished(notebook, type_cell(notebook, DEFINE_TOOLS))
    assert out(defined) == "['add_note', 'list_notes']"

    cell = type_cell(notebook, RUN_AGENT)
    card = cell.locator(".card")
    card.wait_for(timeout=10_000)
    assert card.locator("h3").inner_text() == "Allow add_note?"
    assert dict(
        zip(card.locator("dt").all_inner_texts(), card.locator("dd").all_inner_texts(), strict=True)
    ) == {"Text": "buy milk"}
    assert "running" in (cell.get_attribute("class") or "")  # the cell awaits the answer
    assert notebook.locator("#run").is_disabled()
    card.locator(".allow").click()
    finished(notebook, cell)
    assert out(cell) == "'add_note: Added note 1: buy milk'"
    assert card.locator(".verdict").inner_text() == "Allowed."

    events = finished(notebook, type_cell(notebook, "show_events(run)"))
    lines = events.locator(".stdout").inner_text().splitlines()
    assert [line.split()[0] for line in lines] == [
        "thinking",
        "tool-call",
        "confirm",
        "decision",
        "tool-result",
        "thinking",
        "answer",
        "done",
    ]
    assert "decision      allowed by visitor" in lines
    assert "tool-result   add_note: Added note 1: buy milk" in lines

    shown = finished(notebook, type_cell(notebook, "show_trace(result)"))
    frame_el = shown.locator("iframe.trace")
    assert frame_el.get_attribute("sandbox") == ""  # no scripts, opaque origin
    frame = frame_el.content_frame
    frame.locator("ol li").first.wait_for()
    timeline = frame.locator("body").inner_text()
    assert "add a note buy milk" in timeline
    assert "visitor" in timeline and "buy milk" in timeline
    frame_el.scroll_into_view_if_needed()
    shot = artifacts_dir / f"notebook-trace-{lane}.png"
    frame_el.screenshot(path=str(shot))
    assert shot.stat().st_size > 5_000
    notebook.screenshot(path=str(artifacts_dir / f"notebook-{lane}.png"), full_page=True)


def test_deny_and_the_tools_mounted_on_the_page(notebook: Any, lane: str) -> None:
    denied = type_cell(notebook, '(await agent.run("add a note sell the car").done).answer')
    denied.locator(".card .deny").click()
    finished(notebook, denied)
    assert out(denied) == "'I did not run add_note: it was not allowed.'"
    assert out(finished(notebook, type_cell(notebook, "notes"))) == "['buy milk']"

    mounted = finished(
        notebook,
        type_cell(
            notebook,
            "mounted = await registry.mount()\n"
            "page_agent = create_site_agent(model=demo_rules(), confirm=confirm)\n"
            '(await page_agent.run("list my notes").done).answer',
        ),
    )
    assert out(mounted) == "'list_notes: buy milk'"
    listed = notebook.evaluate(
        "async () => (await document.modelContext.getTools()).map((t) => t.name)"
    )
    assert {"add_note", "list_notes"} <= set(listed)
    native = notebook.evaluate("async () => (await import('/loader.js')).hasNativeModelContext()")
    assert native is (lane == "native")

    # Through the page's model context, a change still asks; Allow runs the Python function.
    cell = type_cell(notebook, '(await page_agent.run("add a note call mum").done).answer')
    cell.locator(".card .allow").click()
    finished(notebook, cell)
    assert out(cell) == "'add_note: Added note 2: call mum'"

    unmounted = finished(
        notebook, type_cell(notebook, "registry.unmount()\nsorted(mounted.names), mounted.closed")
    )
    assert out(unmounted) == "([], True)"
    listed = notebook.evaluate(
        "async () => (await document.modelContext.getTools()).map((t) => t.name)"
    )
    assert not {"add_note", "list_notes"} & set(listed)


def test_interrupt(notebook: Any) -> None:
    slow = type_cell(notebook, "import asyncio\nawait asyncio.sleep(60)")
    notebook.locator("#interrupt").click()
    finished(notebook, slow, timeout=5_000)
    assert slow.locator(".error").inner_text() == "Interrupted."
    after = finished(notebook, type_cell(notebook, "1 + 1"))
    assert out(after) == "2"


def test_the_documented_session(notebook: Any) -> None:
    """The cells of docs/python-in-the-page.md, as "Next example" fills them in."""
    outputs = []
    for _ in range(6):
        notebook.click("#example")
        before = notebook.locator("#cells .cell").count()
        notebook.press("#code", "Shift+Enter")
        cell = notebook.locator("#cells .cell").nth(before)
        cell.wait_for()
        allow = cell.locator(".card .allow")
        notebook.wait_for_function(
            "(cell) => !cell.classList.contains('running') || cell.querySelector('.card .allow')",
            arg=cell.element_handle(),
            timeout=20_000,
        )
        if allow.count():
            allow.click()
        finished(notebook, cell)
        assert cell.locator(".error").count() == 0, cell.locator(".error").inner_text()
        result = cell.locator(".result")
        outputs.append(result.inner_text() if result.count() else None)
    assert notebook.locator("#example").is_disabled()  # no more examples
    assert outputs == [
        "['add_note', 'list_notes']",
        "'add_note: Added note 1: buy milk'",
        None,  # show_events printed its lines
        None,  # show_trace showed the timeline
        "'list_notes: buy milk'",
        "'unavailable'",  # no on-device model on this machine
    ]
    registry_left = finished(notebook, type_cell(notebook, "registry.unmount()\nnotes"))
    assert out(registry_left) == "['buy milk']"


def test_a_tool_choice_eval_from_the_notebook(notebook: Any) -> None:
    code = """from pysite_agent import demo_rules, run_eval
cases = {
    "tools": [{"name": "add_note", "description": "Add a note to the notes",
               "inputSchema": {"type": "object", "required": ["text"],
                               "properties": {"text": {"type": "string"}}}}],
    "cases": [{"name": "add", "message": "add a note buy milk",
               "expectedCall": [{"functionName": "add_note",
                                 "arguments": {"text": {"$contains": "milk"}}}]},
              {"name": "hello", "message": "hello", "expectedCall": None}],
}
report = await run_eval(cases, demo_rules())
print(report.table())
report.totals()["toolChoice"], report.totals()["argumentsExact"]"""
    cell = finished(notebook, type_cell(notebook, code))
    assert cell.locator(".error").count() == 0, cell.locator(".error").inner_text()
    assert out(cell) == "(1.0, 1.0)"
    assert "model: demo rules (not AI)" in cell.locator(".stdout").inner_text()
