"""``eval CASES --url`` and ``--smoke`` against the demo shop in headless Chromium, both WebMCP
lanes (the shim, and Chromium's own with ``--enable-features=WebMCP``).

The command runs with the module's browser (``args.browser``; the launch itself is the
doctor's, tested there), so each lane starts one Chromium. The eval's own loop runs in a worker
thread while Playwright's sync API stays in this one (see tests/browser/conftest.py).
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pysite_agent.cli import eval as eval_cli
from pysite_agent.cli.eval_live import LivePage, run_live, sample_value
from pysite_agent.core.types import ModelRequest

ROOT = Path(__file__).resolve().parents[2]
DEMO_SET = ROOT / "examples" / "demo-shop-evals.json"
SHOP = "examples/demo-shop.html"


def cli(browser: Any, lane: str, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    eval_cli.add_command(parser.add_subparsers())
    args = parser.parse_args(["eval", *argv, *(["--native"] if lane == "native" else [])])
    args.browser = browser
    status: int = args.handler(args)
    return status


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "type": "message", "content": text}]


class Shopper:
    """Adds two classic mugs, then checks out, then answers with what checkout said."""

    name = "shopper"

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        calls = [m for m in request.messages if m["role"] == "tool"]
        if "pay" in request.messages[0]["content"]:
            if not calls:
                return {"type": "tool", "name": "checkout", "arguments": {}}
        elif len(calls) == 0:
            return {
                "type": "tool",
                "name": "add_to_cart",
                "arguments": {"product": "mug-classic", "quantity": 2},
            }
        elif len(calls) == 1:
            return {"type": "tool", "name": "checkout", "arguments": {}}
        return {"type": "answer", "text": calls[-1]["content"]}


def test_a_live_eval_runs_the_pages_own_tools(browser: Any, http_server: Any, lane: str) -> None:
    cases = [
        {
            "name": "buy two mugs",
            "messages": user("buy two classic mugs"),
            "expectedCall": [
                {
                    "functionName": "add_to_cart",
                    "arguments": {"product": {"$pattern": "(?i)mug"}, "quantity": 2},
                    "result": {"$contains": "Added 2"},
                },
                {"functionName": "checkout", "result": {"$pattern": "^Order #1001 placed"}},
            ],
        },
        {  # a fresh page: the cart of the case before is gone
            "name": "pay at once",
            "messages": user("pay"),
            "expectedCall": [{"functionName": "checkout", "result": {"$contains": "Order #"}}],
        },
    ]
    report = run_live(browser, http_server.url(SHOP), cases, Shopper()).to_json()
    first, second = report["cases"]
    assert first["outcome"] == "pass", first
    assert "Added 2 × Classic mug" in first["trajectory"][0]["result"]  # the real tool ran
    assert second["outcome"] == "fail"
    assert second["trajectory"][0]["result"] == "The cart is empty; there is nothing to order."
    assert report["summary"] == {"tests": 2, "pass": 1, "fail": 1, "error": 0}


def test_the_command_runs_the_demo_set_on_the_page(
    browser: Any, http_server: Any, lane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    url = http_server.url(SHOP)
    status = cli(
        browser, lane, str(DEMO_SET), "--url", url, "--json", str(out), "--junit", str(junit)
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert f"model: demo rules (not AI) on {url}" in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["summary"] == {"tests": 10, "pass": 7, "fail": 3, "error": 0}
    paid = next(c for c in report["cases"] if c["name"] == "Add, then check out")
    assert paid["trajectory"][1]["result"].startswith("Order #1001 placed")
    assert ET.fromstring(junit.read_text(encoding="utf-8")).get("failures") == "3"
    assert cli(browser, lane, str(DEMO_SET), "--url", url, "--min-pass", "0.8") == 1


def test_smoke_runs_the_expected_calls_without_a_model(
    browser: Any, http_server: Any, lane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = http_server.url(SHOP)
    html = tmp_path / "smoke.html"
    assert cli(browser, lane, str(DEMO_SET), "--url", url, "--smoke", "--html", str(html)) == 0
    printed = capsys.readouterr().out
    assert "tests 10, pass 9, fail 0, error 0, skipped 1" in printed
    assert "SKIPPED  Greeting needs no tool" in printed
    assert "call <code>checkout</code>" in html.read_text(encoding="utf-8")

    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps(
            [
                {
                    "name": "red things",
                    "messages": user("red"),
                    "expectedCall": [
                        {
                            "functionName": "search_products",
                            "arguments": {"query": {"$pattern": "(?i)^red$"}},
                            "result": {"$contains": "Red enamel mug"},
                        }
                    ],
                },
                {
                    "name": "a product the shop lacks",
                    "messages": user("add a kettle"),
                    "expectedCall": [
                        {
                            "functionName": "add_to_cart",
                            "arguments": {"product": "kettle", "quantity": {"$gte": 1}},
                            "result": {"$contains": "Added"},
                        },
                        {"functionName": "checkout", "arguments": {}},
                    ],
                },
                {
                    "name": "pay an empty cart",
                    "messages": user("pay"),
                    "expectedCall": [
                        {
                            "functionName": "checkout",
                            "arguments": {},
                            "result": {"$contains": "Order #"},
                        }
                    ],
                },
            ]
        ),
        encoding="utf-8",
    )
    report = tmp_path / "smoke.json"
    assert cli(browser, lane, str(broken), "--url", url, "--smoke", "--json", str(report)) == 1
    captured = capsys.readouterr()
    assert "2 of 3 smoke cases did not pass" in captured.err
    data = json.loads(report.read_text(encoding="utf-8"))
    ok, lacking, empty = data["cases"]
    assert empty["outcome"] == "fail"
    assert (
        empty["problem"] == 'step 1 (checkout): the result does not match {"$contains": "Order #"}'
    )
    assert ok["outcome"] == "pass" and ok["trajectory"][0]["arguments"] == {"query": "red"}
    assert lacking["outcome"] == "fail" and len(lacking["trajectory"]) == 1  # it stopped there
    # The shop's tool answers an MCP error result: the smoke run reads it as a failure.
    assert lacking["problem"] == (
        'step 1 (add_to_cart): the tool reported a failure: No product matches "kettle".'
    )


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("examples/no-such-page.html", "could not load {url}: HTTP 404"),
        ("tests/browser/pages/webmcp-frame.html", "{url} registered no WebMCP tools in 300 ms"),
    ],
)
def test_a_page_that_does_not_load_or_has_no_tools_is_one_line(
    browser: Any,
    http_server: Any,
    lane: str,
    path: str,
    words: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = http_server.url(path)
    for mode in ([], ["--smoke"]):
        assert cli(browser, lane, str(DEMO_SET), "--url", url, "--wait-ms", "300", *mode) == 2
        err = capsys.readouterr().err
        assert err.splitlines() == [f"eval: {words.format(url=url)}"], err


def test_a_tool_the_page_lacks_is_an_error_when_its_step_comes(
    browser: Any, http_server: Any, lane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Tools may appear as the page goes (a set is not refused for naming one the first page
    # lacks); the smoke run waits 5 s for it, then the case is an error.
    cases = tmp_path / "cases.json"
    expected = [{"functionName": "refund", "arguments": {}}]
    cases.write_text(
        json.dumps([{"name": "refund", "messages": user("refund"), "expectedCall": expected}]),
        encoding="utf-8",
    )
    assert cli(browser, lane, str(cases), "--url", http_server.url(SHOP), "--smoke") == 1
    out = capsys.readouterr().out
    assert 'ERROR  refund  (1 calls): step 1 (refund): tool "refund" is not on the page' in out


def test_a_form_tool_that_waits_for_the_visitor_is_pending(
    browser: Any, http_server: Any, lane: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shop's feedback form has no toolautosubmit: the visitor still clicks Send.
    expected = [
        {
            "functionName": "send_feedback",
            "arguments": {"message": "Lovely mugs"},
            "result": "pending form submission",
        }
    ]
    cases = tmp_path / "cases.json"
    cases.write_text(
        json.dumps(
            [{"name": "feedback", "messages": user("say thanks"), "expectedCall": expected}]
        ),
        encoding="utf-8",
    )
    assert cli(browser, lane, str(cases), "--url", http_server.url(SHOP), "--smoke") == 0
    assert "PASS   feedback  (1 calls)" in capsys.readouterr().out


def test_the_page_lists_its_tools_in_either_lane(browser: Any, http_server: Any, lane: str) -> None:
    page = LivePage(browser, http_server.url(SHOP))
    try:
        names = {t["name"] for t in page.open()}
        assert {"search_products", "add_to_cart", "checkout", "get_reviews"} <= names
        assert page.call("search_products", {"query": "tote"})["result"].startswith("Linen tote")
        assert page.call("no_such_tool", {}) == {
            "ok": False,
            "missing": True,
            "error": 'tool "no_such_tool" is not on the page',
        }
    finally:
        page.close()


def test_sample_values_satisfy_their_constraints() -> None:
    assert sample_value("name", {"$pattern": "Bob.*Smith"}) == "Bob Smith"
    assert sample_value("q", {"$pattern": "(?i)^tokyo$"}) == "tokyo"
    assert sample_value("n", {"$gt": 1, "$lt": 3}) == 2
    assert sample_value("n", {"$gte": 4}) == 4
    assert len(sample_value("date", {"$type": "string"})) == 10  # tomorrow, ISO
    assert sample_value("x", [{"a": {"$contains": "tea"}}]) == [{"a": "tea"}]
    assert sample_value("item", {"$pattern": "[Jj]acket"}) == "Jacket"
    assert sample_value("code", {"$pattern": "^[A-Z]{3}-\\d{4}$"}) == "AAA-1111"
    with pytest.raises(ValueError, match="no sample value satisfies"):
        sample_value("code", {"$pattern": "^a$", "$contains": "b"})
