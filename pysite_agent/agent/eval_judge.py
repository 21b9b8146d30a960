"""webmcp-evals' pass/fail verdict for one case: its expected-call tree and matcher.

The rules follow the public webmcp-evals tool (GoogleChromeLabs/webmcp-tools,
``webmcp-evals/src/matcher.ts`` and ``src/utils.ts``):

- ``expectedCall`` is a list of nodes, run in order; a node is a call
  ``{"functionName", "arguments"?, "result"?, "mockOutput"?, "optional"?}``, an
  ``{"ordered": [nodes]}`` group or an ``{"unordered": [nodes]}`` group (any order), nested freely;
  ``null`` or ``[]`` means the model should answer without a tool.
- ``arguments`` omitted or ``null``: any arguments. Objects match as subsets (keys the model adds
  are fine), arrays strictly (same length, by position); a constraint object (every key starts
  with ``$``) tests the value: ``$pattern`` (a regular expression, searched; a leading inline-flag
  group such as ``(?i)`` sets flags), ``$contains``, ``$gt``/``$gte``/``$lt``/``$lte``,
  ``$type`` and ``$any``.
- ``result``: the tool's output must match it the same way.
- ``optional: true``: the call may be left out; when made, it matches as usual.
- A trajectory passes when every required call matches and no call is left over (an extra call
  fails).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Call",
    "ExpectedCallError",
    "Group",
    "Node",
    "judge",
    "match_argument",
    "parse_expected",
]

_CALL_KEYS = frozenset({"functionName", "arguments", "result", "mockOutput", "optional"})
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "d": 0, "y": 0}
_MAX_UNORDERED = 8
"""Permutations tried per unordered group are bounded (8! = 40320)."""


class ExpectedCallError(ValueError):
    """An ``expectedCall`` that is not in webmcp-evals' shape; the message says where."""


@dataclass(frozen=True, slots=True)
class Call:
    """One expected call; ``arguments`` ``None`` means "any"; ``has_result`` and
    ``has_mock_output`` tell a given ``null`` from a key left out."""

    name: str
    arguments: Any = None
    result: Any = None
    has_result: bool = False
    mock_output: Any = None
    optional: bool = False
    has_mock_output: bool = False


@dataclass(frozen=True, slots=True)
class Group:
    """An ``ordered`` (in this order) or ``unordered`` (any order) group of nodes."""

    ordered: bool
    nodes: tuple[Node, ...]


Node = Call | Group


def parse_expected(raw: Any, where: str) -> tuple[Node, ...]:
    """Parse ``expectedCall`` (``None``, a node, or a list of nodes).

    Raises:
        ExpectedCallError: a node of another shape, or an unknown key (named, with ``where``).
    """
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        raise ExpectedCallError(f"{where}: 'expectedCall' must be a list of calls or null")
    return tuple(_node(n, f"{where}[{i}]") for i, n in enumerate(raw))


def _node(raw: Any, where: str) -> Node:
    if not isinstance(raw, Mapping):
        raise ExpectedCallError(f"{where}: an expected call must be an object")
    for kind in ("ordered", "unordered"):
        if kind in raw:
            if set(raw) != {kind}:
                extra = sorted(set(raw) - {kind})[0]
                raise ExpectedCallError(f"{where}: unknown key {extra!r} beside {kind!r}")
            if not isinstance(raw[kind], list) or not raw[kind]:
                raise ExpectedCallError(f"{where}.{kind}: a non-empty list of calls")
            nodes = tuple(_node(n, f"{where}.{kind}[{i}]") for i, n in enumerate(raw[kind]))
            return Group(kind == "ordered", nodes)
    unknown = sorted(set(raw) - _CALL_KEYS)
    if unknown:
        has = "functionName, arguments, result, mockOutput, optional; or ordered, unordered"
        raise ExpectedCallError(f"{where}: unknown key {unknown[0]!r} in an expected call ({has})")
    name = raw.get("functionName")
    if not isinstance(name, str) or not name:
        raise ExpectedCallError(f"{where}: an expected call needs a 'functionName'")
    arguments = raw.get("arguments")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ExpectedCallError(f"{where}: 'arguments' must be an object or null")
    optional = raw.get("optional", False)
    if not isinstance(optional, bool):
        raise ExpectedCallError(f"{where}: 'optional' must be true or false")
    return Call(
        name,
        arguments,
        raw.get("result"),
        "result" in raw,
        raw.get("mockOutput"),
        optional,
        "mockOutput" in raw,
    )


