"""The command line's file boundaries (docs/boundaries.md): ``trace show``/``trace check`` and
``eval`` read JSON strictly (nesting bounded, no ``NaN``) with one clear line and exit 2, write
every report as well-formed text without ``NaN``, and print invisible and text-direction
characters as ``⟦U+202E⟧`` markers, the card's rule (``core.display.reveal``)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from generators import BIDI_CONTROLS, INVISIBLES, LONE_SURROGATES, hostile_text, nested_json_text
from hypothesis import given, settings
from test_core_trace_view import a_trace

from pysite_agent.__main__ import main
from pysite_agent.cli.trace import MAX_TRACE_DEPTH, shown
from pysite_agent.core.text import REPLACEMENT

ROOT = Path(__file__).resolve().parents[1]
DEMO_SET = ROOT / "examples" / "demo-shop-evals.json"


def _demo_set() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DEMO_SET.read_text(encoding="utf-8"))
    return data


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it (a real process, its real stdout encoding)."""
    return subprocess.run(
        [sys.executable, "-m", "pysite_agent", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("action", ["check", "show"])
def test_a_deep_trace_is_one_clear_line_and_exit_2(tmp_path: Path, action: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 100_000, encoding="utf-8")
    done = _cli("trace", action, str(deep))
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == [
        f"trace {action}: {deep} is nested too deeply to read (more than {MAX_TRACE_DEPTH} levels)"
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""
    deep.write_text(nested_json_text(MAX_TRACE_DEPTH + 1), encoding="utf-8")  # well formed
    assert main(["trace", action, str(deep)]) == 2


def test_a_trace_as_deep_as_allowed_is_read(tmp_path: Path, capsys: Any) -> None:
    trace = a_trace()
    nested = "1"
    for _ in range(MAX_TRACE_DEPTH - 4):  # root, steps, the step, reply: 4 levels above
        nested = "[" + nested + "]"
    text = json.dumps(trace)
    text = text.replace('"version": 1', f'"deep": {nested}, "version": 1', 1)
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    assert main(["trace", "show", str(path), "-o", str(tmp_path / "run.html")]) == 0
    assert main(["trace", "check", str(path)]) in (0, 1)  # a verdict, not a crash
    capsys.readouterr()


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_trace_check_refuses_nan(tmp_path: Path, capsys: Any, constant: str) -> None:
    trace = a_trace()
    trace["steps"][1]["durationMs"] = 12.5
    path = tmp_path / "run.json"
    path.write_text(json.dumps(trace).replace("12.5", constant, 1), encoding="utf-8")
    assert main(["trace", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert f"is not JSON: {constant} is not a JSON number" in err, err
    assert main(["trace", "show", str(path)]) == 2


def test_trace_show_reveals_bidi_and_invisible_characters(tmp_path: Path) -> None:
    trace = a_trace()
    trace["steps"][0]["text"] = "open evil\u202egnp.exe\u200b now"
    trace["steps"][-1]["text"] = "done \u2066x\u2069 \ufeff"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    out = tmp_path / "run.html"
    assert main(["trace", "show", str(path), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "open evil⟦U+202E⟧gnp.exe⟦U+200B⟧ now" in html
    assert "done ⟦U+2066⟧x⟦U+2069⟧ ⟦U+FEFF⟧" in html
    for char in BIDI_CONTROLS + INVISIBLES:
        assert char not in html, hex(ord(char[0]))
    printed = _cli("trace", "show", str(path))
    assert printed.returncode == 0 and "evil⟦U+202E⟧gnp.exe" in printed.stdout


@settings(max_examples=100, deadline=None)
@given(hostile_text())
def test_shown_text_encodes_and_hides_nothing(text: str) -> None:
    from pysite_agent.core.display import has_hidden

    out = shown(text)
    out.encode("utf-8")  # never raises
    assert not has_hidden(out)


def _write_set(tmp_path: Path, name: str) -> Path:
    data = _demo_set()
    data["cases"] = data["cases"][:2]
    data["cases"][0]["name"] = name
    path = tmp_path / "evals.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # "\ud800" as an escape: valid JSON
    return path


def test_eval_refuses_nan_in_the_cases_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    data = _demo_set()
    data["cases"][0]["expectedCall"][0]["arguments"]["quantity"] = 2.5
    cases = tmp_path / "evals.json"
    cases.write_text(json.dumps(data).replace("2.5", "NaN", 1), encoding="utf-8")
    report = tmp_path / "h.json"
    assert main(["eval", str(cases), "--json", str(report)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "is not JSON: NaN is not a JSON number" in err, err
    assert not report.exists()
    tools = tmp_path / "tools.json"
    tools.write_text('{"tools": [{"name": "a", "x": Infinity}]}', encoding="utf-8")
    assert main(["eval", str(DEMO_SET), "--tools", str(tools)]) == 2
    assert "--tools" in capsys.readouterr().err


def test_the_json_report_never_holds_nan(tmp_path: Path, capsys: Any) -> None:
    from pysite_agent.cli.eval import write_reports

    class Args:
        json = str(tmp_path / "h.json")
        junit = html = None
        cases = "evals.json"

    assert not write_reports(Args(), {"cases": [], "score": float("nan")}, "table")  # type: ignore[arg-type]
    assert "cannot be written as JSON" in capsys.readouterr().err
    assert not (tmp_path / "h.json").exists()


@pytest.mark.parametrize("surrogate", LONE_SURROGATES[:3])
def test_a_lone_surrogate_in_a_case_name_is_made_safe_in_every_report(
    tmp_path: Path, surrogate: str
) -> None:
    cases = _write_set(tmp_path, f"cut {surrogate} name")
    paths = {k: tmp_path / f"report.{k}" for k in ("json", "xml", "html")}
    done = _cli(
        "eval",
        str(cases),
        "--json",
        str(paths["json"]),
        "--junit",
        str(paths["xml"]),
        "--html",
        str(paths["html"]),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    safe = f"cut {REPLACEMENT} name"
    assert safe in done.stdout
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert report["cases"][0]["name"] == safe
    names = [c.get("name") for c in ET.fromstring(paths["xml"].read_text("utf-8")).iter("testcase")]
    assert safe in names, names
    assert safe in paths["html"].read_text(encoding="utf-8")


def test_the_eval_table_reveals_bidi_characters(tmp_path: Path, capsys: Any) -> None:
    cases = _write_set(tmp_path, "evil\u202egnp.exe")
    report = tmp_path / "h.json"
    assert main(["eval", str(cases), "--json", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "evil⟦U+202E⟧gnp.exe" in printed and "\u202e" not in printed
    # the JSON keeps the data exact (a reader of data, not a person, reads it)
    assert json.loads(report.read_text(encoding="utf-8"))["cases"][0]["name"] == "evil\u202egnp.exe"


def test_junit_and_html_reports_reveal_controls_and_bidi(tmp_path: Path) -> None:
    cases = _write_set(tmp_path, "bell\x07 evil\u202egnp.exe")
    junit, html = tmp_path / "junit.xml", tmp_path / "report.html"
    assert main(["eval", str(cases), "--junit", str(junit), "--html", str(html)]) == 0
    names = [c.get("name") for c in ET.fromstring(junit.read_text("utf-8")).iter("testcase")]
    assert "bell⟦U+0007⟧ evil⟦U+202E⟧gnp.exe" in names, names  # XML 1.0 has no U+0007
    page = html.read_text(encoding="utf-8")
    assert "evil⟦U+202E⟧gnp.exe" in page and "\u202e" not in page
