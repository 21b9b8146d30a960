"""The tool-choice eval: how well a model picks the page's tools and fills their arguments.

A case set follows the public webmcp-evals format (GoogleChromeLabs/webmcp-tools, ``evals-cli``:
``evals.json`` and its ``schema.json``), pinned here as **eval set v1**::

    {
      "version": 1,                              # optional
      "instructions": "...",                     # optional: the site's instructions
      "tools": [{"name", "description", "inputSchema"?, "title"?, "annotations"?}, ...],
      "cases": [
        {
          "name": "Add two mugs",
          "messages": [                          # or "message": "add two mugs"
            {"role": "user", "type": "message", "content": "add two mugs to my cart"}
          ],
          "expectedCall": [{"functionName": "add_to_cart",
                            "arguments": {"product": "mug", "quantity": 2}}],
          "results": ["Added 2 × Classic mug."],  # optional, scripted results (default "ok")
          "tools": [...]                         # optional: this case's tools instead
        }
      ]
    }

A bare list of cases (webmcp-evals' ``evals.json``) is accepted too, with the tools given
separately (``tools=``, or the command's ``--tools schema.json``, whose ``{"tools": [...]}``
is webmcp-evals' ``schema.json``). ``inputSchema: null`` means no arguments.

Messages (webmcp-evals): ``{"role": "user", "type": "message", "content"}`` (the visitor),
``{"role": "model", "type": "message", "content"}`` (an earlier answer),
``{"role": "model", "type": "functioncall", "name", "arguments"}`` (an earlier call) and
``{"role": "user", "type": "functionresponse", "name", "response"}`` (its result: ``response``
as text, or ``response.result`` when that is text, else the JSON of ``response``; webmcp-evals'
example files also write this one with ``"type": "functioncall"`` and a ``response``, which is
read the same way).

``expectedCall`` is the list of calls the model should make, in order; ``null`` or ``[]`` means
the model should answer without a tool. **No tool ever runs**: each step sends the
conversation to the model once; after an expected call the scripted result (``results[i]``,
default ``"ok"``, as webmcp-evals does) is added and the next step asked for. A case stops at
the first wrong tool.

Scores, per expected step and then per case (a case with steps: every step must pass for the
booleans; the per-key score is the mean):

- **tool choice**: the model called the expected tool (by name), or answered when no call was
  expected.
- **arguments, exact**: the tool is right and the arguments equal the expected ones after
  canonical JSON (sorted keys; numbers compared by value, so ``2`` equals ``2.0``; no missing
  and no extra keys). An expected value may be a webmcp-evals constraint object (every key
  starts with ``$``): ``$pattern`` (regular expression, searched), ``$contains`` (substring),
  ``$gt``/``$gte``/``$lt``/``$lte`` (numbers), ``$type`` (``string``, ``number``,
  ``boolean``, ``array``, ``object``, ``null``) and ``$any`` (present, any value). The
  arguments scored are the ones the agent would run: a JSON string that holds an object is
  that object, and ``""`` (or only white space) means no arguments, ``{}``.
- **arguments, per key**: the share of top-level keys that match: matching expected keys /
  (expected keys + extra keys the model added); 1.0 when both are empty; 0 when the tool is
  wrong.

Totals are the means over cases. A model error (e.g. ``model-unavailable``) fails the case and
is reported with it. :func:`run_eval` works with any model adapter: Chrome's on-device model in
the page, the proxy (on CPython with an injected ``fetch``), :func:`~pysite_agent.custom`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.instructions import build_instructions
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.core.trace import duration_ms, monotonic_ms
from pysite_agent.core.types import ModelAdapter, ModelRequest, RegisteredTool, canonical_json
from pysite_agent.core.validation import coerce_arguments
from pysite_agent.core.wire import (
    answer_message,
    parse_reply,
    tool_call_message,
    tool_result_message,
    user_message,
)

__all__ = [
    "EvalCase",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "arguments_match",
    "key_score",
    "load_eval_set",
    "run_eval",
]

DEFAULT_RESULT = "ok"
"""The scripted result of an expected call when the case gives none (as webmcp-evals)."""


class EvalSetError(ValueError):
    """A case set that does not follow eval set v1; the message says where."""


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    name: str
    arguments: Any

    def to_json(self) -> dict[str, Any]:
        return {"functionName": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One case: its conversation (protocol v1 messages), tools, expected calls and results."""

    name: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    expected: tuple[ExpectedCall, ...]
    results: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalSet:
    """A parsed case set (see the module docstring)."""

    cases: tuple[EvalCase, ...]
    instructions: str | None = None


