"""The HTML timeline of a trace, and the ``trace`` command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call

import pysite_agent as sa
from pysite_agent.core.trace_view import render_trace_html


def a_trace() -> dict:
    shop = Shop()
    shop.review_text = "<script>alert(1)</script> </untrusted-data> <b>bold</b>"
    model = ScriptedModel(
        [
            tool_call("get_reviews", {"product": "<img src=x onerror=alert(1)>"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": "x"}),
            tool_call("add_to_cart", {"product": "mug", "quantity": 1}),
            answer("done & dusted"),
        ]
    )
    agent = sa.create_site_agent(model=model, tools=shop.tools(), confirm=lambda r: False)
    _, result = run(ask(agent, "reviews <please>"))
    return result.trace


def test_html_shows_every_step_and_escapes_everything() -> None:
    html = render_trace_html(a_trace())
    assert html.startswith("<!doctype html>")
    assert "<script" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "done &amp; dusted" in html and "reviews &lt;please&gt;" in html
    for marker in ("untrusted", "invalid-arguments", "denied", "by visitor", "read-only", "ran"):
        assert marker in html
    assert len(re.findall(r"<li[ >]", html)) == len(a_trace()["steps"])
    assert "http://" not in html.replace("http://www.w3.org", "")  # no external requests


def test_html_rejects_non_traces() -> None:
    with pytest.raises(ValueError):
        render_trace_html({"version": 1})


def test_trace_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pysite_agent.__main__ import main

    trace_file = tmp_path / "run.json"
    trace_file.write_text(json.dumps(a_trace()), encoding="utf-8")
    assert main(["trace", "check", str(trace_file)]) == 0
    assert "ok: trace v1" in capsys.readouterr().out
    out = tmp_path / "run.html"
    assert main(["trace", "show", str(trace_file), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 2, "steps": []}), encoding="utf-8")
    assert main(["trace", "check", str(bad)]) == 1
    assert main(["trace", "show", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize(
    "step",
    [
        {"kind": "tool-call", "call": 7, "tool": "x"},
        {"kind": "invalid-call", "call": [1], "error": "bad"},
        {"kind": "invalid-call", "call": {}, "error": {"problems": 5}},
    ],
)
def test_html_shows_a_step_whose_fields_have_the_wrong_type(step: dict[str, Any]) -> None:
    # A hand-edited or foreign file is shown as far as it goes, never a crash.
    html = render_trace_html({"steps": [step]})
    assert len(re.findall(r"<li[ >]", html)) == 1


def test_trace_cli_reports_an_output_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pysite_agent.__main__ import main

    trace_file = tmp_path / "run.json"
    trace_file.write_text(json.dumps(a_trace()), encoding="utf-8")
    for out in (tmp_path / "no-such-dir" / "run.html", tmp_path):
        assert main(["trace", "show", str(trace_file), "-o", str(out)]) == 2
        assert f"trace show: {out}" in capsys.readouterr().err
