"""The one place a tool call is decided and executed, shared by live runs and :func:`replay`.

A call passes, in order: lookup by name (rule 1) -> argument validation (rule 1) -> the policy
(rules 2-5) and, when needed, the visitor (who gets a copy of the arguments: what runs is what
was decided, see :func:`frozen`) -> the confirmation binding (README, after the safety
rules: the tool's key and content must be unchanged, else ``stale-tools``; a card whose tool
the page withdraws while it is open ends as a denial, see :func:`tool_unchanged`) ->
execution with the per-call timeout (rule 7; waiting for the visitor does not count) -> result
text, truncation and fencing (rule 6).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pysite_agent.core import policy
from pysite_agent.core.fencing import fence
from pysite_agent.core.lines import confirm_lines
from pysite_agent.core.results import result_text, truncate
from pysite_agent.core.signals import AbortedError, AbortSignal, any_signal
from pysite_agent.core.trace import duration_ms, monotonic_ms
from pysite_agent.core.types import (
    Confirm,
    ConfirmRequest,
    Decision,
    DenialCause,
    RegisteredTool,
    ToolCall,
    ToolSource,
)
from pysite_agent.core.validation import (
    InvalidSchemaError,
    Problem,
    check_arguments,
    check_output,
)

Outcome = Literal["ran", "threw", "timeout", "stale-tools", "aborted"]
InvalidCode = Literal["unknown-tool", "invalid-arguments", "invalid-schema"]


@dataclass(frozen=True, slots=True)
class InvalidCall:
    """A call that was not run because it named no tool or its arguments failed the schema."""

    code: InvalidCode
    message: str
    problems: tuple[Problem, ...]
    model_text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "problems": [p.to_json() for p in self.problems],
        }


@dataclass(frozen=True, slots=True)
class Execution:
    """The outcome of running (or trying to run) an allowed call."""

    outcome: Outcome
    text: str
    is_error: bool
    navigated: bool
    untrusted: bool
    duration_ms: float

    def model_text(self, tool_name: str) -> str:
        return fence(tool_name, self.text) if self.untrusted else self.text


def _consume(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


def _describe(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # noqa: BLE001 - an exception whose str() fails
        return type(exc).__name__


def frozen(arguments: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of checked arguments (JSON data), made at each hand-over.

    The arguments that run are the arguments decided (README, safety rules): the gateway keeps
    its own copy from :func:`check_call` on, gives the visitor's ``confirm`` (and the
    confirmation card, through its event) another, and the tool a third. An edit made during
    the confirmation, by an event listener, or by the tool itself changes only that copy,
    never what runs, the trace, or the conversation.
    """
    return copy.deepcopy(arguments)


def ambiguous_names(tools: Sequence[RegisteredTool]) -> set[str]:
    """The names that more than one listed tool has."""
    seen: set[str] = set()
    twice: set[str] = set()
    for tool in tools:
        (twice if tool.name in seen else seen).add(tool.name)
    return twice


def unambiguous(tools: Sequence[RegisteredTool]) -> list[RegisteredTool]:
    """``tools`` without any tool whose name is listed more than once.

    Two listings under one name (a tools object, or a page, that lists a name twice) are an
    ambiguity this refuses rather than resolves: the name is not offered to the model, and
    :func:`check_call` runs neither listing. Taking the first or the strictest listing could
    still run the other one's code (the call reaches the source by name), and a page that
    lists a name twice has a bug its owner should see; refusing can never run the looser one
    (say, a read-only listing in front of one that charges a card).
    """
    twice = ambiguous_names(tools)
    return [tool for tool in tools if tool.name not in twice] if twice else list(tools)


def find_tool(tools: Sequence[RegisteredTool], name: str) -> RegisteredTool | None:
    """The one tool listed as ``name``; ``None`` when there is none or more than one."""
    found = [tool for tool in tools if tool.name == name]
    return found[0] if len(found) == 1 else None


def check_call(
    call: ToolCall, tools: Sequence[RegisteredTool]
) -> tuple[RegisteredTool, dict[str, Any]] | InvalidCall:
    """The tool and the arguments as a dict, or why the call is invalid (rule 1)."""
    tool = find_tool(tools, call.name)
    if tool is None and call.name in ambiguous_names(tools):
        message = (
            f"The page lists two tools named {call.name!r}, and they cannot be told apart. "
            "Nothing was run."
        )
        return InvalidCall("unknown-tool", message, (), f"{message} Use another tool.")
    if tool is None:
        names = ", ".join(t.name for t in unambiguous(tools)) or "none"
        message = f"There is no tool named {call.name!r} on this page."
        return InvalidCall(
            "unknown-tool", message, (), f"{message} Available tools: {names}. Nothing was run."
        )
    try:
        check = check_arguments(tool.input_schema, call.arguments)
    except InvalidSchemaError as exc:
        message = f"The tool {tool.name!r} cannot be called: its {exc}"
        return InvalidCall("invalid-schema", message, (), f"{message}. Nothing was run.")
    if check.arguments is None or check.problems:
        problems = check.problems
        more = check.total_problems - len(problems)
        message = f"The arguments for {tool.name!r} are invalid."
        listing = json.dumps([p.to_json() for p in problems], ensure_ascii=False)
        extra = f" ({more} more problems not shown)" if more > 0 else ""
        return InvalidCall(
            "invalid-arguments",
            message,
            problems,
            f"{message} Nothing was run. Problems (JSON pointer path and message){extra}: "
            f"{listing}. Correct the arguments and call the tool again.",
        )
    return tool, frozen(check.arguments)


