"""Value types shared by every layer, and the two protocols the bridge drives.

Python attributes are snake_case; each type's ``to_json()`` gives the published wire names
(``pysite_agent/schemas/``: ``inputSchema``, ``isError``, ...). Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from pysite_agent.core.signals import AbortSignal

JSON: TypeAlias = Any
"""A value that ``json.dumps`` accepts."""

Availability = Literal["unavailable", "downloadable", "downloading", "available"]
"""The Prompt API's ``availability()`` values (Prompt API explainer, "Testing availability")."""

AskReason = Literal["not-read-only", "consequential", "after-untrusted", "annotations-unknown"]
"""Why the visitor is asked (README, safety rules 3 and 5)."""

DecidedBy = Literal["read-only", "pre-approved", "visitor", "no-confirm"]
"""Who decided a call (docs/python-api.md: the ``confirm-result`` event)."""

DenialCause = Literal["stopped", "reset", "removed", "hidden", "navigated", "withdrawn"]
"""Why a pending confirmation ended without the visitor's answer; it counts as a denial
(README, rule 3): Stop, ``reset()``, the element removed, the page hidden, the page left, or
the page withdrew the tool (unregistered, registered again or changed) while the card was open
(README, decision binding)."""

DENIAL_CAUSES: tuple[DenialCause, ...] = (
    "stopped",
    "reset",
    "removed",
    "hidden",
    "navigated",
    "withdrawn",
)

RunStatus = Literal["answered", "max-steps", "aborted", "error"]


def denial_cause(reason: Any) -> DenialCause:
    """The :data:`DenialCause` for an abort ``reason``: the reason itself when it is one of
    :data:`DENIAL_CAUSES`, else ``"stopped"`` (any other abort is a stop)."""
    for cause in DENIAL_CAUSES:
        if reason == cause:
            return cause
    return "stopped"


def canonical_json(value: Any) -> str:
    """``json.dumps`` with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    """A tool as a tool source lists it (WebMCP's ``getTools()`` entry).

    Attributes:
        name: the tool's name (WebMCP: 1-128 characters of ``[A-Za-z0-9_.-]``).
        description: what the tool does, for the model and the confirmation card.
        title: a human title, or ``None``.
        input_schema: the JSON Schema of the arguments object, or ``None`` (any object).
        annotations: WebMCP's hints as given (``readOnlyHint``, ``untrustedContentHint``,
            ``consequentialHint``, ...), or ``None`` when the source returned no annotations.
        key: the source's identity for this registration. A tool that is unregistered and
            registered again under the same name gets a new key, so a confirmation bound to
            the old one is stale (README, decision binding).
        output_schema: the JSON Schema of the tool's result (WebMCP ``outputSchema``, spec
            PR #254, Chrome 159), or ``None``. Shown to the model; a result that fails it is
            flagged to the model (:func:`pysite_agent.core.validation.check_output`).
        waits_for_visitor: a declarative ``<form toolname>`` tool without ``toolautosubmit``:
            the call ends when the visitor submits the form, so the per-call timeout does not
            apply (waiting for the visitor does not count, README rule 7); the bridge waits
            up to its visitor limit instead (``gateway.VISITOR_WAIT_MS``).
    """

    name: str
    description: str = ""
    title: str | None = None
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    key: str = ""
    output_schema: Mapping[str, Any] | None = None
    waits_for_visitor: bool = False

    @property
    def read_only(self) -> bool:
        """``readOnlyHint`` is strictly ``True`` (README, safety rule 2)."""
        return self.annotations is not None and self.annotations.get("readOnlyHint") is True

    @property
    def consequential(self) -> bool:
        """``consequentialHint`` is anything but ``False``/``None`` (rule 5, first exception)."""
        return self.annotations is not None and _set(self.annotations.get("consequentialHint"))

    @property
    def untrusted(self) -> bool:
        """``untrustedContentHint`` is set to anything but ``False``/``None`` (rule 6)."""
        return self.annotations is not None and _set(self.annotations.get("untrustedContentHint"))

    @property
    def hints(self) -> dict[str, Any] | None:
        """The annotations as a plain dict (``None`` when the source gave none)."""
        return None if self.annotations is None else dict(self.annotations)

    def fingerprint(self) -> str:
        """Normalized content: equal for tools a model cannot tell apart, else different."""
        content: list[Any] = [
            self.name,
            self.title or "",
            self.description,
            self.input_schema,
            self.hints,
        ]
        if self.output_schema is not None:
            content.append(self.output_schema)
        return canonical_json(content)

    def to_json(self) -> dict[str, Any]:
        """``{name, title, description, inputSchema?, outputSchema?, annotations?}`` (WebMCP
        names)."""
        out: dict[str, Any] = {
            "name": self.name,
            "title": self.title or "",
            "description": self.description,
        }
        if self.input_schema is not None:
            out["inputSchema"] = _plain(self.input_schema)
        if self.output_schema is not None:
            out["outputSchema"] = _plain(self.output_schema)
        if self.annotations is not None:
            out["annotations"] = _plain(self.annotations)
        return out

    def to_definition(self) -> dict[str, Any]:
        """What a model sees: ``{name, description, inputSchema, title?, outputSchema?,
        annotations?}``."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": _plain(self.input_schema)
            if self.input_schema is not None
            else {"type": "object"},
        }
        if self.title:
            out["title"] = self.title
        if self.output_schema is not None:
            out["outputSchema"] = _plain(self.output_schema)
        if self.annotations is not None:
            out["annotations"] = _plain(self.annotations)
        return out


