"""Lone surrogates made U+FFFD at one place (pysite_agent.core.text), and the trace command on a
trace that holds them; the strategies come from tests/generators.py (CPython and Pyodide)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from generators import (
    ASTRAL,
    LONE_SURROGATES,
    cut_emoji,
    dismantle,
    hostile_text,
    hostile_value,
    nested_list,
)
from hypothesis import given, settings
from test_core_trace_view import a_trace

from pysite_agent.core.text import REPLACEMENT, shortened, well_formed, well_formed_json


@settings(max_examples=200)
@given(hostile_text())
def test_well_formed_text_always_encodes_and_keeps_valid_text(text: str) -> None:
    out = well_formed(text)
    out.encode("utf-8")  # never raises
    assert well_formed(out) == out
    assert len(out) <= len(text)
    kept = [c for c in text if not 0xD800 <= ord(c) <= 0xDFFF]
    assert [c for c in out if c != REPLACEMENT] == [c for c in kept if c != REPLACEMENT] or (
        len(out) < len(text)  # a pair joined into one astral character
    )


@given(cut_emoji())
def test_a_string_cut_inside_an_emoji_ends_in_one_replacement(text: str) -> None:
    out = well_formed(text)
    assert out == text[:-1] + REPLACEMENT or out[-1] == REPLACEMENT


def test_the_conversion_is_exact() -> None:
    for lone in LONE_SURROGATES:
        assert well_formed(f"a{lone}b") == f"a{REPLACEMENT}b"
    assert well_formed("\ud83d\ude00") == "\U0001f600"  # a pair is joined
    for char in ASTRAL:
        assert well_formed(char) == char


@settings(max_examples=100)
@given(hostile_value)
def test_well_formed_json_encodes_anything(value: object) -> None:
    out = well_formed_json(value)
    json.dumps(out, ensure_ascii=False, allow_nan=True).encode("utf-8")


def test_well_formed_json_is_not_recursive() -> None:
    deep = nested_list(10_000)
    deep_leaf = deep
    for _ in range(10_000):
        deep_leaf = deep_leaf[0]
    deep_leaf.append("\ud83d")
    result = well_formed_json(deep)
    try:
        out = result
        for _ in range(10_000):
            out = out[0]
        assert out == [REPLACEMENT]
    finally:
        dismantle(deep)
        dismantle(result)


def test_trace_show_and_check_a_trace_holding_lone_surrogates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pysite_agent.__main__ import main

    trace = a_trace()
    trace["steps"][0]["text"] = "cut \ud83d emoji"
    trace["steps"][-1]["text"] = "\ude00 \u202eevil"
    trace_file = tmp_path / "run.json"
    trace_file.write_text(json.dumps(trace), encoding="utf-8")  # "\ud83d" escapes
    assert main(["trace", "check", str(trace_file)]) == 0
    assert "ok: trace v1" in capsys.readouterr().out
    out = tmp_path / "run.html"
    assert main(["trace", "show", str(trace_file), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert f"cut {REPLACEMENT} emoji" in html
    assert main(["trace", "show", str(trace_file)]) == 0
    assert REPLACEMENT in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("  abc  ", 3, "abc"),
        ("abcd", 3, "ab…"),
        ("ab  cd", 4, "ab…"),  # no blank before the ellipsis
        ("abcd", 1, "…"),
        ("\ud800x", 5, "\ud800x"),  # the text is quoted as it is
    ],
)
def test_shortened_keeps_the_limit_and_ends_a_cut_in_an_ellipsis(
    text: str, limit: int, expected: str
) -> None:
    assert shortened(text, limit) == expected
    assert len(shortened(text * 50, limit)) <= limit