# -- loading ---------------------------------------------------------------------------------


def _tool(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise EvalSetError(f"{where}: a tool needs a non-empty string 'name'")
    schema = raw.get("inputSchema")
    if schema is not None and not isinstance(schema, Mapping):
        raise EvalSetError(f"{where}: 'inputSchema' must be an object or null")
    annotations = raw.get("annotations")
    tool = RegisteredTool(
        name=raw["name"],
        description=str(raw.get("description") or ""),
        title=raw.get("title") if isinstance(raw.get("title"), str) else None,
        input_schema=schema,
        annotations=annotations if isinstance(annotations, Mapping) else None,
    )
    return tool.to_definition()


def _tools(raw: Any, where: str) -> tuple[dict[str, Any], ...]:
    if isinstance(raw, Mapping) and "tools" in raw:
        raw = raw["tools"]  # webmcp-evals' schema.json
    if not isinstance(raw, list):
        raise EvalSetError(f"{where}: 'tools' must be a list of tools")
    tools = tuple(_tool(t, f"{where}[{i}]") for i, t in enumerate(raw))
    names = [t["name"] for t in tools]
    if len(set(names)) != len(names):
        raise EvalSetError(f"{where}: tool names must be unique")
    return tools


def _response_text(message: Mapping[str, Any]) -> str:
    response = message.get("response", message.get("content", ""))
    if isinstance(response, Mapping) and isinstance(response.get("result"), str):
        return str(response["result"])
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)


def _messages(raw: Any, where: str) -> tuple[dict[str, Any], ...]:
    if isinstance(raw, str):
        return (user_message(raw),)
    if not isinstance(raw, list) or not raw:
        raise EvalSetError(f"{where}: 'messages' must be a non-empty list (or give 'message')")
    out: list[dict[str, Any]] = []
    calls = 0
    open_call: tuple[str, str] | None = None
    for i, message in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(message, Mapping):
            raise EvalSetError(f"{at}: a message must be an object")
        role, kind = message.get("role"), message.get("type", "message")
        if kind in ("functionresponse", "functioncall") and "response" in message:
            if open_call is None:
                raise EvalSetError(f"{at}: a function response without a call before it")
            call_id, name = open_call
            out.append(tool_result_message(call_id, name, _response_text(message)))
            open_call = None
            continue
        if open_call is not None:
            raise EvalSetError(f"{at}: the call before this message has no response")
        if kind == "functioncall" and role == "model":
            call_name = message.get("name")
            if not isinstance(call_name, str) or not call_name:
                raise EvalSetError(f"{at}: a function call needs a 'name'")
            calls += 1
            call_id = f"call_{calls}"
            out.append(tool_call_message(call_id, call_name, message.get("arguments") or {}))
            open_call = (call_id, call_name)
        elif kind == "message" and isinstance(message.get("content"), str):
            if role == "user":
                out.append(user_message(message["content"]))
            elif role in ("model", "assistant"):
                out.append(answer_message(message["content"]))
            else:
                raise EvalSetError(f"{at}: role must be 'user' or 'model'")
        else:
            raise EvalSetError(f"{at}: not a webmcp-evals message ({role!r}, {kind!r})")
    if open_call is not None:
        raise EvalSetError(f"{where}: the last call has no response")
    if not any(m["role"] == "user" for m in out):
        raise EvalSetError(f"{where}: no message from the user")
    return tuple(out)