def _set(value: Any) -> bool:
    """A hint counts as set unless it is exactly ``None`` or ``False`` (``0`` and ``""`` count)."""
    return value is not None and value is not False


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


ToolExecute: TypeAlias = Callable[..., Any]
"""``execute(args)`` or ``execute(args, signal)``; sync or async; returns the tool's result."""


@dataclass(slots=True)
class Tool:
    """A Python tool: a name, a description and a function (sync or async).

    ``execute`` receives the validated arguments as a ``dict``; if it accepts a second
    positional parameter, it also receives the call's :class:`AbortSignal`. Its return value is
    turned into text as :func:`pysite_agent.core.results.result_text` says.

    ``annotations`` uses WebMCP's names (``readOnlyHint``, ``untrustedContentHint``,
    ``consequentialHint``); ``None`` means "no annotations", which makes every call ask
    (README, rule 5, third exception).
    """

    name: str
    description: str
    execute: ToolExecute
    input_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is whatever the model sent (maybe not a dict)."""

    id: str
    name: str
    arguments: Any

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ConfirmLine:
    """One argument in plain words: ``label`` from the schema's ``title`` or the key."""

    key: str
    label: str
    value: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "label": self.label, "value": self.value}


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    """What ``confirm(request)`` receives (docs/element.md, "The panel").

    ``signal`` aborts when the run is aborted, so a UI can close its card; the bridge stops
    waiting at once in that case and the call is not run.
    """

    call: ToolCall
    tool: RegisteredTool
    reason: AskReason
    lines: tuple[ConfirmLine, ...]
    signal: AbortSignal | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call.to_json(),
            "tool": self.tool.to_json(),
            "reason": self.reason,
            "lines": [line.to_json() for line in self.lines],
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a call may run, and who decided (``reason``: why the visitor was asked).

    ``cause`` is set when the visitor was asked and the card ended without an answer (Stop,
    ``reset()``, removal, the page hidden or left, the tool withdrawn by the page): a denial,
    recorded with why.
    """

    allowed: bool
    by: DecidedBy
    reason: AskReason | None = None
    cause: DenialCause | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"allowed": self.allowed, "by": self.by}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.cause is not None:
            out["cause"] = self.cause
        return out


Confirm: TypeAlias = Callable[[ConfirmRequest], "bool | Awaitable[bool]"]
"""The visitor's answer: only a strict ``True`` allows (README, rule 3)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What a model adapter's ``respond`` receives.

    Attributes:
        instructions: the system instructions (built-in rules, then the site's).
        messages: the conversation in protocol v1's message shapes (see
            ``pysite_agent/schemas/protocol-v1.schema.json``).
        tools: tool definitions ``{name, description, inputSchema, title?}``.
        signal: aborts when the run is aborted.
        on_text: the streaming seam: an adapter that can stream calls it with each new
            fragment of ANSWER text (a non-empty ``str``) as the model writes it, in order,
            never with tool-call JSON; adapters that cannot stream ignore it. The fragments
            are a preview: the reply ``respond`` returns stays what counts.
        on_trim: an adapter that leaves part of ``messages`` out (its history budget,
            :mod:`pysite_agent.core.history`) calls it with a
            :class:`~pysite_agent.core.history.Trim`; the agent records it as a trace
            ``trim`` step. Adapters that send everything never call it.
        on_progress: an adapter that reads its prompt slowly (the in-page model on a CPU)
            may call it with the fraction of the prompt read so far (a float, 0.0 to 1.0);
            the agent emits it as a ``thinking`` event with ``progress``, a sign of life for
            the panel. Others never call it.
    """

    instructions: str
    messages: Sequence[dict[str, Any]]
    tools: Sequence[dict[str, Any]]
    signal: AbortSignal | None = field(default=None, compare=False, repr=False)
    on_text: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    on_trim: Callable[[Any], None] | None = field(default=None, compare=False, repr=False)
    on_progress: Callable[[float], None] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """Protocol v1's request body: ``{version: 1, instructions, messages, tools}``."""
        return {
            "version": 1,
            "instructions": self.instructions,
            "messages": list(self.messages),
            "tools": list(self.tools),
        }


@runtime_checkable
class ToolSource(Protocol):
    """Lists and runs tools. Implemented by Python tool lists and by ``document.modelContext``.

    ``revision`` changes whenever the set of tools or any tool's normalized content changes.
    A decision is bound to its tool's ``key`` and content (README, decision binding), not to
    the revision: a change to other tools (a route that registers its own) keeps an Allow.
    """

    @property
    def revision(self) -> object: ...

    async def get_tools(self) -> Sequence[RegisteredTool]: ...

    async def execute_tool(
        self, tool: RegisteredTool, args: dict[str, Any], *, signal: AbortSignal | None = None
    ) -> Any: ...

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]: ...


@runtime_checkable
class ModelAdapter(Protocol):
    """A model: ``name`` and ``respond(request) -> reply``.

    The reply is ``{"type": "tool", "name", "arguments", "id"?, "meta"?}`` or
    ``{"type": "answer", "text"}`` (protocol v1). Optional methods, found with ``getattr``:
    ``async availability() -> Availability`` and ``async prepare(on_progress, signal)``.
    """

    @property
    def name(self) -> str: ...

    async def respond(self, request: ModelRequest) -> Any: ...
