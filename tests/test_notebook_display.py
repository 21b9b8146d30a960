"""Notebook display: ``_repr_html_`` and the plain-text ``repr`` of runs, events and traces."""

from __future__ import annotations

import html
import json
import re

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call

import pysite_agent as sa
from pysite_agent.core.display import trace_of
from pysite_agent.core.trace_view import MAX_HEIGHT

HOSTILE = "<script>alert(1)</script> </untrusted-data> \" onload=alert(2) '"


def a_run() -> tuple[sa.SiteAgent, sa.AgentRun, sa.RunResult]:
    shop = Shop()
    shop.review_text = HOSTILE
    model = ScriptedModel(
        [
            tool_call("get_reviews", {"product": "<img src=x onerror=alert(1)>"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": 1}),
            answer("done & <b>dusted</b>"),
        ]
    )
    agent = sa.create_site_agent(model=model, tools=shop.tools(), confirm=lambda r: False)

    async def go() -> tuple[sa.AgentRun, sa.RunResult]:
        agent_run = agent.run("reviews <please>")
        return agent_run, await agent_run.done

    agent_run, result = run(go())
    return agent, agent_run, result


def frame_document(markup: str) -> str:
    """The one sandboxed iframe's ``srcdoc``, unescaped; fails on anything else."""
    match = re.fullmatch(
        r'<div class="pysite-agent-view"><iframe sandbox="" title="[^"<>]*" '
        r'srcdoc="([^"<>]*)" style="[^"<>]*height:(\d+)px"></iframe></div>',
        markup,
    )
    assert match, markup[:300]
    assert int(match.group(2)) <= MAX_HEIGHT
    return html.unescape(match.group(1))


def assert_inert(document: str) -> None:
    """The framed document runs nothing and loads nothing: every value is escaped."""
    lowered = document.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<b>" not in lowered
    assert not re.search(r"<[^>]*\son\w+\s*=", lowered), "an event handler attribute"
    assert "src=" not in lowered.replace("src=x", "") and "href=" not in lowered


def test_run_result_shows_its_trace_in_a_sandboxed_frame() -> None:
    _, _, result = a_run()
    markup = result._repr_html_()
    assert not markup.startswith("<iframe")  # IPython warns about a bare <iframe> as HTML
    document = frame_document(markup)
    assert document.startswith("<!doctype html>")
    assert_inert(document)
    assert "pysite-agent run: answered" in document
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in document
    assert "done &amp; &lt;b&gt;dusted&lt;/b&gt;" in document
    assert "denied" in document and "untrusted" in document


def test_run_result_text_says_how_it_ended_and_lists_the_steps() -> None:
    _, _, result = a_run()
    text = repr(result)
    first, *lines = text.splitlines()
    assert first == "RunResult(status='answered', answer='done & <b>dusted</b>')"
    kinds = [line.split()[0] for line in lines[1:]]
    assert kinds == [s["kind"] for s in result.trace["steps"]]
    assert any(line.strip().startswith("decision      denied by visitor") for line in lines)
    assert "[untrusted]" in text


def test_a_failed_run_names_its_error() -> None:
    agent = sa.create_site_agent(
        model=sa.custom(lambda request: {"type": "nonsense"}), tools=Shop().tools()
    )
    _, result = run(ask(agent, "hi"))
    assert result.status == "error"
    assert result.error is not None
    head = repr(result).splitlines()[0]
    assert head.startswith(f"RunResult(status='error', answer=None, error='{result.error.code}'")


def test_events_show_one_row_each() -> None:
    _, agent_run, result = a_run()
    events = agent_run.events
    assert isinstance(events, list) and isinstance(events, sa.EventLog)
    assert events == list(events) and len(events) > 5
    document = frame_document(events._repr_html_())
    assert_inert(document)
    assert document.count("<tr") == len(events)
    assert '<tr class="denied"><td>confirm-result</td><td>denied by visitor</td></tr>' in document
    text = repr(events).splitlines()
    assert text[0] == f"{len(events)} events"
    assert [line.split()[0] for line in text[1:]] == [e.type for e in events]


def test_trace_view_takes_a_result_an_agent_a_run_a_dict_or_json() -> None:
    agent, agent_run, result = a_run()
    for value in (result, agent, agent_run, result.trace, json.dumps(result.trace)):
        view = sa.TraceView(value, title="t <1>")
        assert view.trace == result.trace
        document = frame_document(view._repr_html_())
        assert_inert(document)
        assert "<title>t &lt;1&gt;</title>" in document
        assert repr(view).splitlines()[0] == "trace v1 · model scripted · status answered"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"no": "steps"}, "not a trace"),
        ("{not json", "not JSON"),
        (42, "cannot show int as a trace"),
    ],
)
def test_trace_view_refuses_what_is_not_a_trace(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trace_of(value)


def test_trace_view_of_an_agent_with_no_run_yet_says_so() -> None:
    agent = sa.create_site_agent(model=ScriptedModel([]), tools=Shop().tools())
    with pytest.raises(ValueError, match="has not finished a run yet"):
        sa.TraceView(agent)


def test_a_long_trace_scrolls_in_a_frame_of_bounded_height() -> None:
    _, _, result = a_run()
    trace = dict(result.trace, steps=result.trace["steps"] * 40)
    frame_document(sa.TraceView(trace)._repr_html_())  # checks the height bound


def test_the_trace_view_shows_hidden_characters_as_markers_like_the_card() -> None:
    from pysite_agent.core.display import TraceView

    trace = {
        "version": 1,
        "model": "demo",
        "startedAt": "2026-12-02T00:00:00Z",
        "steps": [{"kind": "user", "at": 0, "text": "open evil\u202egnp.exe"}],
    }
    view = TraceView(trace)
    assert "\u202e" not in view.html() and "⟦U+202E⟧" in view.html()
    assert "\u202e" not in repr(view) and "⟦U+202E⟧" in repr(view)
    assert view.trace["steps"][0]["text"] == "open evil\u202egnp.exe"  # the data stays as it is