def _pattern(raw: str) -> re.Pattern[str]:
    flags = 0
    found = re.match(r"^\(\?([a-zA-Z]+)\)", raw)
    if found:
        for flag in found.group(1):
            if flag not in _FLAGS:
                raise ExpectedCallError(f"unsupported inline flag (?{flag}) in $pattern {raw!r}")
            flags |= _FLAGS[flag]
        raw = raw[found.end() :]
    try:
        return re.compile(raw, flags)
    except re.error as exc:
        raise ExpectedCallError(f"$pattern {raw!r} is not a regular expression: {exc}") from None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_ok(want: Any, actual: Any) -> bool:
    return {
        "string": isinstance(actual, str),
        "number": _number(actual),
        "boolean": isinstance(actual, bool),
        "array": isinstance(actual, list),
        "object": isinstance(actual, dict),
        "null": actual is None,
    }.get(str(want), False)


def _constraint(constraint: Mapping[str, Any], actual: Any) -> bool:
    for key, want in constraint.items():
        if key == "$pattern":
            if not isinstance(actual, str) or not _pattern(str(want)).search(actual):
                return False
        elif key == "$contains":
            if not isinstance(actual, str) or str(want) not in actual:
                return False
        elif key in ("$gt", "$gte", "$lt", "$lte"):
            if not _number(actual) or not _number(want):
                return False
            if not {
                "$gt": actual > want,
                "$gte": actual >= want,
                "$lt": actual < want,
                "$lte": actual <= want,
            }[key]:
                return False
        elif key == "$type" and not _type_ok(want, actual):
            return False
    return True


def match_argument(expected: Any, actual: Any) -> bool:
    """webmcp-evals' matcher: subset objects, strict arrays, constraint objects, numbers by
    value (``2`` equals ``2.0``; booleans are not numbers)."""
    if isinstance(expected, dict) and expected and all(k.startswith("$") for k in expected):
        return _constraint(expected, actual)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and match_argument(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(match_argument(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if _number(expected):
        return _number(actual) and bool(expected == actual)
    return type(expected) is type(actual) and bool(expected == actual)


def _call_ok(node: Call, actual: Mapping[str, Any]) -> bool:
    if actual.get("name") != node.name:
        return False
    if node.arguments is not None and not match_argument(node.arguments, actual.get("arguments")):
        return False
    return not node.has_result or match_argument(node.result, actual.get("result"))


def _match(node: Node, calls: Sequence[Mapping[str, Any]], at: int) -> tuple[bool, int, int]:
    """(matched, calls consumed, passes) for ``node`` from ``calls[at]`` on."""
    if isinstance(node, Call):
        if at >= len(calls):
            return (node.optional, 0 if node.optional else 1, 0)
        ok = _call_ok(node, calls[at])
        if node.optional and not ok:
            return (True, 0, 0)
        return (ok, 1, int(ok))
    if node.ordered:
        return _sequence(node.nodes, calls, at)
    if len(node.nodes) > _MAX_UNORDERED:
        raise ExpectedCallError(f"an unordered group of {len(node.nodes)} calls (at most 8)")
    best = (False, 0, -1)
    for order in itertools.permutations(node.nodes):
        result = _sequence(order, calls, at)
        if result[0]:
            return result
        if result[2] > best[2]:
            best = result
    return best


def _sequence(
    nodes: Sequence[Node], calls: Sequence[Mapping[str, Any]], at: int
) -> tuple[bool, int, int]:
    ok, index, passes = True, at, 0
    for node in nodes:
        matched, used, passed = _match(node, calls, index)
        ok, index, passes = ok and matched, index + used, passes + passed
    return (ok, index - at, passes)


def judge(expected: Sequence[Node], calls: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the calls the model made (``[{name, arguments, result?}]``, in order) pass.

    Raises:
        ExpectedCallError: a ``$pattern`` with an unsupported inline flag, or an unordered
            group of more than 8 nodes.
    """
    ok, used, _ = _sequence(expected, calls, 0)
    return ok and used >= len(calls)
