"""The eval report for CI and for people: JUnit XML and a self-contained HTML page.

Both read the report's JSON (:meth:`~pysite_agent.agent.eval_report.EvalReport.to_json`, or a
smoke run's, :func:`smoke_report`), so a report saved with ``--json`` can be turned into
either later. JUnit XML follows the common schema CI servers read (``testsuites`` /
``testsuite`` / ``testcase`` with ``failure`` or ``error``; times in seconds): one test case
per eval case, ``failure`` for a ``fail`` verdict and ``error`` for an ``error``. The HTML page
has no script and loads nothing: per case the verdict, the scores and the trajectory (each
call, its arguments and result, then the answer).
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["case_reason", "smoke_report", "smoke_table", "to_html", "to_junit"]


def _names(steps: Sequence[Mapping[str, Any]]) -> str:
    names = [str((s.get("expected") or {}).get("functionName", "(answer)")) for s in steps]
    return ", ".join(names) or "(answer)"


def case_reason(case: Mapping[str, Any]) -> str:
    """One line on why a case did not pass (empty for a pass)."""
    if case.get("outcome") == "pass":
        return ""
    if case.get("problem"):
        return str(case["problem"])
    error = case.get("error")
    if isinstance(error, Mapping):
        return f"{error.get('code')}: {error.get('message')}"
    called = [t["name"] for t in case.get("trajectory", []) if t.get("type") == "tool"]
    line = f"expected {_names(case.get('steps', []))}; called {', '.join(called) or 'no tool'}"
    if case.get("stopped") == "max-steps":
        line += " (stopped at the step limit)"
    return line


def smoke_report(url: str, cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A smoke run's report: ``{version: 1, model: "smoke (URL)", summary, cases}`` from
    ``cases`` ``[{name, outcome, durationMs, trajectory, problem?}]`` (the shape
    :func:`to_junit` and :func:`to_html` read; ``outcome`` ``pass``, ``fail``, ``error`` or
    ``skipped``; ``problem`` says why a case did not pass)."""
    outcomes = [c["outcome"] for c in cases]
    return {
        "version": 1,
        "model": f"smoke ({url})",
        "summary": {
            "tests": len(outcomes),
            "pass": outcomes.count("pass"),
            "fail": outcomes.count("fail"),
            "error": outcomes.count("error"),
            "skipped": outcomes.count("skipped"),
        },
        "cases": [dict(c) for c in cases],
    }


def smoke_table(report: Mapping[str, Any]) -> str:
    """A smoke report as text: one line per case, then the summary."""
    lines = []
    for case in report.get("cases", []):
        calls = len(case.get("trajectory", []))
        line = f"{str(case.get('outcome')).upper():5}  {case.get('name')}  ({calls} calls)"
        reason = case_reason(case)
        lines.append(f"{line}: {reason}" if reason else line)
    s = report.get("summary", {})
    lines.append(
        f"tests {s.get('tests', 0)}, pass {s.get('pass', 0)}, fail {s.get('fail', 0)}, "
        f"error {s.get('error', 0)}" + (f", skipped {s['skipped']}" if s.get("skipped") else "")
    )
    lines.append(f"model: {report.get('model')}")
    return "\n".join(lines)


def to_junit(report: Mapping[str, Any], *, suite: str = "pysite-agent eval") -> str:
    """JUnit XML for a report's JSON (UTF-8 text with an XML declaration)."""
    summary = report.get("summary", {})
    seconds = sum(float(c.get("durationMs", 0.0)) for c in report.get("cases", [])) / 1000
    root = ET.Element(
        "testsuites",
        name=suite,
        tests=str(summary.get("tests", 0)),
        failures=str(summary.get("fail", 0)),
        errors=str(summary.get("error", 0)),
        time=f"{seconds:.3f}",
    )
    node = ET.SubElement(
        root,
        "testsuite",
        name=str(report.get("model", "model")),
        tests=str(summary.get("tests", 0)),
        failures=str(summary.get("fail", 0)),
        errors=str(summary.get("error", 0)),
        skipped=str(summary.get("skipped", 0)),
        time=f"{seconds:.3f}",
    )
    for case in report.get("cases", []):
        item = ET.SubElement(
            node,
            "testcase",
            classname=suite,
            name=str(case.get("name")),
            time=f"{float(case.get('durationMs', 0.0)) / 1000:.3f}",
        )
        trajectory = json.dumps(case.get("trajectory", []), indent=2, ensure_ascii=False)
        if case.get("outcome") == "fail":
            ET.SubElement(item, "failure", message=case_reason(case), type="fail").text = trajectory
        elif case.get("outcome") == "error":
            ET.SubElement(item, "error", message=case_reason(case), type="error").text = trajectory
        elif case.get("outcome") == "skipped":
            ET.SubElement(item, "skipped", message=case_reason(case))
        ET.SubElement(item, "system-out").text = trajectory
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;
color:#1b1b1b;background:#fff}
h1{font-size:1.4rem}table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
.pass{color:#0a6b2c}.fail{color:#a4000f}.error{color:#7a4b00}
details{border:1px solid #ccc;border-radius:6px;margin:.5rem 0;padding:.4rem .8rem}
summary{cursor:pointer}pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f5;
padding:.4rem;margin:.2rem 0}ol{padding-left:1.4rem}
"""


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def _entry(entry: Mapping[str, Any]) -> str:
    if entry.get("type") == "tool":
        return (
            f"<li>call <code>{html.escape(str(entry.get('name')))}</code>"
            f" with {_pre(entry.get('arguments'))}returned {_pre(entry.get('result'))}</li>"
        )
    return f"<li>answer {_pre(str(entry.get('text', '')))}</li>"


def _case(case: Mapping[str, Any]) -> str:
    outcome = str(case.get("outcome"))
    name = html.escape(str(case.get("name")))
    parts = [f'<details><summary><b class="{outcome}">{outcome.upper()}</b> {name}</summary>']
    reason = case_reason(case)
    if reason:
        parts.append(f"<p>{html.escape(reason)}</p>")
    if "toolChoice" in case:
        parts.append(
            "<p>tool choice: {}; arguments exact: {}; per key: {:.0%}</p>".format(
                "yes" if case.get("toolChoice") else "no",
                "yes" if case.get("argumentsExact") else "no",
                float(case.get("argumentKeys", 0.0)),
            )
        )
    expected = [s.get("expected") for s in case.get("steps", [])]
    if expected:
        parts.append(f"<p>expected</p>{_pre(expected)}")
    entries = "".join(_entry(e) for e in case.get("trajectory", []))
    parts.append(f"<p>trajectory</p><ol>{entries or '<li>(nothing)</li>'}</ol></details>")
    return "".join(parts)


def to_html(report: Mapping[str, Any], *, title: str = "Eval report") -> str:
    """A self-contained HTML page for a report's JSON (no script, nothing loaded)."""
    summary = report.get("summary", {})
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(summary.get(k, 0)))}</td></tr>"
        for k in ("tests", "pass", "fail", "error")
    )
    total = report.get("total")
    if isinstance(total, Mapping):
        rows += "".join(
            f"<tr><th>{k}</th><td>{float(total.get(k, 0.0)):.0%}</td></tr>"
            for k in ("toolChoice", "argumentsExact", "argumentKeys")
        )
    cases = "".join(_case(c) for c in report.get("cases", []))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>model: {html.escape(str(report.get('model')))}</p>"
        f"<table>{rows}</table>{cases}</body></html>\n"
    )
