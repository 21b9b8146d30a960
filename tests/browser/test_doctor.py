"""The page doctor in the page: ``element.agent.doctor()`` (both lanes).

On a page with each mistake it knows (``pages/doctor-mistakes.html``) and on the demo shop.
The command line (``python -m pysite_agent doctor URL``) is in ``test_doctor_cli.py``.
"""

from __future__ import annotations

from typing import Any

MISTAKES = "tests/browser/pages/doctor-mistakes.html"
SHOP = "examples/demo-shop.html"


def doctor(page: Any) -> dict[str, Any]:
    report: dict[str, Any] = page.evaluate(
        "() => document.querySelector('site-agent').agent.doctor()"
    )
    return report


def codes(report: dict[str, Any]) -> set[tuple[str, str | None]]:
    return {(f["code"], f["tool"]) for f in report["findings"]}


def test_each_mistake_is_found_with_why_and_how_to_fix(
    page: Any, http_server: Any, lane: str
) -> None:
    page.goto(http_server.url(MISTAKES))
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    report = doctor(page)
    found = codes(report)
    expected = {
        ("hint-not-boolean", "string_hint"),
        ("hint-unknown", "unknown_hint"),
        ("hint-misplaced", "misplaced_hint"),
        ("no-description", "blank_description"),
        ("no-description", "silent_form"),
        ("short-description", "short_description"),
        ("no-annotations", "no_hints"),
        ("name-renamed", "cart.add"),
        ("duplicate-name", "dup_tool"),
        ("schema-root", "string_root"),
        ("schema-subset", "email_format"),
        ("schema-gemini", "gemini_anyof"),
    }
    assert expected <= found, expected - found
    string_hint = next(f for f in report["findings"] if f["code"] == "hint-not-boolean")
    assert "becomes true" in string_hint["message"]
    assert "without asking" in string_hint["message"]  # why it matters
    assert string_hint["fix"] == "Write readOnlyHint: false (a boolean, without quotes)."
    unknown = [f for f in report["findings"] if f["code"] == "hint-unknown"]
    fixes = {f["message"].split("'")[1]: f["fix"] for f in unknown}
    assert fixes["readonlyHint"] == "Use readOnlyHint."
    assert "consequentialHint" in fixes["destructiveHint"]
    assert all(f["message"] and f["fix"] for f in report["findings"])
    assert report["findings"][0]["severity"] == "error"  # errors first
    # Nothing wrong is said about the tools that are right.
    assert not any(tool == "early_tool" and code != "registration-unseen" for code, tool in found)
    if lane == "native":
        assert report["webmcp"] == "native"
        # Chromium turned the string into true: only the recorded call shows the mistake.
        listed = {t["name"]: t for t in report["tools"]}
        assert listed["string_hint"]["annotations"]["readOnlyHint"] is True
        assert ("registration-unseen", "early_tool") in found
    else:
        assert report["webmcp"] == "shim"
        # The shim takes `format` as Chromium does: the tool is listed, flagged schema-subset.
        assert "email_format" in {t["name"] for t in report["tools"]}
        assert ("registration-failed", "email_format") not in found


def test_the_demo_shop_has_no_errors(page: Any, http_server: Any) -> None:
    page.goto(http_server.url(SHOP))
    page.wait_for_selector("html[data-ready=true]")
    report = doctor(page)
    names = sorted(t["name"] for t in report["tools"])
    assert names == [
        "add_to_cart",
        "checkout",
        "get_reviews",
        "open_product",
        "search_products",
        "send_feedback",
    ]
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    assert report["registrations"] is not None and len(report["registrations"]) == 5
