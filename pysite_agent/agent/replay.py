"""``replay(trace)``: run a recorded run's tool calls again, without the model (README, "The
Python API").

Each recorded ``tool-call`` step is re-run, in order, against the current tools, under the same
confirmation rules as a live run, starting from a clean untrusted-output state. Replay executes
tools, so it lives with the bridge, the only execution gateway.

A replayed step ``matches`` when it ends the way the recording did: the same tool ran with the
same arguments and its result text equals the recorded one; or the call was denied in both.
``differences`` counts the steps that do not match.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pysite_agent.agent import _gateway as gateway
from pysite_agent.agent.agent import resolve_tools
from pysite_agent.core.signals import AbortedError, AbortSignal, any_signal
from pysite_agent.core.types import Confirm, ConfirmRequest, Decision, ToolCall, canonical_json
from pysite_agent.core.wire import problems

ReplayStatus = Literal["ran", "denied", "missing-tool", "invalid-arguments"]


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """One replayed call.

    Attributes:
        call: the recorded call (id, name, arguments).
        status: ``ran``, ``denied``, ``missing-tool`` or ``invalid-arguments``.
        text: the result text now (``None`` unless it ran).
        recorded: the recorded result text (``None`` if the call did not run then).
        matches: see the module docstring.
        decision: the decision now (``None`` when it did not get that far).
    """

    call: ToolCall
    status: ReplayStatus
    text: str | None
    recorded: str | None
    matches: bool
    decision: Decision | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "call": self.call.to_json(),
            "status": self.status,
            "text": self.text,
            "recorded": self.recorded,
            "matches": self.matches,
        }
        if self.decision is not None:
            out["decision"] = self.decision.to_json()
        return out


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """``steps`` (one per recorded call) and ``differences`` (steps that do not match)."""

    steps: list[ReplayStep]
    differences: int

    def to_json(self) -> dict[str, Any]:
        return {"steps": [s.to_json() for s in self.steps], "differences": self.differences}


@dataclass(frozen=True, slots=True)
class _Recorded:
    call: ToolCall
    allowed: bool | None
    outcome: str | None
    text: str | None


def _load(trace: Any) -> dict[str, Any]:
    """The trace as a dict, checked against ``trace-v1.schema.json``.

    Raises:
        ValueError: not JSON, or not a valid trace v1 (the first problems are named).
    """
    if isinstance(trace, str | bytes):
        try:
            trace = json.loads(trace)
        except ValueError as exc:
            raise ValueError(f"not a trace: {exc}") from None
    found = problems("trace-v1", trace)
    if found:
        raise ValueError("not a valid trace v1: " + "; ".join(found[:3]))
    data: dict[str, Any] = trace
    return data


def recorded_calls(trace: Any) -> list[_Recorded]:
    """The recorded tool calls with their decision and result, in order.

    Raises:
        ValueError: ``trace`` is not a valid trace v1 (dict or JSON text).
    """
    data = _load(trace)
    calls: list[_Recorded] = []
    index: dict[str, int] = {}
    for step in data["steps"]:
        if not isinstance(step, dict):
            continue
        kind = step.get("kind")
        if kind == "tool-call" and isinstance(step.get("call"), dict):
            raw = step["call"]
            call = ToolCall(str(raw.get("id", "")), str(raw.get("name", "")), raw.get("arguments"))
            index[call.id] = len(calls)
            calls.append(_Recorded(call, None, None, None))
        elif kind == "decision" and step.get("callId") in index:
            i = index[step["callId"]]
            calls[i] = _Recorded(calls[i].call, step.get("allowed") is True, None, None)
        elif kind == "tool-result" and step.get("callId") in index:
            i = index[step["callId"]]
            text = step.get("text") if isinstance(step.get("text"), str) else None
            calls[i] = _Recorded(calls[i].call, calls[i].allowed, step.get("outcome"), text)
    return calls


def _call_key(call: ToolCall) -> tuple[str, str, str]:
    return (call.id, call.name, canonical_json(call.arguments))


def recorded_decisions(trace: Any) -> Confirm:
    """A ``confirm`` that answers each call as the visitor did in ``trace``.

    A call is matched by its id, tool name *and* arguments; anything not recorded as allowed,
    or recorded both ways (a tampered trace), is denied.

    Raises:
        ValueError: ``trace`` is not a valid trace v1.
    """
    answers: dict[tuple[str, str, str], bool] = {}
    for rec in recorded_calls(trace):
        key = _call_key(rec.call)
        allowed = rec.allowed is True
        answers[key] = allowed and answers.get(key, True)

    def confirm(request: ConfirmRequest) -> bool:
        return answers.get(_call_key(request.call), False)

    return confirm


async def replay(
    trace: Any,
    *,
    tools: Any = None,
    confirm: Confirm | None = None,
    pre_approved: Iterable[str] = (),
    tool_timeout_ms: int = 30_000,
    max_result_chars: int = 4_000,
    signal: AbortSignal | None = None,
    on_confirm_request: Callable[[ConfirmRequest], Any] | None = None,
) -> ReplayResult:
    """Re-run the tool calls of ``trace`` (a trace v1 dict or JSON text) without the model.

    Only calls that reached the gateway (``tool-call`` steps) are re-run: an ``invalid-call``
    step (including ``already-done``, a repeat that was not run: ``agent/_repeats.py``) ran
    nothing, so replaying it runs nothing either.

    Args:
        tools: a tool source or list of tools (``None``: the browser's
            ``document.modelContext``).
        confirm: as in a live run; without it, calls that need asking are denied (rule 4).
        on_confirm_request: called with each confirm request before ``confirm``.
        tool_timeout_ms: per-call timeout in milliseconds.
        max_result_chars: results are cut to this many characters, as in the live run.

    Raises:
        ValueError: ``trace`` is not a valid trace v1 (checked against its JSON Schema).
        SiteAgentError: ``no-tools`` when ``tools`` is ``None`` outside a browser;
            ``aborted`` when ``signal`` aborts.
    """
    from pysite_agent.core.errors import SiteAgentError

    recorded = recorded_calls(trace)
    source = resolve_tools(tools)
    approved = frozenset([pre_approved] if isinstance(pre_approved, str) else pre_approved)
    run_signal = any_signal(signal).signal
    after_untrusted = False
    steps: list[ReplayStep] = []
    try:
        for rec in recorded:
            run_signal.throw_if_aborted()
            tools_now = list(await run_signal.race(source.get_tools()))
            recorded_text = rec.text if rec.outcome in ("ran", "threw", "timeout") else None
            checked = gateway.check_call(rec.call, tools_now)
            if isinstance(checked, gateway.InvalidCall):
                status: ReplayStatus = (
                    "missing-tool" if checked.code == "unknown-tool" else "invalid-arguments"
                )
                steps.append(ReplayStep(rec.call, status, None, recorded_text, False))
                continue
            tool, args = checked
            decision = await gateway.decide(
                rec.call,
                tool,
                args,
                confirm=confirm,
                pre_approved=approved,
                after_untrusted=after_untrusted,
                signal=run_signal,
                on_request=on_confirm_request,
            )
            if not decision.allowed:
                steps.append(
                    ReplayStep(
                        rec.call, "denied", None, recorded_text, rec.allowed is False, decision
                    )
                )
                continue
            if not await gateway.still_bound(source, tool, run_signal):
                steps.append(
                    ReplayStep(rec.call, "ran", gateway.STALE_TEXT, recorded_text, False, decision)
                )
                continue
            execution = await gateway.execute(
                source,
                tool,
                args,
                timeout_ms=tool_timeout_ms,
                max_result_chars=max_result_chars,
                signal=run_signal,
            )
            if execution.untrusted:
                after_untrusted = True
            matches = recorded_text is not None and execution.text == recorded_text
            steps.append(
                ReplayStep(rec.call, "ran", execution.text, recorded_text, matches, decision)
            )
    except AbortedError:
        raise SiteAgentError("aborted", "The replay was aborted.") from None
    return ReplayResult(steps, sum(1 for s in steps if not s.matches))
