"""webmcp-evals' verdicts on scripted behaviours: a case set using every construct the public
examples use (ordered/unordered groups, nested, optional, arguments null/omitted, result,
mockOutput, $pattern with inline flags, $contains, ranges, $type, $any), judged per behaviour."""

from __future__ import annotations

import pytest

from pysite_agent.agent.eval_judge import ExpectedCallError, judge, match_argument, parse_expected

EXPECTED = parse_expected(
    [
        {"functionName": "search", "arguments": {"query": {"$pattern": "(?i)^MUG"}}},
        {
            "unordered": [
                {"functionName": "add", "arguments": {"item": "mug", "qty": {"$gte": 1}}},
                {"functionName": "add", "arguments": {"item": {"$contains": "tea"}}},
                {"ordered": [{"functionName": "note", "arguments": None}]},
            ]
        },
        {"functionName": "summary", "optional": True, "mockOutput": {"total": 3}},
        {
            "functionName": "checkout",
            "arguments": {"lines": [{"$type": "string"}, {"$any": True}]},
            "result": {"ok": True},
        },
    ],
    "cases[0].expectedCall",
)

GOOD = [
    {"name": "search", "arguments": {"query": "mugs"}},
    {"name": "add", "arguments": {"item": "mug", "qty": 2}},
    {"name": "add", "arguments": {"item": "green tea"}},
    {"name": "note"},
    {"name": "summary", "arguments": {}},
    {"name": "checkout", "arguments": {"lines": ["a", 1]}, "result": {"ok": True, "id": 7}},
]


def _with(index: int, **change: object) -> list[dict[str, object]]:
    calls = [dict(c) for c in GOOD]
    calls[index].update(change)
    return calls


@pytest.mark.parametrize(
    ("behaviour", "calls", "verdict"),
    [
        ("the expected calls", GOOD, True),
        ("plus an extra key", _with(1, arguments={"item": "mug", "qty": 2, "gift": False}), True),
        ("a wrong tool", _with(0, name="browse"), False),
        ("a wrong value", _with(1, arguments={"item": "mug", "qty": 0}), False),
        ("unordered reordered", [GOOD[0], GOOD[3], GOOD[2], GOOD[1], *GOOD[4:]], True),
        ("optional left out", [*GOOD[:4], GOOD[5]], True),
        ("a wrong result", _with(5, result={"ok": False}), False),
        ("one more call", [*GOOD, {"name": "search", "arguments": {"query": "mug"}}], False),
        ("a required call missing", GOOD[:5], False),
        ("an array one longer", _with(5, arguments={"lines": ["a", 1, 2]}), False),
    ],
)
def test_verdicts_follow_upstream(behaviour: str, calls: list[dict[str, object]], verdict: bool):
    assert judge(EXPECTED, calls) is verdict, behaviour


def test_answer_without_a_tool():
    assert judge(parse_expected(None, "x"), []) is True
    assert judge(parse_expected([], "x"), [{"name": "search"}]) is False


def test_matcher_details():
    assert match_argument({"a": 2}, {"a": 2.0, "b": 1})
    assert not match_argument({"a": True}, {"a": 1})
    assert not match_argument({"$pattern": "^mug$"}, "MUG")
    assert match_argument({"$pattern": "(?i)^mug$"}, "MUG")
    assert match_argument({"$lt": 5, "$gt": 1}, 3) and not match_argument({"$lt": 5}, "3")
    assert match_argument({"$type": "object"}, {}) and not match_argument({"$type": "object"}, [])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{"functionName": "a", "argumnets": {}}], "unknown key 'argumnets'"),
        ([{"unordered": [{"functionName": "a"}], "x": 1}], "unknown key 'x'"),
        ([{"ordered": []}], "non-empty list"),
        ([{"arguments": {}}], "needs a 'functionName'"),
        ([{"functionName": "a", "arguments": [1]}], "object or null"),
    ],
)
def test_bad_expected_calls_are_named(raw: object, message: str):
    with pytest.raises(ExpectedCallError, match=message) as info:
        parse_expected(raw, "cases[3].expectedCall")
    assert "cases[3].expectedCall" in str(info.value)


def test_bad_patterns_are_clear_errors():
    with pytest.raises(ExpectedCallError, match="inline flag"):
        match_argument({"$pattern": "(?x)a"}, "a")
    with pytest.raises(ExpectedCallError, match="not a regular expression"):
        match_argument({"$pattern": "("}, "a")


def _calls(*spec: tuple[str, dict[str, object]]) -> list[dict[str, object]]:
    return [{"name": n, "arguments": a} for n, a in spec]


@pytest.mark.parametrize(
    ("expected", "calls", "verdict"),
    [
        # An optional call that does not match is skipped; the next node gets the call.
        (
            [{"functionName": "a", "optional": True, "arguments": {"x": 1}}, {"functionName": "a"}],
            _calls(("a", {"x": 2})),
            True,
        ),
        # Greedy, as upstream: an optional call that matches takes the call from a later one.
        (
            [
                {"functionName": "a", "optional": True, "arguments": {}},
                {"functionName": "a", "arguments": {"x": 1}},
            ],
            _calls(("a", {"x": 1})),
            False,
        ),
        # Two calls of one tool in an unordered group, either way round.
        (
            [{"unordered": [{"functionName": "a", "arguments": {"x": 1}}, {"functionName": "a"}]}],
            _calls(("a", {"x": 1}), ("a", {"x": 2})),
            True,
        ),
        (
            [{"unordered": [{"functionName": "a"}, {"functionName": "a", "arguments": {"x": 1}}]}],
            _calls(("a", {"x": 1}), ("a", {"x": 2})),
            True,
        ),
        (
            [{"unordered": [{"functionName": "a"}, {"functionName": "b", "optional": True}]}],
            _calls(("a", {})),
            True,
        ),
        # A nested ordered group is not split by another call of the unordered group.
        (
            [
                {
                    "unordered": [
                        {"functionName": "a"},
                        {"ordered": [{"functionName": "b"}, {"functionName": "c"}]},
                    ]
                }
            ],
            _calls(("b", {}), ("a", {}), ("c", {})),
            False,
        ),
        (
            [{"functionName": "a", "arguments": {"n": {"$gt": 1}}}],
            _calls(("a", {"n": True})),
            False,
        ),
        ([{"functionName": "a", "arguments": {"v": None}}], _calls(("a", {"v": None})), True),
        ([{"functionName": "a", "arguments": {"l": []}}], _calls(("a", {"l": [1]})), False),
        ([{"functionName": "a", "arguments": {"o": {}}}], _calls(("a", {"o": {"k": 1}})), True),
        (
            [{"functionName": "a", "result": None}],
            [{"name": "a", "arguments": {}, "result": None}],
            True,
        ),
        (
            [{"functionName": "a", "result": {"$type": "object"}}],
            [{"name": "a", "arguments": {}, "result": []}],
            False,
        ),
    ],
)
def test_edge_cases_get_upstreams_verdicts(
    expected: list[dict[str, object]], calls: list[dict[str, object]], verdict: bool
) -> None:
    """Each verdict here was confirmed against upstream's own ``evaluateExecutionTrajectory``
    (webmcp-evals/src/utils.ts) run on the same input."""
    assert judge(parse_expected(expected, "x"), calls) is verdict
