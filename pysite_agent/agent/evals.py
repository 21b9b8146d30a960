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

``expectedCall`` is webmcp-evals' expected-call tree (:mod:`~pysite_agent.agent.eval_judge`):
calls ``{"functionName", "arguments"?, "result"?, "mockOutput"?, "optional"?}`` and
``{"ordered": [...]}``/``{"unordered": [...]}`` groups, nested; ``null`` or ``[]``: the model
should answer without a tool. Every case needs ``messages`` (or ``message``) and
``expectedCall``; an unknown key anywhere (in the set, a case, an expected call, or a ``$``
constraint), a ``$type`` that names no JSON type or a ``$pattern`` that does not compile is an
:class:`EvalSetError` that names the case and the key.

**Each case runs as a trajectory** (as webmcp-evals' local runs do): the model is asked, and
after each call asked again with the call's result, until it answers or ``max_steps`` requests
were made (default 6, webmcp-evals' ``--max-steps``). Without a live page no tool runs: a call
returns the ``mockOutput`` of the first unused expected call of that name (by name only, as
webmcp-evals' ``MockResolver``), else that expected call's recorded result (``results[i]``, the
i-th expected call in the author's order), else ``"ok"`` (webmcp-evals returns ``{}``); with
``execute=`` the page's tools run. The calls made, with their results, then get webmcp-evals'
**verdict** (``pass``/``fail``; ``error`` when the model or a tool failed): subset objects,
strict arrays, groups, optional calls, result constraints; an extra call fails.

Finer scores, per required expected call (each against the first call of its name the model
made that no other expected call took; the order is the verdict's business) and then per case
(every step must pass for the booleans; the per-key score is the mean):

- **tool choice**: the model called the expected tool (by name), or called none when no call
  was expected.
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
  wrong. An expected call without ``arguments`` (or ``null``) takes any arguments: exact, 1.0.

Totals are the means over cases. A model error (e.g. ``model-unavailable``) fails the case and
is reported with it. :func:`run_eval` works with any model adapter: Chrome's on-device model in
the page, the proxy (on CPython with an injected ``fetch``), :func:`~pysite_agent.custom`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysite_agent.agent.eval_judge import (
    Call,
    ExpectedCallError,
    Node,
    judge,
    match_argument,
    parse_expected,
)
from pysite_agent.agent.eval_report import CaseResult, EvalReport, StepResult
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
    "DEFAULT_MAX_STEPS",
    "EvalCase",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "Execute",
    "ListTools",
    "PageError",
    "arguments_match",
    "key_score",
    "leaves",
    "load_eval_set",
    "run_eval",
    "tool_definitions",
]

DEFAULT_RESULT = "ok"
"""The result of a call in a local run when the case gives none (webmcp-evals returns ``{}``)."""

DEFAULT_MAX_STEPS = 6
"""Model requests per case (webmcp-evals' default ``--max-steps``, ``src/backends/vercel.ts``)."""


class EvalSetError(ValueError):
    """A case set that does not follow eval set v1; the message says where."""


class PageError(RuntimeError):
    """A live page's tools could not be listed or run (raised by :data:`Execute` or
    :data:`ListTools`); the case ends with the error code ``page-error``."""


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One case: its conversation (protocol v1 messages), tools, expected-call tree
    (:mod:`~pysite_agent.agent.eval_judge`) and recorded results (one per expected call, in
    the author's order)."""

    name: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    expected: tuple[Node, ...]
    results: tuple[str, ...]

    @property
    def calls(self) -> tuple[Call, ...]:
        """The expected calls in the author's order (groups flattened)."""
        return leaves(self.expected)


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


def tool_definitions(raw: Any) -> tuple[dict[str, Any], ...]:
    """Tools as the model sees them (protocol v1 definitions) from a list of
    ``{name, description, inputSchema?, title?, annotations?}`` or ``{"tools": [...]}``.

    Raises:
        EvalSetError: a tool without a name, a bad ``inputSchema``, or names not unique.
    """
    return _tools(raw, "tools")


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


_OPERATORS = frozenset({"$pattern", "$contains", "$gt", "$gte", "$lt", "$lte", "$type", "$any"})
_TYPE_NAMES = frozenset({"string", "number", "boolean", "array", "object", "null"})
_CASE_KEYS = frozenset({"name", "messages", "message", "expectedCall", "results", "tools"})
_SET_KEYS = frozenset({"version", "instructions", "tools", "cases"})


def _check_constraints(value: Any, where: str) -> None:
    """Refuse an unknown ``$`` operator, a ``$type`` that names no type or a ``$pattern`` that
    does not compile, at load time (a typo must not pass or fail silently)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_constraints(item, f"{where}[{i}]")
        return
    if not isinstance(value, Mapping):
        return
    if value and all(isinstance(k, str) and k.startswith("$") for k in value):
        for key, want in value.items():
            if key not in _OPERATORS:
                raise EvalSetError(f"{where}: unknown constraint {key!r}")
            if key == "$type" and want not in _TYPE_NAMES:
                raise EvalSetError(f"{where}: $type {want!r} is not a JSON type")
            if key == "$pattern":
                if not isinstance(want, str):
                    raise EvalSetError(f"{where}: $pattern must be a string")
                try:
                    match_argument(value, "")
                except ExpectedCallError as exc:
                    raise EvalSetError(f"{where}: {exc}") from None
        return
    for key, item in value.items():
        _check_constraints(item, f"{where}.{key}")


def _expected(raw: Any, where: str) -> tuple[Node, ...]:
    try:
        nodes = parse_expected(json.loads(json.dumps(raw)), where)
    except ExpectedCallError as exc:
        raise EvalSetError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise EvalSetError(f"{where}: not JSON data ({exc})") from None
    for at, call in _leaves_at(nodes, where):
        _check_constraints(call.arguments, f"{at}.arguments")
        if call.has_result:
            _check_constraints(call.result, f"{at}.result")
    return nodes


def _leaves_at(nodes: tuple[Node, ...], where: str) -> list[tuple[str, Call]]:
    out: list[tuple[str, Call]] = []
    for i, node in enumerate(nodes):
        if isinstance(node, Call):
            out.append((f"{where}[{i}]", node))
        else:
            kind = "ordered" if node.ordered else "unordered"
            out += _leaves_at(node.nodes, f"{where}[{i}].{kind}")
    return out


def leaves(nodes: tuple[Node, ...]) -> tuple[Call, ...]:
    """The calls of an expected-call tree in the author's order (groups flattened)."""
    return tuple(call for _, call in _leaves_at(nodes, ""))


def load_eval_set(data: Any, *, tools: Any = None, check_tools: bool = True) -> EvalSet:
    """Parse a case set (JSON data, see the module docstring).

    Args:
        data: ``{"tools", "cases", "instructions"?, "version"?}``, or a bare list of cases.
        tools: the page's tools when ``data`` has none (a list, or ``{"tools": [...]}``).
        check_tools: refuse an expected tool that is not among the case's tools (off for a
            live page, whose tools may appear only after a call, as on webmcp-evals' doors
            demo).

    Raises:
        EvalSetError: anything that does not follow eval set v1 (the message says where), a
            case that names an expected tool that is not among its tools, no tools at all, or
            nesting deeper than :data:`MAX_DEPTH` levels.
    """
    _check_depth(data)
    if isinstance(data, list):
        data = {"cases": data}
    if not isinstance(data, Mapping):
        raise EvalSetError("a case set is an object {tools, cases} or a list of cases")
    unknown = sorted(str(k) for k in set(data) - _SET_KEYS)
    if unknown:
        has = _names(_SET_KEYS)
        raise EvalSetError(f"unknown key {unknown[0]!r} in the case set (it has {has})")
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
        given = raw.get("name")
        name = given if isinstance(given, str) and given else f"case {i + 1}"
        try:
            cases.append(_case(raw, where, name, shared, check_tools))
        except EvalSetError as exc:
            if name is not given:
                raise
            raise EvalSetError(f"case {name!r}: {exc}") from None
    return EvalSet(tuple(cases), instructions)


MAX_DEPTH = 100
"""Levels of nesting a case set may have (objects and lists); deeper is refused before any
recursive step could overflow the stack (in Pyodide that kills the interpreter)."""


def _check_depth(data: Any) -> None:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise EvalSetError(f"the case set is nested too deeply (more than {MAX_DEPTH} levels)")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)


def _names(keys: frozenset[str]) -> str:
    return ", ".join(sorted(keys))


def _case(
    raw: Mapping[str, Any],
    where: str,
    name: str,
    shared: tuple[dict[str, Any], ...] | None,
    check_tools: bool,
) -> EvalCase:
    unknown = sorted(str(k) for k in set(raw) - _CASE_KEYS)
    if unknown:
        raise EvalSetError(f"{where}: unknown key {unknown[0]!r} (a case has {_names(_CASE_KEYS)})")
    if "messages" not in raw and "message" not in raw:
        raise EvalSetError(f"{where}: a case needs 'messages'")
    if "expectedCall" not in raw:
        raise EvalSetError(f"{where}: a case needs 'expectedCall' (null: answer without a tool)")
    case_tools = _tools(raw["tools"], f"{where}.tools") if "tools" in raw else shared
    if case_tools is None:
        raise EvalSetError(f"{where}: no tools (give 'tools' in the set, the case, or --tools)")
    messages = _messages(raw.get("messages", raw.get("message")), f"{where}.messages")
    expected = _expected(raw.get("expectedCall"), f"{where}.expectedCall")
    names = {t["name"] for t in case_tools}
    for call in leaves(expected) if check_tools else ():
        if call.name not in names:
            raise EvalSetError(f"{where}: expected tool {call.name!r} is not among its tools")
    results = raw.get("results", [])
    if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
        raise EvalSetError(f"{where}.results: a list of texts")
    return EvalCase(name, messages, case_tools, expected, tuple(results))


# -- scoring ---------------------------------------------------------------------------------


def _is_constraint(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(k.startswith("$") for k in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def arguments_match(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` equals ``expected`` after canonical JSON (numbers by value), with
    webmcp-evals constraint objects allowed anywhere in ``expected`` (module docstring)."""
    if _is_constraint(expected):
        return match_argument(expected, actual)  # the same constraints as the verdict
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

Execute = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Runs a tool on a live page: ``await execute(name, arguments)`` returns its result (any
JSON value; a text that holds JSON is read as that JSON, as webmcp-evals does)."""


ListTools = Callable[[], Awaitable[Sequence[dict[str, Any]]]]
"""Lists a live page's tools now, as protocol v1 definitions (:func:`tool_definitions`)."""


class _Results:
    """What a call returns in a local run: the ``mockOutput`` of the first expected call of
    that name not yet used (webmcp-evals' ``MockResolver``, by name only, groups flattened),
    else that call's recorded result (``results[i]``), else ``"ok"``; a call that stands for
    no expected call gets ``"ok"`` too."""

    def __init__(self, case: EvalCase) -> None:
        self.calls = case.calls
        self.recorded = case.results
        self.used = [False] * len(self.calls)

    def next(self, name: str) -> Any:
        for i, call in enumerate(self.calls):
            if self.used[i] or call.name != name:
                continue
            self.used[i] = True
            if call.has_mock_output:  # a given null too (webmcp-evals' MockResolver)
                return call.mock_output
            return _json_or_text(self.recorded[i]) if i < len(self.recorded) else DEFAULT_RESULT
        return DEFAULT_RESULT


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


async def _step(
    model: ModelAdapter, request: ModelRequest, signal: AbortSignal | None
) -> dict[str, Any]:
    raw = model.respond(request)
    if signal is not None:
        raw = await signal.race(raw)
    else:
        raw = await raw
    return dict(parse_reply(json.loads(json.dumps(raw, allow_nan=False))))


def _arguments(reply: Mapping[str, Any]) -> Any:
    # Judged on what the agent would run: a JSON string that holds an object is that object,
    # "" means no arguments (pysite_agent.core.validation.coerce_arguments).
    given = reply.get("arguments")
    coerced = coerce_arguments(given)
    return given if coerced is None else coerced


async def _trajectory(
    case: EvalCase,
    model: ModelAdapter,
    system: str,
    result: CaseResult,
    *,
    max_steps: int,
    execute: Execute | None,
    list_tools: ListTools | None,
    signal: AbortSignal | None,
) -> None:
    messages = [dict(m) for m in case.messages]
    local = _Results(case)
    for index in range(max_steps):
        tools = list(case.tools) if list_tools is None else list(await list_tools())
        request = ModelRequest(system, list(messages), tools, signal=signal)
        reply = await _step(model, request, signal)
        if reply.get("type") != "tool":
            result.trajectory.append({"type": "answer", "text": str(reply.get("text", ""))})
            result.stopped = "answer"
            return
        name, arguments = str(reply.get("name")), _arguments(reply)
        if execute is not None:
            value = _json_or_text(await execute(name, arguments))
        else:
            value = local.next(name)
        result.trajectory.append(
            {"type": "tool", "name": name, "arguments": arguments, "result": value}
        )
        call_id = f"eval_{index + 1}"
        messages.append(tool_call_message(call_id, name, arguments))
        messages.append(tool_result_message(call_id, name, _as_text(value)))
    result.stopped = "max-steps"


async def run_eval(
    cases: EvalSet | Any,
    model: ModelAdapter,
    *,
    tools: Any = None,
    instructions: str | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    execute: Execute | None = None,
    list_tools: ListTools | None = None,
    signal: AbortSignal | None = None,
) -> EvalReport:
    """Run every case against ``model`` as a trajectory and judge it.

    The model is asked, and after each call asked again with the call's result, until it
    answers or ``max_steps`` requests were made (webmcp-evals' default: 6); then the calls it
    made get webmcp-evals' verdict (:func:`~pysite_agent.agent.eval_judge.judge`) and the finer
    scores (module docstring).

    Args:
        cases: an :class:`EvalSet`, or JSON data for :func:`load_eval_set`.
        model: any model adapter (``respond(request)``); each request gets the built-in
            instructions plus the site's (``instructions`` here, else the set's), exactly as
            the agent sends them.
        tools: the page's tools for a set without any (see :func:`load_eval_set`).
        max_steps: model requests per case, at least 1.
        execute: runs the tools on a live page (:data:`Execute`); without it no tool runs and
            each call returns its ``mockOutput``, its recorded result or ``"ok"``.
        list_tools: the page's tools before each request (:data:`ListTools`), for a page
            whose tools change as it goes; without it, each case's tools.
        signal: aborts the run between and during model calls.

    Returns:
        An :class:`EvalReport`.

    Raises:
        EvalSetError: the cases do not follow eval set v1.
        ValueError: ``max_steps`` below 1.
        AbortedError: ``signal`` aborted.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a whole number of at least 1, got {max_steps!r}")
    eval_set = cases if isinstance(cases, EvalSet) else load_eval_set(cases, tools=tools)
    site = instructions if instructions is not None else eval_set.instructions
    system = build_instructions(site)
    results: list[CaseResult] = []
    for case in eval_set.cases:
        if signal is not None:
            signal.throw_if_aborted()
        result = CaseResult(case.name)
        started = monotonic_ms()
        try:
            await _trajectory(
                case,
                model,
                system,
                result,
                max_steps=max_steps,
                execute=execute,
                list_tools=list_tools,
                signal=signal,
            )
            result.passed = judge(case.expected, _calls(result.trajectory))
        except (AbortedError, asyncio.CancelledError):
            raise
        except SiteAgentError as exc:
            result.error = {"code": exc.code, "message": exc.message}
        except ExpectedCallError as exc:
            result.error = {"code": "eval-set", "message": str(exc)}
        except PageError as exc:
            result.error = {"code": "page-error", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a failing model fails its case, not the run
            result.error = {"code": "model-error", "message": f"{type(exc).__name__}: {exc}"}
        if result.error is not None:
            result.stopped = "error"
        result.steps = _scores(case, result.trajectory, result.error is None)
        result.duration_ms = duration_ms(started)
        results.append(result)
    return EvalReport(getattr(model, "name", "model"), results)


def _calls(trajectory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in trajectory if t["type"] == "tool"]


def _scores(case: EvalCase, trajectory: list[dict[str, Any]], ok: bool) -> list[StepResult]:
    """The finer scores: each required expected call against the first call of its name the
    model made and no other expected call took (order is the verdict's business); an answer
    is expected when there is no required call."""
    calls = _calls(trajectory)
    wanted = [c for c in case.calls if not c.optional]
    if not wanted:
        right = ok and not calls
        reply = _reply(calls[0]) if calls else _answer(trajectory)
        return [StepResult(None, reply, right, right, 1.0 if right else 0.0)]
    used = [False] * len(calls)
    steps = []
    for position, expected in enumerate(wanted):
        found = next(
            (i for i, c in enumerate(calls) if not used[i] and c["name"] == expected.name), None
        )
        if found is None or not ok:
            stand_in = calls[position] if ok and position < len(calls) else None
            reply = _reply(stand_in) if stand_in is not None else None
            steps.append(StepResult(expected, reply, False, False, 0.0))
            continue
        used[found] = True
        arguments = calls[found]["arguments"]
        want = {} if expected.arguments is None else expected.arguments
        exact = expected.arguments is None or arguments_match(want, arguments)
        keys = 1.0 if expected.arguments is None else key_score(want, arguments)
        steps.append(StepResult(expected, _reply(calls[found]), True, exact, keys))
    return steps


def _reply(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool", "name": call["name"], "arguments": call["arguments"]}


def _answer(trajectory: list[dict[str, Any]]) -> dict[str, Any] | None:
    for entry in trajectory:
        if entry["type"] == "answer":
            return {"type": "answer", "text": entry["text"]}
    return None
