"""``examples/python-tools.html`` end to end in headless Chromium, in both lanes.

A Python-only page: its actions are Python functions declared with ``@tool`` and mounted on
``document.modelContext`` (Chromium's own WebMCP in the native lane, the shim in the shim lane);
``<site-agent models="demo">`` drives them. One page boot per module and lane; each test starts
from an empty board and a fresh conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from element_support import BOOT_TIMEOUT_MS, EL, RECORDER, start_site

pytestmark = pytest.mark.browser

PAGE = "python-tools.html"

# Reaches the page's Python namespace (runPythonAsync ran the page's file in the globals of the
# runtime <site-agent> shares) to start each test from an empty board.
RESET = """async () => {
  const el = document.querySelector('site-agent');
  el.stop();
  for (let i = 0; i < 200 && el.agent.running; i++) await new Promise((r) => setTimeout(r, 10));
  el.reset();
  const py = await (await import('/loader.js')).loadRuntime();
  await py.runPythonAsync('board.clear()\\nrender()\\nawait mounted.refresh()');
  window.__events.length = 0;
  window.__done.length = 0;
  window.__asks = [];
}"""

LIST_TOOLS = """async () => (await document.modelContext.getTools())
  .map((t) => t.name).filter((n) => !n.startsWith('probe'))"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def board(page: Any, site: Any) -> Any:
    page.add_init_script(RECORDER)
    site.requests.clear()
    page.goto(site.url + PAGE)
    page.wait_for_selector("html[data-ready=true]", timeout=BOOT_TIMEOUT_MS)
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=BOOT_TIMEOUT_MS)
    return page


@pytest.fixture
def fresh(board: Any) -> Any:
    board.evaluate(RESET)
    return board


def ask(page: Any, text: str) -> None:
    """Start a run as the visitor would (without waiting); the outcome lands in __asks."""
    page.evaluate(
        """(text) => {
            const slot = { text };
            window.__asks.push(slot);
            document.querySelector('site-agent').ask(text).then(
              (r) => { slot.result = r; },
              (e) => { slot.error = { code: e.code, message: e.message }; });
        }""",
        text,
    )


def outcome(page: Any) -> dict[str, Any]:
    page.wait_for_function(
        "() => { const a = window.__asks.at(-1); return a && (a.result || a.error); }",
        timeout=20_000,
    )
    value: dict[str, Any] = page.evaluate("window.__asks.at(-1)")
    assert "result" in value, value
    result: dict[str, Any] = value["result"]
    return result


