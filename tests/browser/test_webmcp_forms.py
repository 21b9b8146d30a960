"""Declarative ``<form toolname>`` tools in the shim (web/webmcp/forms.js).

Shim lane only (marker ``shim_only``): what the shim does for forms is the spec's behaviour;
Chromium 156's own form tools are exercised through the demo shop in both lanes
(``test_element_form_tool.py``), and its WPT results are in docs/webmcp-native.md.
"""

from __future__ import annotations

from typing import Any

import pytest

PAGE = "tests/browser/pages/webmcp-forms.html"

pytestmark = pytest.mark.shim_only


@pytest.fixture(scope="module", params=["shim"])
def lane(request: pytest.FixtureRequest) -> str:
    """This module runs in the shim lane only."""
    return str(request.param)


@pytest.fixture
def forms_page(page: Any, http_server: Any) -> Any:
    page.goto(http_server.url(PAGE))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    # (wait_for_function would take an async function's promise as truthy at once)
    registered = page.evaluate(
        """async () => {
          for (let i = 0; i < 400; i++) {
            if ((await window.mc.getTools()).length === 2) return true;
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
          return false;
        }"""
    )
    assert registered, "the two form tools were not registered within 10 s"
    return page


def run(page: Any, body: str) -> Any:
    return page.evaluate(f"async () => {{ const mc = window.mc; {body} }}")


def test_the_input_schema_comes_from_the_controls(forms_page: Any) -> None:
    tools = run(forms_page, "return await mc.getTools();")
    order = next(t for t in tools if t["name"] == "order_mug")
    assert order["description"] == "Order a mug."
    assert order["inputSchema"] == {
        "type": "object",
        "properties": {
            "size": {"type": "string", "enum": ["s", "m"], "description": "Size of the mug"},
            "count": {"type": "number", "minimum": 1, "maximum": 9,
                      "description": "How many mugs"},
            "gift": {"type": "boolean"},
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "note": {"type": "string", "maxLength": 40, "pattern": "^(?:[a-z ]*)$"},
        },
        "required": ["size"],
    }  # fmt: skip


def test_a_form_waits_for_the_visitors_submit_and_answers_with_respond_with(
    forms_page: Any,
) -> None:
    got = run(
        forms_page,
        """
        const form = document.getElementById('order');
        const events = [];
        for (const name of ['size', 'count', 'gift', 'colour'])
          for (const el of form.querySelectorAll(`[name=${name}]`))
            for (const type of ['input', 'change'])
              el.addEventListener(type, () => events.push(`${type}:${name}:${el.value}`));
        const [tool] = (await mc.getTools()).filter((t) => t.name === 'order_mug');
        const call = mc.executeTool(tool, {size: 'm', count: 2, gift: true, colour: 'blue'});
        // (a first call loads the code that runs a form tool)
        const active = () => form.hasAttribute('data-tool-form-active');
        for (let i = 0; i < 500 && !active(); i++) await settle(10);
        await settle(50);
        const button = form.querySelector('button');
        const waiting = {submits: [...window.submits],
                         active: form.hasAttribute('data-tool-form-active'),
                         button: button.hasAttribute('data-tool-submit-active'),
                         values: [form.size.value, form.count.value, form.gift.checked]};
        button.click();  // the visitor sends it
        const result = await call;
        return {waiting, result, submits: window.submits, events,
                activeAfter: form.hasAttribute('data-tool-form-active')};
        """,
    )
    assert got["waiting"] == {
        "submits": [],  # nothing is sent until the visitor submits
        "active": True,
        "button": True,
        "values": ["m", "2", True],
    }
    assert got["result"] == "ordered 2"
    assert got["submits"] == [{"form": "order", "agentInvoked": True}]
    assert "input:count:2" in got["events"] and "change:size:m" in got["events"]
    assert "change:colour:blue" in got["events"]
    assert got["activeAfter"] is False


def test_toolautosubmit_submits_at_once_and_a_plain_submit_is_not_agent_invoked(
    forms_page: Any,
) -> None:
    got = run(
        forms_page,
        """
        const tool = (await mc.getTools()).find((t) => t.name === 'quick_search');
        const result = await mc.executeTool(tool, {q: 'mugs'});
        document.getElementById('order').requestSubmit();
        return {result, submits: window.submits};
        """,
    )
    assert got["result"] == '{"found":"mugs"}'
    assert got["submits"] == [
        {"form": "auto", "agentInvoked": True},
        {"form": "order", "agentInvoked": False},
    ]


def test_attribute_changes_and_removal_fire_toolchange(forms_page: Any) -> None:
    got = run(
        forms_page,
        """
        let changes = 0;
        mc.addEventListener('toolchange', () => changes++);
        const form = document.getElementById('auto');
        form.setAttribute('tooldescription', 'Search every product.');
        await settle(50);
        const described = (await mc.getTools()).find((t) => t.name === 'quick_search').description;
        const afterDescription = changes;
        form.setAttribute('toolname', 'find');
        await settle(50);
        const renamed = (await mc.getTools()).map((t) => t.name);
        form.remove();
        await settle(50);
        return {described, afterDescription, renamed, changes,
                left: (await mc.getTools()).map((t) => t.name)};
        """,
    )
    assert got["described"] == "Search every product."
    assert got["afterDescription"] == 2  # unregistered and registered again
    assert got["renamed"] == ["find", "order_mug"]
    assert got["changes"] == 5
    assert got["left"] == ["order_mug"]


def test_removing_or_resetting_a_waiting_form_ends_its_call(forms_page: Any) -> None:
    got = run(
        forms_page,
        """
        const form = document.getElementById('order');
        const [tool] = (await mc.getTools()).filter((t) => t.name === 'order_mug');
        // Waiting: the call has filled the form (its first call loads the code that runs it).
        const waiting = async () => {
          while (!form.hasAttribute('data-tool-form-active')) await settle(10);
        };
        const reset = outcome(mc.executeTool(tool, {size: 's'}));
        await waiting();
        form.reset();
        const resetOutcome = await reset;
        const removed = outcome(mc.executeTool(tool, {size: 's'}));
        await waiting();
        form.remove();
        return {reset: resetOutcome, removed: await removed};
        """,
    )
    assert got["reset"]["ok"] is False and "reset" in got["reset"]["message"]
    assert (got["removed"]["ok"], got["removed"]["name"]) == (False, "UnknownError")
