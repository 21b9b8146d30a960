"""Worker mode (the default): Python runs in a module Web Worker and reaches the page's tools,
models and the visitor over the worker channel (docs/runtime.md).

- every message of a run with a tool, a card and a tool listing matches
  ``pysite_agent/schemas/worker-channel-v1.schema.json``;
- Stop during a tool and during a model call aborts their signals on the main thread, and
  nothing runs after it;
- a tool result that cannot be cloned becomes an error result the model reads;
- a message sent while Python starts runs once, when the agent is ready;
- a page that changes its tools between Allow and the execution gets ``stale-tools``: the
  page-side check refuses the call, the tool does not run.

Pages are served by Playwright's router on the demo site's origin (the bundle as a site has it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from element_support import EL, start_site

pytestmark = pytest.mark.browser

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "pysite_agent"
        / "schemas"
        / "worker-channel-v1.schema.json"
    ).read_text(encoding="utf-8")
)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>worker channel</title>
<script>
  sessionStorage.clear();  // each test page starts a new visit (no conversation carried over)
  window.__channel = [];
  window.pysiteAgentChannelTap = (direction, message) =>
    window.__channel.push({ direction, message });
  window.__log = [];
</script>
</head>
<body><site-agent models="demo" {attrs}></site-agent>
<script type="module" src="/loader.js"></script>
<script type="module">{script}</script>
</body></html>"""

# A JS model that calls `tool` once (with `args`), then answers; `window.__responds` counts.
SCRIPTED_MODEL = """
window.scriptedModel = (tool, args = {}) => ({
  name: 'scripted',
  respond(request) {
    window.__responds = (window.__responds ?? 0) + 1;
    const called = request.messages.some((m) => m.role === 'tool');
    if (!called) return { type: 'tool', name: tool, arguments: args };
    const last = request.messages.filter((m) => m.role === 'tool').at(-1);
    window.__lastToolMessage = last;
    return { type: 'answer', text: 'done' };
  },
});
"""


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture
def open_page(page: Any, site: Any) -> Any:
    def go(script: str = "", attrs: str = "") -> Any:
        path = f"worker-test-{abs(hash((script, attrs)))}.html"
        body = PAGE.replace("{script}", SCRIPTED_MODEL + script).replace("{attrs}", attrs)
        page.route(
            f"**/{path}",
            lambda route: route.fulfill(status=200, content_type="text/html", body=body),
        )
        page.goto(site.url + path)
        wait_until(page, "() => customElements.get('site-agent') !== undefined")
        return page

    return go


