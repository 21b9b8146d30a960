"""The eval's report: per case the trajectory, webmcp-evals' verdict and the finer scores.

A case's **outcome** is webmcp-evals' (GoogleChromeLabs/webmcp-tools, ``webmcp-evals/src/
types/evals.ts``, ``TestResult.outcome``): ``"pass"``, ``"fail"`` or ``"error"`` (the model or
a tool could not be reached, or the case could not be judged). The summary counts them as
upstream's ``TestResults`` does (``tests``, ``pass``, ``fail``, ``error``), one per case: upstream
counts one result per trajectory step in its console summary; a case passes here exactly when
all of its steps pass there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pysite_agent.agent.eval_judge import Call
from pysite_agent.core.display import reveal

__all__ = ["CaseResult", "EvalReport", "StepResult"]


@dataclass(slots=True)
class StepResult:
    """One expected call (``None``: an answer without a tool) and the call that stood for it."""

    expected: Call | None
    reply: dict[str, Any] | None
    tool_choice: bool
    arguments_exact: bool
    argument_keys: float

    def to_json(self) -> dict[str, Any]:
        expected = None
        if self.expected is not None:
            expected = {"functionName": self.expected.name, "arguments": self.expected.arguments}
        return {
            "expected": expected,
            "reply": self.reply,
            "toolChoice": self.tool_choice,
            "argumentsExact": self.arguments_exact,
            "argumentKeys": round(self.argument_keys, 4),
        }


@dataclass(slots=True)
class CaseResult:
    """One case's outcome: its trajectory, verdict, steps (finer scores) and error, if any.

    ``trajectory`` is what the model did, in order: ``{"type": "tool", "name", "arguments",
    "result"}`` per call and ``{"type": "answer", "text"}`` when it answered; ``stopped`` is
    ``"answer"``, ``"max-steps"`` or ``"error"``.
    """

    name: str
    steps: list[StepResult] = field(default_factory=list)
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    passed: bool = False
    stopped: str = "answer"
    error: dict[str, str] | None = None
    duration_ms: float = 0.0

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"fail"`` or ``"error"`` (webmcp-evals' outcome)."""
        if self.error is not None:
            return "error"
        return "pass" if self.passed else "fail"

    @property
    def tool_choice(self) -> bool:
        return self.error is None and all(s.tool_choice for s in self.steps)

    @property
    def arguments_exact(self) -> bool:
        return self.error is None and all(s.arguments_exact for s in self.steps)

    @property
    def argument_keys(self) -> float:
        if not self.steps:
            return 0.0
        return sum(s.argument_keys for s in self.steps) / len(self.steps)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "outcome": self.outcome,
            "toolChoice": self.tool_choice,
            "argumentsExact": self.arguments_exact,
            "argumentKeys": round(self.argument_keys, 4),
            "durationMs": round(self.duration_ms, 1),
            "stopped": self.stopped,
            "trajectory": self.trajectory,
            "steps": [s.to_json() for s in self.steps],
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(slots=True)
class EvalReport:
    """Scores per case and in total (means over cases); :meth:`to_json`, :meth:`table`."""

    model: str
    cases: list[CaseResult]

    def pass_rate(self) -> float:
        """The share of cases that pass (0 to 1; 0 for no cases)."""
        return round(self.summary()["pass"] / len(self.cases), 4) if self.cases else 0.0

    def summary(self) -> dict[str, int]:
        """webmcp-evals' summary: ``{tests, pass, fail, error}`` (counts of cases)."""
        outcomes = [c.outcome for c in self.cases]
        return {
            "tests": len(outcomes),
            "pass": outcomes.count("pass"),
            "fail": outcomes.count("fail"),
            "error": outcomes.count("error"),
        }

    def totals(self) -> dict[str, Any]:
        """``{cases, toolChoice, argumentsExact, argumentKeys, errors}``: the accuracies are
        fractions of the cases (0 to 1), ``errors`` a count (the verdicts: :meth:`summary`)."""
        n = len(self.cases)

        def mean(values: list[float]) -> float:
            return round(sum(values) / n, 4) if n else 0.0

        return {
            "cases": n,
            "toolChoice": mean([float(c.tool_choice) for c in self.cases]),
            "argumentsExact": mean([float(c.arguments_exact) for c in self.cases]),
            "argumentKeys": mean([c.argument_keys for c in self.cases]),
            "errors": sum(1 for c in self.cases if c.error is not None),
        }

    def to_json(self) -> dict[str, Any]:
        """``{version: 1, model, summary: {tests, pass, fail, error}, total: {cases,
        toolChoice, argumentsExact, argumentKeys, errors}, cases: [{name, outcome, toolChoice,
        argumentsExact, argumentKeys, durationMs, stopped, trajectory, steps, error?}]}``;
        accuracies are fractions from 0 to 1."""
        return {
            "version": 1,
            "model": self.model,
            "summary": self.summary(),
            "total": self.totals(),
            "cases": [c.to_json() for c in self.cases],
        }

    def table(self) -> str:
        """A plain-text table: one row per case, then the totals (percentages)."""
        rows = [("case", "verdict", "expected", "got", "tool", "args exact", "args per key")]
        for case in self.cases:
            expected = (
                ", ".join(s.expected.name if s.expected else "(answer)" for s in case.steps)
                or "(answer)"
            )
            if case.error is not None:
                got = f"error: {case.error['code']}"
            else:
                got = ", ".join(_label(t) for t in case.trajectory) or "(nothing)"
            rows.append(
                (
                    case.name,
                    case.outcome.upper(),
                    expected,
                    got,
                    "yes" if case.tool_choice else "no",
                    "yes" if case.arguments_exact else "no",
                    f"{case.argument_keys:.0%}",
                )
            )
        total, summary = self.totals(), self.summary()
        rows.append(
            (
                f"total ({total['cases']} cases)",
                f"{self.pass_rate():.0%}",
                "",
                f"{total['errors']} errors" if total["errors"] else "",
                f"{total['toolChoice']:.0%}",
                f"{total['argumentsExact']:.0%}",
                f"{total['argumentKeys']:.0%}",
            )
        )
        width, units = _measure()
        cut = [tuple(_short(_cell(c), 40, width, units) for c in row) for row in rows]
        widths = [max(width(row[i]) for row in cut) for i in range(len(rows[0]))]
        lines = [
            "  ".join(c + " " * (w - width(c)) for c, w in zip(row, widths, strict=True))
            for row in cut
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
        tail = (
            f"tests {summary['tests']}, pass {summary['pass']}, fail {summary['fail']}, "
            f"error {summary['error']}\nmodel: {self.model}"
        )
        return "\n".join(line.rstrip() for line in lines) + "\n" + tail


_MARKER = re.compile(r"(⟦U\+[0-9A-F]{4,6}⟧)")
_BREAKS = re.compile(r"[\t\n\r]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _cell(text: str) -> str:
    """``text`` as one line of a terminal table: lone surrogates as U+FFFD (they cannot be
    written to a UTF-8 stream), tabs and line breaks as one space, and the characters that show
    nothing or reorder the line (``core.display.HIDDEN_RANGES``) as ``⟦U+XXXX⟧`` markers."""
    return reveal(_BREAKS.sub(" ", _SURROGATE.sub("\ufffd", text)))


def _measure() -> tuple[Callable[[str], int], Callable[[str], Iterator[str]]]:
    """The terminal width of a string (columns) and its user-perceived characters.

    wcwidth (a dependency on CPython) counts a wide East Asian character or an emoji as two
    columns and a combining mark as none (Unicode UAX #11, UAX #29). Where it is absent
    (Pyodide's bundle does not ship it) one code point counts as one column."""
    try:
        import wcwidth
    except ImportError:  # pragma: no cover - CPython installs it
        return len, iter
    return wcwidth.width, wcwidth.iter_graphemes


def _short(
    text: str, limit: int, width: Callable[[str], int], units: Callable[[str], Iterator[str]]
) -> str:
    """``text`` cut to ``limit`` columns with an ellipsis, between whole characters and
    never inside a ``⟦U+XXXX⟧`` marker."""
    if width(text) <= limit:
        return text
    kept: list[str] = []
    used = 0
    for part in _MARKER.split(text):
        for unit in [part] if _MARKER.fullmatch(part) else units(part):
            used += width(unit)
            if used > limit - 1:
                return "".join(kept) + "…"
            kept.append(unit)
    return "".join(kept) + "…"  # pragma: no cover - the width said it was longer


def _label(entry: dict[str, Any]) -> str:
    return str(entry.get("name")) if entry.get("type") == "tool" else "(answer)"