async def decide(
    call: ToolCall,
    tool: RegisteredTool,
    args: dict[str, Any],
    *,
    confirm: Confirm | None,
    pre_approved: Collection[str],
    after_untrusted: bool,
    signal: AbortSignal,
    on_request: Callable[[ConfirmRequest], Any] | None = None,
    interrupt: asyncio.Future[DenialCause] | None = None,
) -> Decision:
    """Apply the policy and, when it says so, ask the visitor (rules 2-5).

    ``interrupt`` ends a pending question without the visitor's answer: when it gets a
    :data:`~pysite_agent.core.types.DenialCause` first, the call is denied with that ``cause``
    and the request's ``signal`` aborts (so a card closes). An answer that arrives together
    with a denial keeps the cause.

    Raises:
        AbortedError: the run was aborted while the visitor was being asked.
    """
    outcome = policy.evaluate(tool, pre_approved=pre_approved, after_untrusted=after_untrusted)
    if outcome.decision is not None:
        return outcome.decision
    assert outcome.ask_reason is not None
    asking = any_signal(signal)
    request = ConfirmRequest(
        call=ToolCall(call.id, call.name, frozen(args)),
        tool=tool,
        reason=outcome.ask_reason,
        lines=confirm_lines(args, tool.input_schema),
        signal=asking.signal,
    )
    if on_request is not None and confirm is not None:
        on_request(request)
    if interrupt is None:
        return await signal.race(policy.ask(confirm, request))
    answer = asyncio.ensure_future(policy.ask(confirm, request))
    try:
        await signal.race(asyncio.wait((answer, interrupt), return_when=asyncio.FIRST_COMPLETED))
    except BaseException:
        answer.cancel()
        answer.add_done_callback(_consume)
        raise
    if answer.done():
        decision = answer.result()
        if interrupt.done() and not decision.allowed and decision.by == "visitor":
            decision = Decision(False, "visitor", decision.reason, interrupt.result())
        return decision
    cause = interrupt.result()
    asking.abort(cause)
    answer.cancel()
    answer.add_done_callback(_consume)
    return Decision(False, "visitor", request.reason, cause)


def tool_unchanged(current: Sequence[RegisteredTool], tool: RegisteredTool) -> bool:
    """Whether ``tool`` is listed in ``current`` as the same registration (its ``key``) with the
    same normalized content (README, decision binding). Other tools may have changed: a route
    that registers or unregisters its own tools does not touch this one's decision."""
    listed = find_tool(current, tool.name)
    return (
        listed is not None and listed.key == tool.key and listed.fingerprint() == tool.fingerprint()
    )


async def still_bound(source: ToolSource, tool: RegisteredTool, signal: AbortSignal) -> bool:
    """Whether ``tool`` (same key, same content) is still listed by ``source``, checked on a
    fresh listing after the decision (:func:`tool_unchanged`).

    Raises:
        AbortedError: ``signal`` aborted while the source listed its tools.
    """
    return tool_unchanged(await signal.race(source.get_tools()), tool)


def watch_tool(
    source: ToolSource, tool: RegisteredTool, interrupt: asyncio.Future[DenialCause]
) -> Callable[[], None]:
    """While ``tool``'s call is being decided: end a pending card with the cause ``withdrawn``
    when the page unregisters the tool, registers it again or changes it (README, decision
    binding). Each change of the source's tools is checked on a fresh listing; a change to
    other tools, or a late event for a change already listed, keeps the card. Returns the
    function that stops watching (and cancels a check in flight)."""
    subscribe = getattr(source, "on_change", None)
    if not callable(subscribe):
        return lambda: None
    checks: set[asyncio.Future[None]] = set()

    async def check() -> None:
        try:
            current = await source.get_tools()
        except Exception:  # noqa: BLE001 - a listing that fails withdraws nothing
            return  # (the check after an Allow lists again and refuses a changed tool)
        if not tool_unchanged(current, tool) and not interrupt.done():
            interrupt.set_result("withdrawn")

    def changed(*_: Any) -> None:
        if interrupt.done():
            return
        task = asyncio.ensure_future(check())
        checks.add(task)
        task.add_done_callback(checks.discard)

    unsubscribe = subscribe(changed)

    def stop() -> None:
        unsubscribe()
        for task in list(checks):
            task.cancel()

    return stop