def _expected(raw: Any, where: str) -> tuple[ExpectedCall, ...]:
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        raise EvalSetError(f"{where}: 'expectedCall' must be a list of calls or null")
    out = []
    for i, call in enumerate(raw):
        if not isinstance(call, Mapping) or not isinstance(call.get("functionName"), str):
            raise EvalSetError(f"{where}[{i}]: an expected call needs a 'functionName'")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise EvalSetError(f"{where}[{i}]: 'arguments' must be an object")
        out.append(ExpectedCall(call["functionName"], json.loads(json.dumps(arguments))))
    return tuple(out)


def load_eval_set(data: Any, *, tools: Any = None) -> EvalSet:
    """Parse a case set (JSON data, see the module docstring).

    Args:
        data: ``{"tools", "cases", "instructions"?, "version"?}``, or a bare list of cases.
        tools: the page's tools when ``data`` has none (a list, or ``{"tools": [...]}``).

    Raises:
        EvalSetError: anything that does not follow eval set v1 (the message says where), a
            case that names an expected tool that is not among its tools, or no tools at all.
    """
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, Mapping):
        raise EvalSetError("a case set is an object {tools, cases} or a list of cases")
    version = data.get("version", 1)
    if version != 1:
        raise EvalSetError(f"unknown eval set version {version!r} (this reads version 1)")
    instructions = data.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise EvalSetError("'instructions' must be a string")
    shared: tuple[dict[str, Any], ...] | None = None
    if data.get("tools") is not None:
        shared = _tools(data["tools"], "tools")
    elif tools is not None:
        shared = _tools(tools, "tools")
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise EvalSetError("'cases' must be a non-empty list")
    cases = []
    for i, raw in enumerate(raw_cases):
        where = f"cases[{i}]"
        if not isinstance(raw, Mapping):
            raise EvalSetError(f"{where}: a case must be an object")
        name = raw.get("name")
        name = name if isinstance(name, str) and name else f"case {i + 1}"
        case_tools = _tools(raw["tools"], f"{where}.tools") if "tools" in raw else shared
        if case_tools is None:
            raise EvalSetError(f"{where}: no tools (give 'tools' in the set, the case, or --tools)")
        messages = _messages(raw.get("messages", raw.get("message")), f"{where}.messages")
        expected = _expected(raw.get("expectedCall"), f"{where}.expectedCall")
        names = {t["name"] for t in case_tools}
        for call in expected:
            if call.name not in names:
                raise EvalSetError(f"{where}: expected tool {call.name!r} is not among its tools")
        results = raw.get("results", [])
        if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
            raise EvalSetError(f"{where}.results: a list of texts")
        cases.append(EvalCase(name, messages, case_tools, expected, tuple(results)))
    return EvalSet(tuple(cases), instructions)


