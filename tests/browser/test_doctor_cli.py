"""``python -m pysite_agent doctor URL``: headless Chromium through Playwright, both WebMCPs.

This module starts Playwright itself (the command does), so it uses no ``page`` fixture.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysite_agent.__main__ import main
from pysite_agent.cli.doctor import examine

MISTAKES = "tests/browser/pages/doctor-mistakes.html"
SHOP = "examples/demo-shop.html"


@pytest.mark.parametrize("native", [False, True], ids=["shim", "native"])
def test_the_command_reports_the_mistakes(http_server: Any, native: bool) -> None:
    report = examine(http_server.url(MISTAKES), native=native, wait_ms=500)
    assert report["webmcp"] == ("native" if native else "shim")
    found = {(f["code"], f["tool"]) for f in report["findings"]}
    assert ("hint-not-boolean", "string_hint") in found
    assert ("schema-subset", "email_format") in found
    assert ("duplicate-name", "dup_tool") in found


def test_exit_status_and_text(http_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", http_server.url(MISTAKES), "--wait-ms", "300"]) == 1
    out = capsys.readouterr().out
    assert 'ERROR hint-not-boolean [string_hint]: readOnlyHint is "false"' in out
    assert "fix: Write readOnlyHint: false" in out
    assert main(["doctor", http_server.url(SHOP), "--wait-ms", "300"]) == 0
    out = capsys.readouterr().out
    assert "Tools (" in out and "add_to_cart" in out and "send_feedback" in out
    assert "ERROR" not in out


def test_a_page_that_cannot_load_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "http://127.0.0.1:9/nothing-here"]) == 2
    assert "doctor: could not load http://127.0.0.1:9/nothing-here" in capsys.readouterr().err


def test_a_page_that_answers_an_error_status_is_not_examined(
    http_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = http_server.url("examples/no-such-page.html")
    assert main(["doctor", url]) == 2
    assert f"doctor: could not load {url}: HTTP 404" in capsys.readouterr().err
    assert main(["doctor", "file:///etc/hostname"]) == 2
    assert "only http(s) pages are examined" in capsys.readouterr().err


def test_the_text_tells_no_annotations_from_hints_that_are_all_false() -> None:
    # Rule 5: a tool with no annotations at all always asks, even when pre-approved; one whose
    # hints are all false can be pre-approved. The text must not show both as "none".
    from pysite_agent.cli.doctor import render

    report = {
        "url": "http://127.0.0.1/",
        "webmcp": "shim",
        "tools": [
            {"name": "bare", "description": "d"},
            {"name": "writes", "description": "d", "annotations": {"readOnlyHint": False}},
            {"name": "reads", "description": "d", "annotations": {"readOnlyHint": True}},
        ],
        "findings": [],
    }
    lines = render(report).splitlines()
    hints = {lines[i].split(":")[0].strip(): lines[i + 1].strip() for i in (3, 5, 7)}
    assert hints["bare"] == "hints: no annotations"
    assert hints["writes"] == "hints: all false"
    assert hints["reads"] == "hints: readOnlyHint"


@pytest.mark.parametrize("value", ["-1", "60001", "99999999999", "1.5", "soon"])
def test_wait_ms_is_bounded(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "http://127.0.0.1:9/never-opened", "--wait-ms", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--wait-ms" in err and ("outside 0 to 60000" in err or "whole number" in err)