def events(page: Any, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate("window.__events")
    return [e for e in found if e["type"] == kind]


def tasks(page: Any) -> list[str]:
    items: list[str] = page.eval_on_selector_all("#tasks li", "els => els.map(e => e.textContent)")
    return items


def card(page: Any) -> Any:
    locator = page.locator("site-agent >> .card")
    locator.wait_for(timeout=10_000)
    return locator


def test_the_page_is_python_only_and_its_tools_are_on_model_context(
    board: Any, site: Any, lane: str
) -> None:
    fetched = [p.split("?")[0] for m, p, s in site.requests if m == "GET"]
    scripts = [p for p in fetched if p.endswith((".js", ".mjs"))]
    assert "/loader.js" in scripts
    # No JavaScript of the page's own: only loader.js, the element's files and Pyodide.
    assert all(p == "/loader.js" or p.startswith(("/web/", "/pyodide/")) for p in scripts), scripts
    assert "/python_tools_page.py" in fetched
    state = board.evaluate(
        """async () => {
            const m = await import('/loader.js');
            return { native: m.hasNativeModelContext(), shim: m.isShim(document.modelContext) };
        }"""
    )
    assert state == ({"native": True, "shim": False} if lane == "native" else
                     {"native": False, "shim": True})  # fmt: skip
    # Only the tools whose predicate holds: the board is empty, so nothing to finish or clear.
    assert board.evaluate(LIST_TOOLS) == ["add_task", "list_tasks"]
    listed = board.evaluate(
        """async () => (await document.modelContext.getTools()).map(
            ({name, title, description, inputSchema, annotations}) =>
              ({name, title, description, inputSchema, annotations}))"""
    )
    add = next(t for t in listed if t["name"] == "add_task")
    assert add["title"] == "Add a task"
    assert add["description"] == "Put a new task on the board."
    assert add["inputSchema"]["required"] == ["title"]
    assert add["inputSchema"]["properties"]["priority"]["enum"] == ["low", "normal", "high"]
    assert add["annotations"]["readOnlyHint"] is False
    show = next(t for t in listed if t["name"] == "list_tasks")
    assert show["annotations"]["readOnlyHint"] is True
    assert "Tools on document.modelContext: add_task, list_tasks." in board.inner_text("#status")


def test_a_read_only_tool_runs_without_asking(fresh: Any) -> None:
    ask(fresh, "show my tasks")
    result = outcome(fresh)
    assert result["status"] == "answered"
    assert result["answer"] == "list_tasks: The board is empty."
    assert events(fresh, "confirm-request") == []
    [decision] = events(fresh, "confirm-result")
    assert decision["decision"] == {"allowed": True, "by": "read-only"}


def test_a_changing_tool_asks_and_allow_changes_the_board(fresh: Any) -> None:
    ask(fresh, "add a task buy oat milk")
    found = card(fresh)
    assert found.locator("h3").inner_text() == "Allow Add a task?"
    assert "Put a new task on the board." in found.inner_text()
    labels = found.locator("dt").all_inner_texts()
    values = found.locator("dd").all_inner_texts()
    assert dict(zip(labels, values, strict=True)) == {"Title": "buy oat milk"}
    assert tasks(fresh) == []  # nothing ran yet
    found.locator(".allow").click()
    result = outcome(fresh)
    assert result["answer"] == "add_task: Added task 1: buy oat milk"
    assert tasks(fresh) == ["buy oat milk"]
    assert fresh.inner_text("#count") == "1"
    # The call refreshed the predicates: the board now has something to finish or clear.
    fresh.wait_for_function(f"({LIST_TOOLS})().then((n) => n.includes('finish_task'))")
    assert fresh.evaluate(LIST_TOOLS) == ["add_task", "clear_board", "finish_task", "list_tasks"]
    [request] = events(fresh, "confirm-request")
    assert request["request"]["reason"] == "not-read-only"


def test_deny_leaves_the_board_as_it_was(fresh: Any) -> None:
    ask(fresh, "add a task water the plants")
    card(fresh).locator(".deny").click()
    result = outcome(fresh)
    assert result["answer"] == "I did not run add_task: it was not allowed."
    assert tasks(fresh) == []
    assert events(fresh, "tool-result") == []  # the Python function never ran
    [decision] = events(fresh, "confirm-result")
    assert decision["decision"] == {"allowed": False, "by": "visitor", "reason": "not-read-only"}


def test_errors_from_python_reach_the_agent_as_readable_text(fresh: Any) -> None:
    ask(fresh, "add a task call plumber")
    card(fresh).locator(".allow").click()
    assert outcome(fresh)["status"] == "answered"
    # Any WebMCP client (here: plain JS) reads the Python error, not Chrome's UnknownError.
    text = fresh.evaluate(
        """async () => {
            const mc = document.modelContext;
            const tool = (await mc.getTools()).find((t) => t.name === 'finish_task');
            return mc.executeTool(tool, { number: 7 });
        }"""
    )
    assert json.loads(text) == {
        "content": [
            {
                "type": "text",
                "text": "finish_task failed: IndexError: there is no task 7; the board has 1",
            }
        ],
        "isError": True,
    }
    # Through the agent: the finishing call asks, runs, and the tools follow the board.
    ask(fresh, "finish task 1")
    found = card(fresh)
    assert found.locator("h3").inner_text() == "Allow Finish a task?"
    found.locator(".allow").click()
    assert outcome(fresh)["answer"] == "finish_task: Finished: call plumber"
    assert tasks(fresh) == []
    fresh.wait_for_function(f"({LIST_TOOLS})().then((n) => !n.includes('finish_task'))")
    assert fresh.evaluate(LIST_TOOLS) == ["add_task", "list_tasks"]
