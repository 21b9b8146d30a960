"""The eval's reports for CI: webmcp-evals' summary in the JSON, JUnit XML, the self-contained
HTML page with each case's trajectory, ``--min-pass`` and the exit statuses; bad input is one
clear line and a non-zero exit."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from generators import hostile_text
from hypothesis import given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.__main__ import main
from pysite_agent.agent.eval_export import to_html, to_junit
from pysite_agent.core.types import ModelRequest

ROOT = Path(__file__).resolve().parents[1]
DEMO_SET = ROOT / "examples" / "demo-shop-evals.json"


def failing_fn(request: ModelRequest) -> dict[str, Any]:
    raise sa.SiteAgentError("model-unavailable", "no model here")


def test_json_junit_and_html_from_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    paths = {k: tmp_path / f"report.{k}" for k in ("json", "xml", "html")}
    code = main(
        [
            "eval",
            str(DEMO_SET),
            "--json",
            str(paths["json"]),
            "--junit",
            str(paths["xml"]),
            "--html",
            str(paths["html"]),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "tests 10, pass 7, fail 3, error 0" in printed  # demo rules: keyword matching
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert report["summary"] == {"tests": 10, "pass": 7, "fail": 3, "error": 0}
    failed = [c["name"] for c in report["cases"] if c["outcome"] == "fail"]
    assert failed == [
        "Add three sticker packs",
        "Search by colour",
        "After a search, add the one found",
    ]

    suites = ET.fromstring(paths["xml"].read_text(encoding="utf-8"))
    assert (suites.tag, suites.get("tests"), suites.get("failures"), suites.get("errors")) == (
        "testsuites",
        "10",
        "3",
        "0",
    )
    cases = suites.findall("./testsuite/testcase")
    assert len(cases) == 10
    failures = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert sorted(failures) == sorted(failed)
    sticker = failures["Add three sticker packs"]
    assert sticker is not None
    assert sticker.get("message") == "expected add_to_cart; called no tool"

    page = paths["html"].read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert "src=" not in page and "href=" not in page  # self-contained: it loads nothing
    assert page.count("<details>") == 10 and page.count('class="fail">FAIL') == 3
    assert "call <code>checkout</code>" in page  # the trajectory, call by call
    assert "expected add_to_cart; called no tool" in page


@pytest.mark.parametrize(("minimum", "status"), [("0.7", 0), ("0.71", 1), ("0", 0)])
def test_min_pass_gates_on_the_share_of_cases_that_pass(
    minimum: str, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(DEMO_SET), "--min-pass", minimum]) == status
    err = capsys.readouterr().err
    assert ("7 of 10 cases pass (70%), below 71%" in err) is (status == 1)


def test_a_model_error_is_an_error_outcome_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "junit.xml"
    custom = "test_eval_reports:failing_fn"
    assert main(["eval", str(DEMO_SET), "--custom", custom, "--junit", str(junit)]) == 1
    assert "10 of 10 cases failed with an error" in capsys.readouterr().err
    suites = ET.fromstring(junit.read_text(encoding="utf-8"))
    assert suites.get("errors") == "10" and suites.get("failures") == "0"
    error = suites.find("./testsuite/testcase/error")
    assert error is not None and error.get("message") == "model-unavailable: no model here"


def test_the_html_escapes_what_the_cases_and_the_model_say() -> None:
    report = {
        "model": "<b>m</b>",
        "summary": {"tests": 1, "pass": 0, "fail": 1, "error": 0},
        "cases": [
            {
                "name": "<script>alert(1)</script>",
                "outcome": "fail",
                "steps": [],
                "trajectory": [
                    {"type": "tool", "name": "x<y", "arguments": {"q": "</pre>"}, "result": "&"},
                    {"type": "answer", "text": "<img src=x>"},
                ],
            }
        ],
    }
    page = to_html(report)
    assert "<script" not in page and "<img" not in page and "<b>m" not in page
    assert "&lt;script&gt;" in page and "x&lt;y" in page and "&lt;/pre&gt;" in page
    xml = to_junit(report)
    parsed = ET.fromstring(xml)
    assert parsed.find("./testsuite/testcase").get("name") == "<script>alert(1)</script>"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (42, "a case set is an object {tools, cases} or a list of cases"),
        ({"evals": [], "tools": []}, "unknown key 'evals' in the case set"),
        (
            [{"name": "no messages", "expectedCall": None}],
            "case 'no messages': cases[0]: a case needs 'messages'",
        ),
        (
            [
                {
                    "name": "no call",
                    "messages": [{"role": "user", "type": "message", "content": "hi"}],
                }
            ],
            "case 'no call': cases[0]: a case needs 'expectedCall'",
        ),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(
    data: Any, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "evals.json"
    cases.write_text(json.dumps(data), encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"tools": [{"name": "t", "description": "d"}]}), encoding="utf-8")
    assert main(["eval", str(cases), "--tools", str(schema)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and words in lines[0], captured.err


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--min-pass", "1.5"], "--min-pass wants a fraction from 0 to 1"),
        (["--max-steps", "0"], "--max-steps wants a whole number from 1 to 50"),
        (["--junit", "/no/such/folder/j.xml"], "--junit /no/such/folder/j.xml: the folder"),
        (["--html", "/no/such/folder/r.html"], "--html /no/such/folder/r.html: the folder"),
    ],
)
def test_bad_options_are_refused_before_running(
    option: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(DEMO_SET), *option]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (["--smoke"], "--smoke runs against a live page: give --url too"),
        (["--url", "http://127.0.0.1:9/", "--smoke", "--custom", "m:f"], "--smoke uses no model"),
        (["--url", "http://127.0.0.1:9/", "--tools", "t.json"], "--url uses the page's own tools"),
        (["--url", "file:///etc/hostname"], "--url wants an http(s) page"),
        (["--url", "http://127.0.0.1:9/", "--wait-ms", "-1"], "--wait-ms wants a whole number"),
    ],
)
def test_live_options_are_refused_before_a_browser_starts(
    option: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(DEMO_SET), *option]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and words in err, err


# The terminal table: one line per case, columns aligned in terminal columns, whatever the names.

TABLE_NAMES = [
    "買い物かごに二つ",  # wide East Asian characters: two columns each
    "👩‍💻 add a mug",  # one emoji of three code points
    "cafe\u0301 latte",  # a combining accent: no column of its own
    "evil\u202egnp.exe",  # a bidi override would reverse the rest of the line
    "zero\u200bwidth",
    "lone \ud800 surrogate",  # cannot be written to a UTF-8 stream as it is
    "line\nbreak\tand tab",
    "長" * 60,  # cut to 40 columns: between whole characters
    "x" * 38 + "\u202e" * 3,  # cut where markers are: never inside one
]


def _table_of(names: list[str], tmp_path: Path) -> str:
    demo = json.loads(DEMO_SET.read_text(encoding="utf-8"))
    cases = [{**demo["cases"][i % 3], "name": name} for i, name in enumerate(names)]
    path = tmp_path / "set.json"
    path.write_text(json.dumps({**demo, "cases": cases}), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["eval", str(path)])
    printed = out.getvalue()
    printed.encode("utf-8")  # strict: no lone surrogate reaches the terminal
    return printed


def _assert_aligned(printed: str, count: int) -> None:
    import wcwidth

    from pysite_agent.core.display import has_hidden

    lines = printed.splitlines()
    rule = lines[1]
    starts = [m.start() for m in re.finditer(r"-+", rule)]  # the rule is ASCII: columns
    rows = lines[2 : 2 + count]
    assert len(rows) == count and lines[2 + count] == rule, printed
    for row in rows:
        assert not has_hidden(row), row
        assert wcwidth.width(row.split("  ")[0]) <= 40, row
        for start in starts[1:]:
            cell = wcwidth.clip(row, start, start + 4)
            previous = wcwidth.clip(row, start - 2, start)
            assert previous == "  " and cell.strip() and cell[0] != " ", (row, start, cell)
        assert wcwidth.clip(row, starts[1], starts[1] + 4) in ("PASS", "FAIL"), row


def test_the_table_aligns_wide_combining_and_hidden_characters(tmp_path: Path) -> None:
    printed = _table_of(TABLE_NAMES, tmp_path)
    _assert_aligned(printed, len(TABLE_NAMES))
    assert "evil⟦U+202E⟧gnp.exe" in printed and "zero⟦U+200B⟧width" in printed
    assert "line break and tab" in printed and "lone \ufffd surrogate" in printed
    assert "長" * 19 + "…" in printed and "長" * 20 not in printed  # 38 columns and "…"
    assert "x" * 38 + "…" in printed  # the marker that does not fit is left out whole


@settings(max_examples=15, deadline=None)
@given(names=st.lists(hostile_text(max_size=30), min_size=1, max_size=6))
def test_the_table_stays_aligned_for_any_names(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _assert_aligned(_table_of(names, Path(tmp)), len(names))
