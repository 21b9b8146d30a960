"""The eval's reports for CI: webmcp-evals' summary in the JSON, JUnit XML, the self-contained
HTML page with each case's trajectory, ``--min-pass`` and the exit statuses; bad input is one
clear line and a non-zero exit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

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