def wait_until(page: Any, predicate: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(predicate)
        time.sleep(0.05)


def boot(page: Any) -> None:
    page.click("site-agent >> .launcher")
    wait_until(page, f"() => {EL}.state === 'ready'")


def start_ask(page: Any, text: str) -> None:
    page.evaluate(
        """(text) => {
            window.__ask = {};
            document.querySelector('site-agent').ask(text).then(
              (r) => { window.__ask.result = r; },
              (e) => { window.__ask.error = { code: e.code, message: e.message }; });
        }""",
        text,
    )


def ask_result(page: Any) -> dict[str, Any]:
    wait_until(page, "() => window.__ask.result || window.__ask.error", 30)
    outcome: dict[str, Any] = page.evaluate("window.__ask")
    assert "result" in outcome, outcome
    return outcome["result"]  # type: ignore[no-any-return]


def tool_results(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in result["trace"]["steps"] if s["kind"] == "tool-result"]


# ---------------------------------------------------------------------------- the schema


def test_every_message_of_a_run_matches_the_channel_schema(open_page: Any) -> None:
    page = open_page(
        """
        document.modelContext.registerTool({
          name: 'add_note', description: 'Add a note', title: 'Add a note',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
          execute: async ({ text }) => { window.__log.push(text); return 'added ' + text; },
        });
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = {
            model: window.scriptedModel('add_note', { text: 'hi' }),
          };
        });
        """
    )
    boot(page)
    start_ask(page, "add a note")
    page.locator("site-agent >> .card .allow").click()
    result = ask_result(page)
    assert result["status"] == "answered"
    assert page.evaluate("window.__log") == ["hi"]
    page.evaluate(f"{EL}.agent.tools()")
    tapped = page.evaluate("window.__channel")
    messages = [t["message"] for t in tapped]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for message in messages:
        errors = sorted(validator.iter_errors(message), key=lambda e: list(e.path))
        assert not errors, (message, [e.message for e in errors][:3])
    methods = {m.get("method") for m in messages if m["kind"] in ("request", "notify")}
    assert {"boot", "agent.open", "agent.call", "tools.list", "tools.execute"} <= methods
    assert {"bridge.confirm", "bridge.emit", "bridge.started", "model.respond"} <= methods
    # The listed tools cross as descriptions with a handle (never the page's objects).
    # (ids count per sender: the page answers the worker's requests with its own "out" replies)
    lists = {
        t["message"]["id"]
        for t in tapped
        if t["direction"] == "in" and t["message"].get("method") == "tools.list"
    }
    described = [
        t["message"]["value"]
        for t in tapped
        if t["direction"] == "out"
        and t["message"]["kind"] == "reply"
        and t["message"]["id"] in lists
    ]
    item = {"$ref": "#/$defs/toolDescription", "$defs": SCHEMA["$defs"]}
    for listing in described:
        for tool in listing:
            jsonschema.validate(tool, item)
    assert any(t["name"] == "add_note" for listing in described for t in listing)
    assert not validator.is_valid({**messages[0], "v": 2})


# ---------------------------------------------------------------------------- Stop


def test_stop_during_a_tool_aborts_its_signal_in_the_page_and_nothing_runs_after(
    open_page: Any,
) -> None:
    page = open_page(
        """
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = {
            model: window.scriptedModel('slow_search'),
            tools: {
              getTools: () => [{
                name: 'slow_search', description: 'Search slowly',
                annotations: { readOnlyHint: true },
              }],
              executeTool: (tool, args, { signal }) => new Promise((resolve, reject) => {
                window.__toolStarted = (window.__toolStarted ?? 0) + 1;
                signal.addEventListener('abort', () => {
                  window.__toolAborted = true;
                  reject(signal.reason);
                });
              }),
            },
          };
        });
        """
    )
    boot(page)
    start_ask(page, "search")
    wait_until(page, "() => window.__toolStarted === 1")
    page.click("site-agent >> .stop")
    result = ask_result(page)
    assert result["status"] == "aborted"
    assert page.evaluate("window.__toolAborted") is True
    page.wait_for_timeout(300)
    assert page.evaluate("[window.__toolStarted, window.__responds]") == [1, 1]


def test_stop_during_a_model_call_aborts_its_signal_in_the_page(open_page: Any) -> None:
    page = open_page(
        """
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = {
            model: {
              name: 'slow',
              respond: ({ signal }) => new Promise((resolve, reject) => {
                window.__responds = (window.__responds ?? 0) + 1;
                signal.addEventListener('abort', () => {
                  window.__modelAborted = true;
                  reject(signal.reason);
                });
              }),
            },
          };
        });
        """
    )
    boot(page)
    start_ask(page, "hello")
    wait_until(page, "() => window.__responds === 1")
    page.evaluate(f"{EL}.stop()")
    result = ask_result(page)
    assert result["status"] == "aborted", result.get("error")
    assert page.evaluate("window.__modelAborted") is True
    page.wait_for_timeout(300)
    assert page.evaluate("window.__responds") == 1


# ---------------------------------------------------------------------------- results


def test_a_tool_result_that_cannot_be_cloned_is_an_error_result_for_the_model(
    open_page: Any,
) -> None:
    page = open_page(
        """
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = {
            model: window.scriptedModel('get_widget'),
            tools: {
              getTools: () => [{
                name: 'get_widget', description: 'Returns a function by mistake',
                annotations: { readOnlyHint: true },
              }],
              executeTool: () => ({ widget: () => 42 }),
            },
          };
        });
        """
    )
    boot(page)
    start_ask(page, "widget")
    result = ask_result(page)
    assert result["status"] == "answered"
    [step] = tool_results(result)
    assert step["isError"] is True
    assert "cannot be sent to the agent" in step["text"]
    assert "DataCloneError" in step["text"]
    message = page.evaluate("window.__lastToolMessage")
    assert "cannot be sent to the agent" in json.dumps(message)


# ---------------------------------------------------------------------------- while loading


def test_a_message_sent_while_python_starts_runs_once_when_ready(open_page: Any) -> None:
    page = open_page(
        """
        document.addEventListener('site-agent-done', () => {
          window.__doneCount = (window.__doneCount ?? 0) + 1;
        });
        """
    )
    page.click("site-agent >> .launcher")
    assert page.evaluate(f"{EL}.state") == "loading"
    page.fill("site-agent >> textarea", "find mugs")
    page.click("site-agent >> .send")
    # At once: the message is shown and the panel says it waits.
    assert page.evaluate(f"{EL}.state") == "loading"
    assert page.locator("site-agent >> .msg.user.queued").inner_text().endswith("find mugs")
    assert "sent as soon as the assistant is ready" in page.inner_text("site-agent >> .log")
    wait_until(page, "() => window.__doneCount === 1")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__doneCount") == 1
    assert page.locator("site-agent >> .msg.user").count() == 1
    assert page.locator("site-agent >> .queued").count() == 0
    assert page.locator("site-agent >> .msg.assistant").count() == 1


@pytest.mark.parametrize("how", ["stop", "reset"])
def test_a_queued_message_is_dropped_by_stop_or_new_conversation(open_page: Any, how: str) -> None:
    page = open_page(
        """
        document.addEventListener('site-agent-event', () => {
          window.__events = (window.__events ?? 0) + 1;
        });
        """
    )
    page.click("site-agent >> .launcher")
    page.fill("site-agent >> textarea", "find mugs")
    page.click("site-agent >> .send")
    assert page.evaluate(f"{EL}.state") == "loading"
    assert page.locator("site-agent >> .stop").is_visible()  # Stop can take it back
    if how == "stop":
        page.click("site-agent >> .stop")
    else:
        page.click("site-agent >> .fresh")
        page.click("site-agent >> .fresh-yes")  # a conversation with a message asks first
    assert page.locator("site-agent >> .queued").count() == 0
    wait_until(page, f"() => {EL}.state === 'ready'")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__events ?? 0") == 0  # never sent: no run, no event
    assert page.locator("site-agent >> .msg").count() == 0
    # Stop gives the text back to the input; a new conversation drops it.
    expected = "find mugs" if how == "stop" else ""
    assert page.input_value("site-agent >> textarea") == expected
    assert page.locator("site-agent >> .stop").is_hidden()


def test_a_save_that_crosses_a_reset_is_dropped(open_page: Any) -> None:
    """The worker sends a step's state right after the step's event; a reset() made while the
    page handles that event comes before the state arrives: it must not bring the record back."""
    page = open_page(
        """
        const el = document.querySelector('site-agent');
        window.addEventListener('DOMContentLoaded', () => {
          el.options = {
            model: window.scriptedModel('ping'),
            tools: {
              getTools: () => [{
                name: 'ping', description: 'Ping', annotations: { readOnlyHint: true },
              }],
              executeTool: () => 'pong',
            },
          };
        });
        el.addEventListener('site-agent-event', (e) => {
          if (e.detail.type === 'confirm-result' && !window.__reset) {
            window.__reset = true;
            el.reset();
          }
        });
        """
    )
    boot(page)
    start_ask(page, "ping")
    wait_until(page, "() => window.__reset === true")
    page.wait_for_timeout(800)  # more than the record's 250 ms store interval
    assert page.evaluate("sessionStorage.getItem('site-agent:default')") is None
    saves = page.evaluate(
        "window.__channel.filter((c) => c.message.method === 'bridge.save').length"
    )
    assert saves >= 1  # the late state did cross, and was dropped


def test_reset_right_after_ask_leaves_nothing_behind(open_page: Any) -> None:
    """reset() a moment after ask(), before or after the run reached Python (or even after
    it answered): nothing of it is shown or stored, and the next ask starts a fresh
    conversation."""
    page = open_page()
    boot(page)
    for delay in (0, 0, 1, 2, 3, 5):
        outcome = page.evaluate(
            """async (delay) => {
            sessionStorage.clear();
            const el = document.querySelector('site-agent');
            const asked = el.ask('find mugs').then((r) => r.status, (e) => e.code);
            if (delay) await new Promise((r) => setTimeout(r, delay));
            else await Promise.resolve();
            el.reset();
            const status = await asked;
            await new Promise((r) => setTimeout(r, 400));
            return [status, sessionStorage.getItem('site-agent:default'),
                    el.shadowRoot.querySelectorAll('.log .msg').length];
        }""",
            delay,
        )
        assert outcome[0] in ("aborted", "answered"), (delay, outcome)  # done before it
        assert outcome[1] is None and outcome[2] == 0, (delay, outcome)
    result = page.evaluate(f"{EL}.ask('find mugs')")
    assert result["status"] == "answered"
    users = [s for s in result["trace"]["steps"] if s["kind"] == "user"]
    assert len(users) == 1


# ---------------------------------------------------------------------------- stale tools


def test_tools_changed_between_allow_and_execution_are_refused_stale(open_page: Any) -> None:
    """The page re-registers ``delete_all`` (new content, no toolchange event) right after the
    agent's last check in Python: only the page-side check at executeTool can see it."""
    page = open_page(
        """
        window.__version = 1;
        window.__allowed = false;
        const tool = () => ({
          name: 'delete_all', description: 'Delete everything (v' + window.__version + ')',
          annotations: { readOnlyHint: false },
        });
        document.addEventListener('site-agent-event', (e) => {
          if (e.detail.type === 'confirm-result') window.__allowed = true;
        });
        window.addEventListener('DOMContentLoaded', () => {
          document.querySelector('site-agent').options = {
            model: window.scriptedModel('delete_all'),
            tools: {
              getTools() {
                const listed = [tool()];
                // After the visitor allowed it, the next listing is Python's last check:
                // the page changes the tool right after answering it.
                if (window.__allowed && window.__version === 1) window.__version = 2;
                return listed;
              },
              executeTool() {
                window.__log.push('ran');
                return 'deleted';
              },
            },
          };
        });
        """
    )
    boot(page)
    start_ask(page, "delete everything")
    page.locator("site-agent >> .card .allow").click()
    result = ask_result(page)
    assert page.evaluate("window.__log") == []
    [step] = tool_results(result)
    assert step["outcome"] == "stale-tools"
    assert step["text"].startswith("stale-tools:")
    assert page.evaluate("window.__version") == 2