# -- scoring ---------------------------------------------------------------------------------

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _is_constraint(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(k.startswith("$") for k in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _constraint(constraint: Mapping[str, Any], actual: Any) -> bool:
    for key, want in constraint.items():
        if key == "$pattern":
            if not isinstance(actual, str):
                return False
            try:
                if re.search(str(want), actual) is None:
                    return False
            except re.error:
                return False
        elif key == "$contains":
            if not isinstance(actual, str) or str(want) not in actual:
                return False
        elif key in ("$gt", "$gte", "$lt", "$lte"):
            if not _number(actual) or not _number(want):
                return False
            ok = {
                "$gt": actual > want,
                "$gte": actual >= want,
                "$lt": actual < want,
                "$lte": actual <= want,
            }[key]
            if not ok:
                return False
        elif key == "$type":
            check = _TYPES.get(str(want))
            if check is None or not check(actual):
                return False
        elif key != "$any":
            return False  # an unknown operator never matches (so a typo cannot pass)
    return True


def arguments_match(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` equals ``expected`` after canonical JSON (numbers by value), with
    webmcp-evals constraint objects allowed anywhere in ``expected`` (module docstring)."""
    if _is_constraint(expected):
        return _constraint(expected, actual)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(expected) == set(actual)
            and all(arguments_match(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(arguments_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if _number(expected):
        return _number(actual) and bool(expected == actual)
    return type(expected) is type(actual) and canonical_json(expected) == canonical_json(actual)


def key_score(expected: Mapping[str, Any], actual: Any) -> float:
    """Per-key argument accuracy: matching expected keys / (expected keys + extra keys);
    1.0 when both are empty, 0.0 when ``actual`` is not an object."""
    if not isinstance(actual, dict):
        return 0.0
    keys = set(expected) | set(actual)
    if not keys:
        return 1.0
    matched = sum(1 for k, v in expected.items() if k in actual and arguments_match(v, actual[k]))
    return matched / len(keys)


# -- running ---------------------------------------------------------------------------------


@dataclass(slots=True)
class StepResult:
    expected: ExpectedCall | None
    reply: dict[str, Any] | None
    tool_choice: bool
    arguments_exact: bool
    argument_keys: float

    def to_json(self) -> dict[str, Any]:
        return {
            "expected": None if self.expected is None else self.expected.to_json(),
            "reply": self.reply,
            "toolChoice": self.tool_choice,
            "argumentsExact": self.arguments_exact,
            "argumentKeys": round(self.argument_keys, 4),
        }


@dataclass(slots=True)
class CaseResult:
    """One case's outcome: its steps, the case scores and a model error, if any."""

    name: str
    steps: list[StepResult] = field(default_factory=list)
    error: dict[str, str] | None = None
    duration_ms: float = 0.0

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
            "toolChoice": self.tool_choice,
            "argumentsExact": self.arguments_exact,
            "argumentKeys": round(self.argument_keys, 4),
            "durationMs": round(self.duration_ms, 1),
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

    def totals(self) -> dict[str, Any]:
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
        """``{version: 1, model, total: {cases, toolChoice, argumentsExact, argumentKeys,
        errors}, cases: [{name, toolChoice, argumentsExact, argumentKeys, durationMs, steps,
        error?}]}``; accuracies are fractions from 0 to 1."""
        return {
            "version": 1,
            "model": self.model,
            "total": self.totals(),
            "cases": [c.to_json() for c in self.cases],
        }

    def table(self) -> str:
        """A plain-text table: one row per case, then the totals (percentages)."""
        rows = [("case", "expected", "got", "tool", "args exact", "args per key")]
        for case in self.cases:
            expected = (
                ", ".join(s.expected.name if s.expected else "(answer)" for s in case.steps)
                or "(answer)"
            )
            if case.error is not None:
                got = f"error: {case.error['code']}"
            else:
                got = ", ".join(_reply_label(s.reply) for s in case.steps)
            rows.append(
                (
                    case.name,
                    expected,
                    got,
                    "yes" if case.tool_choice else "no",
                    "yes" if case.arguments_exact else "no",
                    f"{case.argument_keys:.0%}",
                )
            )
        total = self.totals()
        rows.append(
            (
                f"total ({total['cases']} cases)",
                "",
                f"{total['errors']} errors" if total["errors"] else "",
                f"{total['toolChoice']:.0%}",
                f"{total['argumentsExact']:.0%}",
                f"{total['argumentKeys']:.0%}",
            )
        )
        cut = [tuple(_short(c, 40) for c in row) for row in rows]
        widths = [max(len(row[i]) for row in cut) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cut]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.insert(len(lines) - 1, "  ".join("-" * w for w in widths))
        return "\n".join(line.rstrip() for line in lines) + f"\nmodel: {self.model}"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reply_label(reply: dict[str, Any] | None) -> str:
    if reply is None:
        return "(nothing)"
    if reply.get("type") == "tool":
        return str(reply.get("name"))
    return "(answer)"


async def _step(
    model: ModelAdapter, request: ModelRequest, signal: AbortSignal | None
) -> dict[str, Any]:
    raw = model.respond(request)
    if signal is not None:
        raw = await signal.race(raw)
    else:
        raw = await raw
    return dict(parse_reply(json.loads(json.dumps(raw, allow_nan=False))))


async def run_eval(
    cases: EvalSet | Any,
    model: ModelAdapter,
    *,
    tools: Any = None,
    instructions: str | None = None,
    signal: AbortSignal | None = None,
) -> EvalReport:
    """Run every case against ``model`` (no tool runs: results are scripted).

    Args:
        cases: an :class:`EvalSet`, or JSON data for :func:`load_eval_set`.
        model: any model adapter (``respond(request)``); each case's steps get the built-in
            instructions plus the site's (``instructions`` here, else the set's), exactly as
            the agent sends them.
        tools: the page's tools for a set without any (see :func:`load_eval_set`).
        signal: aborts the run between and during model calls.

    Returns:
        An :class:`EvalReport`.

    Raises:
        EvalSetError: the cases do not follow eval set v1.
        AbortedError: ``signal`` aborted.
    """
    eval_set = cases if isinstance(cases, EvalSet) else load_eval_set(cases, tools=tools)
    site = instructions if instructions is not None else eval_set.instructions
    system = build_instructions(site)
    results: list[CaseResult] = []
    for case in eval_set.cases:
        if signal is not None:
            signal.throw_if_aborted()
        result = CaseResult(case.name)
        started = monotonic_ms()
        messages = [dict(m) for m in case.messages]
        wanted: list[ExpectedCall | None] = list(case.expected) or [None]
        try:
            for index, expected in enumerate(wanted):
                request = ModelRequest(system, list(messages), list(case.tools), signal=signal)
                reply = await _step(model, request, signal)
                step = _score(expected, reply)
                result.steps.append(step)
                if not step.tool_choice or expected is None:
                    break
                call_id = f"eval_{index + 1}"
                given = reply.get("arguments")
                coerced = coerce_arguments(given)
                arguments = given if coerced is None else coerced
                messages.append(tool_call_message(call_id, reply["name"], arguments))
                text = case.results[index] if index < len(case.results) else DEFAULT_RESULT
                messages.append(tool_result_message(call_id, reply["name"], text))
            for expected in wanted[len(result.steps) :]:  # not reached: wrong
                result.steps.append(StepResult(expected, None, False, False, 0.0))
        except (AbortedError, asyncio.CancelledError):
            raise
        except SiteAgentError as exc:
            result.error = {"code": exc.code, "message": exc.message}
        except Exception as exc:  # noqa: BLE001 - a failing model fails its case, not the run
            result.error = {"code": "model-error", "message": f"{type(exc).__name__}: {exc}"}
        if result.error is not None:
            reached = len(result.steps)
            result.steps.extend(StepResult(e, None, False, False, 0.0) for e in wanted[reached:])
        result.duration_ms = duration_ms(started)
        results.append(result)
    return EvalReport(getattr(model, "name", "model"), results)


def _score(expected: ExpectedCall | None, reply: dict[str, Any]) -> StepResult:
    if expected is None:
        ok = reply.get("type") == "answer"
        return StepResult(None, reply, ok, ok, 1.0 if ok else 0.0)
    if reply.get("type") != "tool" or reply.get("name") != expected.name:
        return StepResult(expected, reply, False, False, 0.0)
    # Scored on what the agent would run: a JSON string that holds an object is that object,
    # "" means no arguments (pysite_agent.core.validation.coerce_arguments).
    raw = reply.get("arguments")
    coerced = coerce_arguments(raw)
    arguments = raw if coerced is None else coerced
    exact = arguments_match(expected.arguments, arguments)
    return StepResult(expected, reply, True, exact, key_score(expected.arguments, arguments))
