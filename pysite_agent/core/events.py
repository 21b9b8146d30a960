"""The agent's events and the run result, with their JSON forms (docs/python-api.md: events).

``thinking`` (step, model) -> ``text-delta`` (text; zero or more, only from adapters that
stream) -> ``tool-call`` (call) -> ``confirm-request`` (request; only when the
visitor is asked) -> ``confirm-result`` (call, decision; for every call that reached a decision)
-> ``tool-result`` (call, text, untrusted, isError, navigated) ... -> ``answer`` (text) or
``error`` (code, message) -> ``done`` (result).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.types import ConfirmRequest, Decision, RunStatus, ToolCall


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended. ``trace`` is the trace v1 JSON (a dict)."""

    status: RunStatus
    answer: str | None
    error: SiteAgentError | None
    trace: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "trace": self.trace}
        if self.answer is not None:
            out["answer"] = self.answer
        if self.error is not None:
            out["error"] = self.error.to_json()
        return out

    def _repr_html_(self) -> str:
        """The trace timeline, titled with how the run ended, in a sandboxed frame (notebooks;
        :mod:`pysite_agent.core.display`)."""
        title = f"pysite-agent run: {self.status}"
        from pysite_agent.core.trace_view import frame, render_trace_html

        document = render_trace_html(self.trace, title=title)
        return frame(document, title=title, rows=len(self.trace.get("steps", [])))

    def __repr__(self) -> str:
        """How the run ended, then the trace as text (one line per step)."""
        head = f"RunResult(status={self.status!r}, answer={self.answer!r}"
        if self.error is not None:
            head += f", error={self.error.code!r}: {self.error.message!r}"
        from pysite_agent.core.trace_view import trace_text

        return f"{head})\n{trace_text(self.trace)}"


@dataclass(frozen=True, slots=True)
class ThinkingEvent:
    """The model was asked (``progress`` ``None``), or says how much of its prompt it has
    read (``progress``: 0.0 to 1.0, from :attr:`ModelRequest.on_progress`)."""

    type: ClassVar[str] = "thinking"
    step: int
    model: str
    progress: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "step": self.step, "model": self.model}
        if self.progress is not None:
            out["progress"] = self.progress
        return out


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    type: ClassVar[str] = "tool-call"
    call: ToolCall

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "call": self.call.to_json()}


@dataclass(frozen=True, slots=True)
class ConfirmRequestEvent:
    type: ClassVar[str] = "confirm-request"
    request: ConfirmRequest

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "request": self.request.to_json()}


@dataclass(frozen=True, slots=True)
class ConfirmResultEvent:
    type: ClassVar[str] = "confirm-result"
    call: ToolCall
    decision: Decision

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "call": self.call.to_json(), "decision": self.decision.to_json()}


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    type: ClassVar[str] = "tool-result"
    call: ToolCall
    text: str
    untrusted: bool
    is_error: bool
    navigated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "call": self.call.to_json(),
            "text": self.text,
            "untrusted": self.untrusted,
            "isError": self.is_error,
            "navigated": self.navigated,
        }


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    """A fragment of text the model is writing in the current step (the streaming seam).

    Fragments belong to the step of the latest ``thinking`` event and join in order. What
    follows them says what they were: ``answer`` (the finished text, which is authoritative),
    ``tool-call`` (the text stays, as part of that step), or ``error`` (the text stays,
    incomplete). The trace records only the final answer.
    """

    type: ClassVar[str] = "text-delta"
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class AnswerEvent:
    type: ClassVar[str] = "answer"
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "text": self.text}


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    type: ClassVar[str] = "error"
    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class DoneEvent:
    type: ClassVar[str] = "done"
    result: RunResult

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "result": self.result.to_json()}


AgentEvent: TypeAlias = (
    ThinkingEvent
    | ToolCallEvent
    | ConfirmRequestEvent
    | ConfirmResultEvent
    | ToolResultEvent
    | TextDeltaEvent
    | AnswerEvent
    | ErrorEvent
    | DoneEvent
)
