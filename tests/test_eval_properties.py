"""The eval's boundaries with hostile input (the shared generators, tests/generators.py): a case
file of any shape loads or is refused with :class:`EvalSetError`, never another exception; the
judge gives a verdict for any calls; deep nesting is a clear error, not a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from generators import dismantle, hostile_value, nested_dict, nested_json_text, nested_list
from hypothesis import given, settings
from hypothesis import strategies as st

from pysite_agent.__main__ import main
from pysite_agent.agent.eval_judge import judge, parse_expected
from pysite_agent.agent.evals import EvalSetError, load_eval_set

TOOLS = [{"name": "a", "description": "A tool"}]
MESSAGES = [{"role": "user", "type": "message", "content": "hi"}]


def _loads_or_refuses(data: Any) -> None:
    try:
        load_eval_set(data, tools=TOOLS, check_tools=False)
    except EvalSetError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=150, deadline=None)
@given(hostile_value)
def test_any_case_set_loads_or_is_refused(value: Any) -> None:
    _loads_or_refuses(value)
    _loads_or_refuses({"cases": [value]})
    _loads_or_refuses([{"messages": value, "expectedCall": None}])
    _loads_or_refuses([{"messages": MESSAGES, "expectedCall": value}])
    _loads_or_refuses(
        [{"messages": MESSAGES, "expectedCall": [{"functionName": "a", "arguments": value}]}]
    )
    _loads_or_refuses([{"messages": MESSAGES, "expectedCall": [{"unordered": [value]}]}])


@settings(max_examples=150, deadline=None)
@given(hostile_value, hostile_value, st.booleans())
def test_the_judge_gives_a_verdict_for_any_calls(
    arguments: Any, result: Any, optional: bool
) -> None:
    expected = parse_expected(
        [
            {
                "unordered": [
                    {
                        "functionName": "a",
                        "arguments": {"k": {"$type": "string"}},
                        "optional": optional,
                    },
                    {"functionName": "b", "result": {"$contains": "ok"}},
                ]
            }
        ],
        "x",
    )
    calls = [
        {"name": "a", "arguments": arguments},
        {"name": "b", "arguments": {}, "result": result},
    ]
    assert judge(expected, calls) in (True, False)


@pytest.mark.parametrize(
    "deep",
    [
        lambda: [
            {
                "messages": MESSAGES,
                "expectedCall": [{"functionName": "a", "arguments": nested_dict()}],
            }
        ],
        lambda: [
            {
                "messages": MESSAGES,
                "expectedCall": [{"functionName": "a", "arguments": {"l": nested_list()}}],
            }
        ],
        lambda: [{"messages": MESSAGES, "expectedCall": [nested_dict(key="ordered")]}],
    ],
)
def test_deep_nesting_is_a_clear_error(deep: Any) -> None:
    data = deep()
    try:
        with pytest.raises(EvalSetError, match="nested too deeply"):
            load_eval_set(data, tools=TOOLS, check_tools=False)
    finally:
        dismantle(data)


def test_a_deeply_nested_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "evals.json"
    cases.write_text(nested_json_text(), encoding="utf-8")
    assert main(["eval", str(cases)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nested too deeply" in err, err
    cases.write_text(
        json.dumps([{"messages": MESSAGES, "expectedCall": None}]) + "x", encoding="utf-8"
    )
    assert main(["eval", str(cases)]) == 2
    assert "is not JSON" in capsys.readouterr().err
