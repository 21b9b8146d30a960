"""The bridge: :class:`SiteAgent` and :class:`AgentRun`, the only execution gateway.

Model output is an untrusted request that passes through here, never around it (README, "The
safety rules").
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from typing import Any

from pysite_agent.agent import _gateway as gateway
from pysite_agent.agent._repeats import JustDone, Repeats
from pysite_agent.agent._replies import jsonable as _jsonable
from pysite_agent.agent._replies import strict_reply as _strict_reply
from pysite_agent.core.display import EventLog
from pysite_agent.core.errors import SiteAgentError, model_unavailable
from pysite_agent.core.events import (
    AgentEvent,
    AnswerEvent,
    ConfirmRequestEvent,
    ConfirmResultEvent,
    DoneEvent,
    ErrorEvent,
    RunResult,
    TextDeltaEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from pysite_agent.core.instructions import build_instructions
from pysite_agent.core.signals import AbortController, AbortedError, AbortSignal, any_signal
from pysite_agent.core.trace import TraceRecorder, duration_ms, monotonic_ms
from pysite_agent.core.types import (
    DENIAL_CAUSES,
    Confirm,
    ConfirmRequest,
    Decision,
    DenialCause,
    ModelAdapter,
    ModelRequest,
    RegisteredTool,
    RunStatus,
    ToolCall,
    ToolSource,
    denial_cause,
)
from pysite_agent.core.visit import STATE_VERSION, check_conversation, check_run
from pysite_agent.core.wire import (
    answer_message,
    parse_reply,
    tool_call_message,
    tool_result_message,
    user_message,
)
from pysite_agent.models.base import answered_by as model_answered_by
from pysite_agent.models.base import maybe_await, optional_member, reset_model
from pysite_agent.tools import default_tool_source
from pysite_agent.tools.python_source import as_tool_source

MAX_STEPS_RANGE = (1, 50)
ABORTED_TEXT = "The run was stopped before this call finished; it may not have completed."
NAVIGATED_TEXT = (
    "This call opened another page ({page}); what else it did is not known. The tools "
    "listed now are that page's."
)
NAVIGATED_DENIED_TEXT = (
    "The visitor left the page before answering, so this call was not run. Do not try it "
    "again unless the visitor asks."
)
PAGE_CHANGED_TEXT = (
    "The page changed during this request: the visitor is now on {page}. The conversation "
    "goes on there; use only the tools listed now."
)


def resolve_tools(tools: Any) -> ToolSource:
    """``tools`` as a tool source (``None``: the browser's ``document.modelContext``)."""
    if tools is None:
        return default_tool_source()
    return as_tool_source(tools)


class AgentRun:
    """One run of the agent on one message.

    - ``async for event in run``: every event in order (buffered: iterating late sees all).
    - ``await run.done``: the :class:`~pysite_agent.core.events.RunResult`.
    - ``run.abort()``: stops the model call, a pending confirmation and a running tool; nothing
      executes afterwards (README, rule 7).
    """

    def __init__(
        self,
        agent: SiteAgent,
        message: str,
        signal: AbortSignal | None,
        resume: dict[str, Any] | None = None,
    ) -> None:
        self._agent = agent
        self._conv = agent._conv
        self._message = message
        self._resume = resume
        self._steps_done = 0
        self._trace: TraceRecorder | None = None
        self._events: list[AgentEvent] = []
        self._changed = asyncio.Event()
        self._controller: AbortController = any_signal(signal)
        loop = asyncio.get_running_loop()
        self._done: asyncio.Future[RunResult] = loop.create_future()
        self._done.add_done_callback(self._cancelled_by_waiter)
        self._interrupt: asyncio.Future[DenialCause] | None = None
        self._outcome: tuple[str, str, bool] | None = None  # the last call's, if it succeeded
        self._task = asyncio.ensure_future(self._main())

    @property
    def done(self) -> asyncio.Future[RunResult]:
        """A future of the :class:`RunResult`; it never raises.

        Cancelling it (a task that awaits it directly is cancelled: a notebook's Interrupt,
        ``asyncio.wait_for``'s timeout) aborts the run as :meth:`abort` does, with the cause
        ``"stopped"``: a pending confirmation ends as a denial and no tool runs after it. The
        run still ends and records its trace (:attr:`SiteAgent.last_trace`).
        """
        return self._done

    def _cancelled_by_waiter(self, done: asyncio.Future[RunResult]) -> None:
        if done.cancelled():
            self._controller.abort("stopped")

    @property
    def events(self) -> EventLog:
        """The events so far (a copy: a ``list`` that shows itself in a notebook)."""
        return EventLog(self._events)

    @property
    def signal(self) -> AbortSignal:
        """Aborts when the run is aborted."""
        return self._controller.signal

    def abort(self, reason: Any = None) -> None:
        """Abort the run (idempotent; does nothing once the run is done).

        A pending confirmation ends as a denial whose ``cause`` is ``reason`` when that is a
        :data:`~pysite_agent.core.types.DenialCause` (``"reset"``, ``"removed"``, ...), else
        ``"stopped"``; it is recorded in the ``confirm-result`` event and the trace.
        """
        if not self._done.done():
            self._controller.abort(reason if reason is not None else "aborted")

    def deny_pending(self, cause: DenialCause) -> bool:
        """End a pending confirmation as denied with ``cause`` (e.g. ``"hidden"``); the run goes
        on and the model is told the call was denied. Returns whether one was pending.

        Raises:
            ValueError: ``cause`` is not one of :data:`~pysite_agent.core.types.DENIAL_CAUSES`.
        """
        if cause not in DENIAL_CAUSES:
            raise ValueError(f"cause must be one of {', '.join(DENIAL_CAUSES)}")
        interrupt = self._interrupt
        if interrupt is None or interrupt.done():
            return False
        interrupt.set_result(cause)
        return True

    def snapshot(self, *, copy: bool = True) -> dict[str, Any]:
        """The run state so far (:mod:`pysite_agent.core.visit`): ``{message, stepsUsed, trace,
        pendingCall, cause}``, for :meth:`SiteAgent.resume` on the next page. JSON data;
        ``copy=False`` shares the trace's steps (serialize at once, never change them)."""
        trace = self._trace.to_json(copy=copy) if self._trace is not None else None
        call = self._conv.open_call
        return {
            "message": self._message,
            "stepsUsed": self._steps_done,
            "trace": trace,
            "pendingCall": None if call is None else _jsonable(call.to_json()),
            "cause": None,
        }

    async def __aiter__(self) -> AsyncIterator[AgentEvent]:
        index = 0
        while True:
            while index < len(self._events):
                yield self._events[index]
                index += 1
            if self._done.done():
                return
            self._changed.clear()
            await self._changed.wait()

    def _emit(self, event: AgentEvent) -> None:
        self._events.append(event)
        self._changed.set()
        listener = self._agent._listener
        if listener is not None:
            with contextlib.suppress(Exception):  # a listener must not break the caller
                listener(event)

    async def _main(self) -> None:
        agent = self._agent
        trace = TraceRecorder(agent.model.name)
        if self._resume is not None:
            trace.started_at = self._resume["trace"]["startedAt"]
            trace.steps = [dict(step) for step in self._resume["trace"]["steps"]]
        self._trace = trace
        status: RunStatus = "error"
        answer: str | None = None
        error: SiteAgentError | None = None
        try:
            answer = await self._loop(trace)
            status = "answered" if answer is not None else "max-steps"
            if answer is None:
                turns = "1 model turn" if agent.max_steps == 1 else f"{agent.max_steps} model turns"
                error = SiteAgentError("max-steps", f"No answer after {turns}.")
        except AbortedError:
            status = "aborted"
            error = SiteAgentError("aborted", "The run was aborted.")
        except SiteAgentError as exc:
            status = "error"
            error = exc
        except asyncio.CancelledError:
            status = "aborted"
            error = SiteAgentError("aborted", "The run was cancelled.")
        except Exception as exc:  # noqa: BLE001 - never lose the run on an internal fault
            status = "error"
            error = SiteAgentError("model-error", f"Unexpected failure: {exc!r}")
        finally:
            self._conv.close_open_call()
        if error is not None:
            trace.add("error", code=error.code, message=error.message)
            self._emit(ErrorEvent(error.code, error.message))
        trace.finish(status)
        result = RunResult(status, answer, error, trace.to_json())
        if agent._current is self:
            agent._current = None
        if agent._current is None:
            agent._last_trace = result.trace
        self._emit(DoneEvent(result))
        if not self._done.done():  # cancelled by a waiter: see done
            self._done.set_result(result)

    async def _loop(self, trace: TraceRecorder) -> str | None:
        agent = self._agent
        signal = self._controller.signal
        conv = self._conv
        instructions = agent.instructions
        if self._resume is None:
            trace.add("user", text=self._message)
            if agent.page is not None:
                trace.add("page", **agent.page)
            conv.messages.append(user_message(self._message))
        else:
            instructions = self._resumed(trace)
        first = self._steps_done + 1
        await self._check_availability(signal)
        repeats, just_done = Repeats(), JustDone()
        for step in range(first, agent.max_steps + 1):
            signal.throw_if_aborted()
            tools = list(await signal.race(agent.source.get_tools()))
            self._emit(ThinkingEvent(step, agent.model.name))
            open_step = {step}
            request = ModelRequest(
                instructions=instructions,
                messages=[dict(m) for m in conv.messages],
                tools=[t.to_definition() for t in gateway.unambiguous(tools)],
                signal=signal,
                on_text=self._text_sink(signal, open_step),
                on_trim=_trim_recorder(trace, step),
                on_progress=self._progress_sink(step, signal, open_step),
            )
            started = monotonic_ms()
            try:
                raw = await signal.race(agent.model.respond(request))
            except (AbortedError, SiteAgentError, asyncio.CancelledError):
                raise
            except Exception as exc:
                raise SiteAgentError("model-error", f"The model failed: {exc}") from exc
            finally:
                open_step.clear()
            self._steps_done = step
            answered_by = model_answered_by(agent.model)
            trace.add(
                "model",
                step=step,
                model=answered_by,
                reply=_jsonable(raw),
                durationMs=duration_ms(started),
            )
            reply = parse_reply(_strict_reply(raw))
            if reply["type"] == "answer":
                text = reply["text"]
                conv.messages.append(answer_message(text))
                trace.add("answer", text=text)
                self._emit(AnswerEvent(text))
                return text
            call = ToolCall(conv.call_id(reply.get("id")), reply["name"], reply.get("arguments"))
            done = just_done.find(call.name, call.arguments)
            if done is not None:  # do not ask twice (pysite_agent/agent/_repeats.py)
                trace.add("invalid-call", call=_jsonable(call.to_json()), error=done.error())
                if done.told:
                    conv.messages.append(answer_message(text := done.answer()))
                    trace.add("answer", text=text, fromCallId=done.call_id)
                    self._emit(AnswerEvent(text))
                    return text
                done.told = True
                conv.messages.append(tool_call_message(call.id, call.name, call.arguments))
                conv.messages.append(tool_result_message(call.id, call.name, done.model_result()))
                continue
            repeats.check(reply["name"], reply.get("arguments"))
            conv.messages.append(
                tool_call_message(call.id, call.name, call.arguments, reply.get("meta"))
            )
            conv.open_call = call
            self._emit(ToolCallEvent(call))
            self._outcome = None
            await self._handle_call(call, tools, trace)
            just_done.record(call.id, call.name, call.arguments, self._outcome)
            conv.open_call = None
        return None

    def _resumed(self, trace: TraceRecorder) -> str:
        """Take up a run a page change interrupted (:meth:`SiteAgent.resume`): record the new
        page, close the call that was open (a card waiting for the visitor is a denial with
        the cause ``navigated``; a running call opened the new page), and return the
        instructions that tell the model where it is now."""
        agent, conv = self._agent, self._conv
        state = self._resume
        assert state is not None
        self._steps_done = state["stepsUsed"]
        page = agent.page
        where = f"{page['origin']}{page['path']}" if page is not None else "another page"
        if page is not None:
            trace.add("page", **page)
        pending = state["pendingCall"]
        if pending is not None:
            call = ToolCall(conv.call_id(pending["id"]), pending["name"], pending.get("arguments"))
            conv.messages.append(tool_call_message(call.id, call.name, call.arguments))
            if state["cause"] == "navigated":
                decision = Decision(False, "visitor", None, "navigated")
                trace.add("decision", callId=call.id, **decision.to_json())
                self._emit(ConfirmResultEvent(call, decision))
                text = NAVIGATED_DENIED_TEXT
                conv.messages.append(
                    tool_result_message(call.id, call.name, text, is_error=True, denied=True)
                )
            else:
                text = NAVIGATED_TEXT.format(page=where)
                trace.add(
                    "tool-result",
                    callId=call.id,
                    name=call.name,
                    outcome="ran",
                    text=text,
                    isError=False,
                    untrusted=False,
                    navigated=True,
                    durationMs=0.0,
                )
                self._result(call, text, text, is_error=False, navigated=True)
        return agent.instructions + "\n\n" + PAGE_CHANGED_TEXT.format(page=where)

    def _text_sink(self, signal: AbortSignal, open_step: set[int]) -> Callable[[str], None]:
        """The ``on_text`` callback for one model call: each fragment becomes a ``text-delta``.

        Empty or non-string fragments are dropped, and nothing is emitted once the call has
        returned (``open_step`` is emptied then) or the run is aborted: a late fragment from an
        adapter cannot land after the step's ``tool-call`` or ``answer``.
        """

        def on_text(fragment: str) -> None:
            if not isinstance(fragment, str) or not fragment:
                return
            if not open_step or signal.aborted:
                return
            self._emit(TextDeltaEvent(fragment))

        return on_text

    def _progress_sink(
        self, step: int, signal: AbortSignal, open_step: set[int]
    ) -> Callable[[float], None]:
        """``on_progress`` for one model call: ``thinking`` events with ``progress`` (0..1)."""

        def on_progress(fraction: float) -> None:
            ok = isinstance(fraction, int | float) and math.isfinite(fraction)
            if ok and open_step and not signal.aborted:
                value = round(min(1.0, max(0.0, float(fraction))), 3)
                self._emit(ThinkingEvent(step, self._agent.model.name, value))

        return on_progress

    async def _check_availability(self, signal: AbortSignal) -> None:
        """Fail fast with the right code when the model says it cannot answer on this device."""
        probe = optional_member(self._agent.model, "availability")
        if probe is None:
            return
        try:
            state = await signal.race(maybe_await(probe()))
        except (AbortedError, asyncio.CancelledError):
            raise
        except Exception:  # noqa: BLE001 - a failing probe: let respond() report the real error
            return
        if state == "unavailable":
            raise model_unavailable(self._agent.model)
        if state in ("downloadable", "downloading"):
            raise SiteAgentError(
                "model-download-required",
                f"The model '{self._agent.model.name}' must be downloaded first.",
            )

    async def _handle_call(
        self,
        call: ToolCall,
        tools: Sequence[RegisteredTool],
        trace: TraceRecorder,
    ) -> None:
        agent = self._agent
        signal = self._controller.signal
        checked = gateway.check_call(call, tools)
        if isinstance(checked, gateway.InvalidCall):
            trace.add("invalid-call", call=_jsonable(call.to_json()), error=checked.to_json())
            self._result(call, checked.model_text, checked.model_text, is_error=True)
            return
        tool, args = checked
        bound_call = ToolCall(call.id, call.name, gateway.frozen(args))  # listeners' own copy
        trace.add(
            "tool-call",
            call=_jsonable(bound_call.to_json()),
            tool={
                "name": tool.name,
                "title": tool.title or "",
                "description": tool.description,
                "hints": _jsonable(tool.hints),
            },
        )
        asked: list[ConfirmRequest] = []

        def on_request(request: ConfirmRequest) -> None:
            asked.append(request)
            self._emit(ConfirmRequestEvent(request))

        self._interrupt = asyncio.get_running_loop().create_future()
        unwatch = gateway.watch_tool(agent.source, tool, self._interrupt)
        try:
            decision = await gateway.decide(
                bound_call,
                tool,
                args,
                confirm=agent.confirm,
                pre_approved=agent.pre_approved,
                after_untrusted=self._conv.after_untrusted,
                signal=signal,
                on_request=on_request,
                interrupt=self._interrupt,
            )
        except AbortedError:
            if asked:  # the pending card ends as a recorded denial (Stop, reset(), removal)
                cause = denial_cause(signal.reason)
                denied = Decision(False, "visitor", asked[0].reason, cause)
                trace.add("decision", callId=call.id, **denied.to_json())
                self._denied(call, bound_call, denied)
            raise
        finally:
            self._interrupt = None
            unwatch()
        if asked and not decision.allowed and decision.cause is None and signal.aborted:
            decision = Decision(False, "visitor", decision.reason, denial_cause(signal.reason))
        if not decision.allowed:
            trace.add("decision", callId=call.id, **decision.to_json())
            self._denied(call, bound_call, decision)
            return
        trace.add("decision", callId=call.id, **decision.to_json())
        self._emit(ConfirmResultEvent(bound_call, decision))
        if not await gateway.still_bound(agent.source, tool, signal):
            trace.add(
                "tool-result",
                callId=call.id,
                name=call.name,
                outcome="stale-tools",
                text=gateway.STALE_TEXT,
                isError=True,
                untrusted=False,
                navigated=False,
                durationMs=0.0,
            )
            self._result(bound_call, gateway.STALE_TEXT, gateway.STALE_TEXT, is_error=True)
            return
        signal.throw_if_aborted()
        try:
            execution = await gateway.execute(
                agent.source,
                tool,
                args,
                timeout_ms=agent.tool_timeout_ms,
                max_result_chars=agent.max_result_chars,
                signal=signal,
            )
        except AbortedError:
            trace.add(
                "tool-result",
                callId=call.id,
                name=call.name,
                outcome="aborted",
                text=ABORTED_TEXT,
                isError=True,
                untrusted=tool.untrusted,
                navigated=False,
                durationMs=0.0,
            )
            raise
        if execution.untrusted:
            self._conv.after_untrusted = True
        trace.add(
            "tool-result",
            callId=call.id,
            name=call.name,
            outcome=execution.outcome,
            text=execution.text,
            isError=execution.is_error,
            untrusted=execution.untrusted,
            navigated=execution.navigated,
            durationMs=execution.duration_ms,
        )
        self._result(
            bound_call,
            execution.text,
            execution.model_text(tool.name),
            is_error=execution.is_error,
            untrusted=execution.untrusted,
            navigated=execution.navigated,
        )

    def _denied(self, call: ToolCall, bound_call: ToolCall, decision: Decision) -> None:
        self._emit(ConfirmResultEvent(bound_call, decision))
        text = gateway.denial_text(decision)
        self._conv.messages.append(
            tool_result_message(call.id, call.name, text, is_error=True, denied=True)
        )
        self._conv.open_call = None

    def _result(
        self,
        call: ToolCall,
        text: str,
        model_text: str,
        *,
        is_error: bool,
        untrusted: bool = False,
        navigated: bool = False,
    ) -> None:
        self._conv.messages.append(
            tool_result_message(
                call.id, call.name, model_text, is_error=is_error, untrusted=untrusted
            )
        )
        self._conv.open_call = None
        if not is_error and not navigated:
            self._outcome = (text, model_text, untrusted)
        self._emit(ToolResultEvent(call, text, untrusted, is_error, navigated))


def _trim_recorder(trace: TraceRecorder, step: int) -> Callable[[Any], None]:
    """``on_trim`` for one step: a trace ``trim`` step with what the adapter left out."""

    def record(trim: Any) -> None:
        fields = trim.to_json() if hasattr(trim, "to_json") else {}
        trace.add("trim", step=step, **_jsonable(fields))

    return record


class _Conversation:
    """One conversation: its messages, the untrusted-output state and the call ids used."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.after_untrusted = False
        self.open_call: ToolCall | None = None
        self._ids = itertools.count(1)
        self._used_ids: set[str] = set()

    def call_id(self, proposed: str | None) -> str:
        """``proposed`` when it is new in this conversation, else a fresh ``call_N``."""
        call_id = proposed
        while call_id is None or call_id in self._used_ids:
            call_id = f"call_{next(self._ids)}"
        self._used_ids.add(call_id)
        return call_id

    def close_open_call(self) -> None:
        """Keep every assistant tool call followed by exactly one tool result."""
        call = self.open_call
        self.open_call = None
        if call is None:
            return
        if self.messages and self.messages[-1].get("role") == "tool":
            return
        self.messages.append(tool_result_message(call.id, call.name, ABORTED_TEXT, is_error=True))


class SiteAgent:
    """The agent: a model, a tool source and the confirmation rules, over one conversation.

    Use :func:`create_site_agent` to make one. The conversation carries over between runs;
    :meth:`reset` clears it and the untrusted-output state (README, rule 5).
    """

    def __init__(
        self,
        *,
        model: ModelAdapter,
        source: ToolSource,
        confirm: Confirm | None,
        pre_approved: Collection[str],
        max_steps: int,
        tool_timeout_ms: int,
        instructions: str | None,
        max_result_chars: int,
    ) -> None:
        self._model = model
        self.source = source
        self.confirm = confirm
        self.pre_approved = frozenset(pre_approved)
        self.max_steps = max_steps
        self.tool_timeout_ms = tool_timeout_ms
        self.max_result_chars = max_result_chars
        self.site_instructions = instructions
        self.instructions = build_instructions(instructions)
        self._conv = _Conversation()
        self._current: AgentRun | None = None
        self._last_trace: dict[str, Any] | None = None
        self.page: dict[str, str] | None = None
        self._listener: Callable[[AgentEvent], Any] | None = None

    @property
    def model(self) -> ModelAdapter:
        return self._model

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far, in protocol v1's message shapes (a copy)."""
        return [dict(m) for m in self._conv.messages]

    @property
    def running(self) -> bool:
        return self._current is not None

    @property
    def after_untrusted(self) -> bool:
        """Whether untrusted output is in the conversation (every non-read-only call asks)."""
        return self._conv.after_untrusted

    @property
    def last_trace(self) -> dict[str, Any] | None:
        """The trace of the latest finished run."""
        return self._last_trace

    def run(self, message: str, *, signal: AbortSignal | None = None) -> AgentRun:
        """Start a run on ``message`` (needs a running event loop).

        Raises:
            SiteAgentError: ``busy`` while another run is in progress.
            TypeError: ``message`` is not a string.
        """
        if not isinstance(message, str):
            raise TypeError("message must be a string")
        if self._current is not None:
            raise SiteAgentError("busy", "A run is already in progress; wait for it or abort it.")
        run = AgentRun(self, message, signal)
        self._current = run
        return run

    def export_state(self) -> dict[str, Any]:
        """The conversation state ``{"version": 1, "messages", "afterUntrusted"}`` (JSON data;
        :mod:`pysite_agent.core.visit`). A call still open is left out (the run state carries
        it)."""
        messages = self.messages
        if messages and "toolCall" in messages[-1]:
            messages.pop()
        return {
            "version": STATE_VERSION,
            "messages": messages,
            "afterUntrusted": self._conv.after_untrusted,
        }

    def import_state(self, state: Any) -> None:
        """Continue the conversation ``state`` (from :meth:`export_state`), whole: its
        messages and its untrusted-output state together.

        Raises:
            ValueError: the state fails the checks of
                :func:`pysite_agent.core.visit.check_conversation`; nothing changes then.
            SiteAgentError: ``busy`` while a run is in progress.
        """
        if self._current is not None:
            raise SiteAgentError("busy", "A run is in progress; the conversation cannot change.")
        messages, after_untrusted = check_conversation(state)
        conv = _Conversation()
        conv.messages = messages
        conv.after_untrusted = after_untrusted
        for message in messages:
            call = message.get("toolCall")
            if isinstance(call, dict):
                conv.call_id(call["id"])
        self._conv = conv

    def run_state(self, *, copy: bool = True) -> dict[str, Any] | None:
        """The running run's state (:meth:`AgentRun.snapshot`), or ``None``. ``copy=False``
        shares the trace's steps: for serializing at once (the element's record)."""
        return None if self._current is None else self._current.snapshot(copy=copy)

    def resume(self, state: Any, *, signal: AbortSignal | None = None) -> AgentRun:
        """Go on with a run a page change interrupted, on this page's tools, within the same
        ``max_steps`` (docs/element.md, "Across pages"). Set :attr:`page` first: the trace
        records it and the model is told the page changed. Import the conversation first.

        Raises:
            ValueError: ``state`` fails :func:`pysite_agent.core.visit.check_run`.
            SiteAgentError: ``busy`` while another run is in progress.
        """
        checked = check_run(state)
        if self._current is not None:
            raise SiteAgentError("busy", "A run is already in progress; wait for it or abort it.")
        run = AgentRun(self, checked["message"], signal, resume=checked)
        self._current = run
        return run

    def reset(self) -> None:
        """Start a new conversation: no messages, no untrusted-output state (rule 5); the
        model's optional ``reset()`` is called (Chrome's adapter destroys its sessions).

        A running run is aborted; it ends in the background against the old conversation, so
        :meth:`run` can start at once.
        """
        if self._current is not None:
            self._current.abort("reset")
            self._current = None
        self._conv = _Conversation()
        reset_model(self._model)  # e.g. Chrome's adapter destroys its sessions

    def route_changed(self, page: dict[str, str]) -> bool:
        """The page moved to ``page`` (``{"origin", "path"}``, as
        :func:`~pysite_agent.core.visit.page_of` gives) without a new document: a single-page
        app's route (docs/element.md, "On real sites"). Later runs record it, and a run going on
        gets a ``page`` step now (trace v1's shape). Returns False, and records nothing, when
        ``page`` is :attr:`page` already."""
        if page == self.page:
            return False
        self.page = dict(page)
        run = self._current
        if run is not None and run._trace is not None and not run.done.done():
            run._trace.add("page", **self.page)
        return True

    def deny_pending(self, cause: DenialCause) -> bool:
        """End the running run's pending confirmation as denied with ``cause`` (see
        :meth:`AgentRun.deny_pending`); returns whether one was pending."""
        current = self._current
        return current.deny_pending(cause) if current is not None else False

    async def tools(self) -> list[RegisteredTool]:
        """The tools the agent can see now."""
        return list(await self.source.get_tools())

    def on_tools_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Follow the source's tool changes; returns an unsubscribe function."""
        return self.source.on_change(callback)

    def on_event(self, callback: Callable[[AgentEvent], Any] | None) -> None:
        """Receive every event of every run (one listener; ``None`` removes it)."""
        self._listener = callback


def create_site_agent(
    *,
    model: ModelAdapter,
    tools: Any = None,
    confirm: Confirm | None = None,
    pre_approved: Iterable[str] = (),
    max_steps: int = 6,
    tool_timeout_ms: float = 30_000,
    instructions: str | None = None,
    max_result_chars: int = 4_000,
) -> SiteAgent:
    """Create an agent (README, "The Python API").

    Args:
        model: a model adapter (``name`` and ``async respond(request)``).
        tools: a tool source or a list of :class:`~pysite_agent.core.types.Tool`; ``None`` means
            the browser's ``document.modelContext``.
        confirm: ``confirm(request) -> bool`` (sync or async); only a strict ``True`` allows;
            ``None`` denies every call that needs asking (rule 4).
        pre_approved: tool names that skip asking, within rule 5's exceptions.
        max_steps: model turns per message, 1 to 50.
        tool_timeout_ms: per-call timeout in milliseconds (waiting for the visitor not counted).
        instructions: the site's instructions, appended after the built-in rules.
        max_result_chars: tool results are cut to this many characters (code points).

    Raises:
        ValueError: ``max_steps`` outside 1..50, a ``tool_timeout_ms`` that is not a finite
            number of at least 1, or a ``max_result_chars`` below 1.
        TypeError: ``model`` is not a model adapter, ``tools`` is neither a source nor a list
            of tools, ``confirm`` is not callable, ``instructions`` is not a string, or
            ``pre_approved`` holds something other than names.
        SiteAgentError: ``no-tools`` when ``tools`` is ``None`` outside a browser.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int):
        raise ValueError("max_steps must be an integer from 1 to 50")
    if not MAX_STEPS_RANGE[0] <= max_steps <= MAX_STEPS_RANGE[1]:
        raise ValueError(f"max_steps must be from 1 to 50, got {max_steps}")
    if (
        isinstance(tool_timeout_ms, bool)
        or not isinstance(tool_timeout_ms, int | float)
        or not math.isfinite(tool_timeout_ms)
        or tool_timeout_ms < 1
    ):
        raise ValueError("tool_timeout_ms must be a finite number of milliseconds, at least 1")
    if (
        isinstance(max_result_chars, bool)
        or not isinstance(max_result_chars, int)
        or max_result_chars < 1
    ):
        raise ValueError("max_result_chars must be a positive integer")
    if not callable(getattr(model, "respond", None)) or not isinstance(
        getattr(model, "name", None), str
    ):
        raise TypeError("model must be a model adapter with a 'name' and 'respond(request)'")
    if confirm is not None and not callable(confirm):
        raise TypeError("confirm must be callable or None")
    if instructions is not None and not isinstance(instructions, str):
        raise TypeError("instructions must be a string or None")
    pre_list = [pre_approved] if isinstance(pre_approved, str) else list(pre_approved)
    if not all(isinstance(name, str) for name in pre_list):
        raise TypeError("pre_approved must be tool names (strings)")
    return SiteAgent(
        model=model,
        source=resolve_tools(tools),
        confirm=confirm,
        pre_approved=frozenset(pre_list),
        max_steps=max_steps,
        tool_timeout_ms=round(tool_timeout_ms),
        instructions=instructions,
        max_result_chars=max_result_chars,
    )
