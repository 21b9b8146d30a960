"""Invisible and text-direction characters made visible (pysite_agent.core.display.reveal) on
the confirmation card's lines, over the shared text generators; CPython and Pyodide
(tests/pyodide/test_core_suite.py). tests/test_reveal_js.py checks web/element/reveal.js."""

from __future__ import annotations

import re

from generators import BIDI_CONTROLS, INVISIBLES, hostile_text
from hypothesis import given, settings

from pysite_agent.core.display import has_hidden, reveal
from pysite_agent.core.lines import confirm_lines


def test_the_reversed_file_name_reads_as_written() -> None:
    assert reveal("evil\u202egnp.exe") == "evil⟦U+202E⟧gnp.exe"
    (line,) = confirm_lines({"file": "evil\u202egnp.exe"}, None)
    assert line.value == "evil⟦U+202E⟧gnp.exe"
    (line,) = confirm_lines({"na\u200bme": "a\u2066b\u2069"}, None)
    assert line.label == "Na⟦U+200B⟧me" and line.value == "a⟦U+2066⟧b⟦U+2069⟧"


def test_every_bidi_control_and_invisible_of_the_generators_is_revealed() -> None:
    for char in BIDI_CONTROLS + INVISIBLES:
        assert has_hidden(char), f"U+{ord(char):04X}"
        assert reveal(char) == f"⟦U+{ord(char):04X}⟧"
    assert reveal("tab\tline\nreturn\r") == "tab\tline\nreturn\r"
    assert reveal("\U0001f469\u200d\U0001f4bb") == "\U0001f469⟦U+200D⟧\U0001f4bb"


@settings(max_examples=200)
@given(hostile_text())
def test_revealed_text_holds_nothing_hidden_and_keeps_the_rest(text: str) -> None:
    out = reveal(text)
    assert not has_hidden(out)
    assert reveal(out) == out
    kept = "".join(c for c in text if not has_hidden(c))
    assert re.sub(r"⟦U\+[0-9A-F]{4,6}⟧", "", out) == re.sub(r"⟦U\+[0-9A-F]{4,6}⟧", "", kept)