def output_mismatch_note(problems: Sequence[Problem]) -> str:
    """The line added to a result that fails the tool's ``outputSchema`` ("" when it fits).

    The result still reaches the model (it may be useful), flagged so that the model does not
    take its shape for granted (WebMCP ``outputSchema``, spec PR #254).
    """
    if not problems:
        return ""
    listing = "; ".join(f"{p.path or '/'}: {p.message}" for p in problems)
    return (
        "\n[output-schema-mismatch] This result does not match the tool's outputSchema "
        f"({listing}). Do not rely on its shape; tell the visitor if it matters."
    )


STALE_ERROR_NAME = "StaleToolsError"
"""The error ``name`` a tool source raises when the page refuses a call because the tool's
registration changed after the call was decided (worker mode's page-side check, see
``web/runtime/worker-host.js``): the call's outcome is ``stale-tools``, as for the check here."""

STALE_TEXT = (
    "stale-tools: the page's tools changed after this call was decided, so it was not run. "
    "Look at the current tools and ask again if it is still needed."
)


DENIED_TEXT = (
    "The visitor denied this call, so it was not run. Do not try it again in another way; "
    "tell the visitor it was not done."
)
NO_CONFIRM_TEXT = (
    "This call needs the visitor's approval and no one can approve it here, so it was not run."
)
WITHDRAWN_TEXT = (
    "The page withdrew or changed this tool while the visitor was deciding, so this call was "
    "not run. Use only the tools listed now; if the visitor still wants it, say what changed."
)


def denial_text(decision: Decision) -> str:
    """What the model reads for a call that was not allowed: denied by the visitor, withdrawn
    by the page while the card was open, or with no one to ask."""
    if decision.cause == "withdrawn":
        return WITHDRAWN_TEXT
    return DENIED_TEXT if decision.by == "visitor" else NO_CONFIRM_TEXT


VISITOR_WAIT_MS = 600_000
"""How long (ms) a form tool that waits for the visitor's submit may wait (10 minutes)."""


def _minutes(ms: int) -> str:
    minutes = ms / 60_000
    if minutes >= 1 and minutes == int(minutes):
        return f"{int(minutes)} minute{'s' if minutes != 1 else ''}"
    return f"{ms / 1000:g} s"


async def execute(
    source: ToolSource,
    tool: RegisteredTool,
    args: dict[str, Any],
    *,
    timeout_ms: int,
    max_result_chars: int,
    signal: AbortSignal,
    visitor_wait_ms: int = VISITOR_WAIT_MS,
) -> Execution:
    """Run an allowed call with the per-call timeout; errors and timeouts become error results.

    ``timeout_ms`` bounds the time until the tool's awaitable completes; a tool that blocks the
    event loop (synchronous work) cannot be interrupted while it blocks, and its late result is
    discarded. On timeout or abort the tool's signal is aborted and its task cancelled. A tool
    that ``waits_for_visitor`` (a form the visitor submits) gets ``visitor_wait_ms`` instead
    when that is longer (waiting for the visitor does not count, README rule 7), and its
    timeout result says that the form is still filled in on the page.

    Raises:
        AbortedError: the run was aborted while the tool ran (the tool's signal is aborted too).
    """
    controller = any_signal(signal)
    started = monotonic_ms()
    untrusted = tool.untrusted
    limit_ms = max(timeout_ms, visitor_wait_ms) if tool.waits_for_visitor else timeout_ms
    task = asyncio.ensure_future(source.execute_tool(tool, frozen(args), signal=controller.signal))
    try:
        await signal.race(asyncio.wait((task,), timeout=limit_ms / 1000))
    except AbortedError:
        controller.abort(signal.reason)
        task.cancel()
        task.add_done_callback(_consume)
        raise
    if not task.done():
        # Timed out: the result is discarded even if the tool ignores the cancellation.
        controller.abort("timeout")
        task.cancel()
        task.add_done_callback(_consume)
        text = f"{tool.name} did not finish within {timeout_ms} ms and was stopped."
        if tool.waits_for_visitor:
            text = (
                f"{tool.name}: the form on the page was filled in, but the visitor did not "
                f"send it within {_minutes(limit_ms)}, so the agent stopped waiting. The form "
                "stays filled in; the visitor can still check it and send it."
            )
        return Execution("timeout", text, True, False, untrusted, duration_ms(started))
    try:
        value = task.result()
    except asyncio.CancelledError:
        text = f"{tool.name} was cancelled before it finished."
        return Execution("threw", text, True, False, untrusted, duration_ms(started))
    except Exception as exc:  # noqa: BLE001 - a failing tool is a result for the model
        if getattr(exc, "name", None) == STALE_ERROR_NAME:
            # The page refused the call: the registration changed since it was decided.
            return Execution("stale-tools", STALE_TEXT, True, False, False, duration_ms(started))
        detail = _describe(exc)
        text = truncate(f"{tool.name} failed: {detail}", max_result_chars)
        return Execution("threw", text, True, False, untrusted, duration_ms(started))
    converted = result_text(value)
    text = truncate(converted.text, max_result_chars)
    if tool.output_schema is not None and not converted.is_error and not converted.navigated:
        text += output_mismatch_note(check_output(tool.output_schema, value))
    return Execution(
        "ran",
        text,
        converted.is_error,
        converted.navigated,
        untrusted,
        duration_ms(started),
    )
