"""``chrome_built_in()``: Chrome's on-device model through the Prompt API (``LanguageModel``).

The only module that touches ``LanguageModel`` (design, "Layers"); every JS crossing goes through
:mod:`pysite_agent.ffi`, and ``language_model=`` takes any object with the same methods
(tests pass a fake that follows the documented API).

How a step works (Prompt API explainer; shapes in ``shared/notes/peers.md``):

1. ``LanguageModel.availability({expectedInputs, expectedOutputs})`` with
   ``[{type: "text", languages}]`` for both. ``"downloadable"``/``"downloading"`` ->
   ``SiteAgentError("model-download-required")`` (the adapter never downloads by itself: the
   visitor starts it with :meth:`ChromeBuiltIn.prepare` from a click); ``"unavailable"`` (or no
   ``LanguageModel`` at all) -> ``model-unavailable``.
2. ``LanguageModel.create({initialPrompts: [{role: "system", content: instructions}],
   expectedInputs, expectedOutputs, signal})`` -> a fresh session per step, destroyed afterwards.
3. ``session.prompt(text, {responseConstraint, signal})``. Chrome has no documented native tool
   use, so the constraint is a JSON Schema ``anyOf`` with one branch ``{type: "answer", text}``
   and one branch per tool ``{type: "tool", name: <const NAME>, arguments: <its inputSchema>}``
   (a tool whose schema is unusable, or uses ``$ref``, gets ``{type: "object"}``: the core still
   validates the arguments before anything runs).
4. The reply text is parsed as JSON into protocol v1's reply shape
   (:func:`pysite_agent.core.wire.parse_reply`); text that is not JSON or not a reply ->
   ``bad-reply``.

The prompt ``text`` lists the tools, the latest ``max_history`` messages of the conversation and
the reply format, in at most ``max_prompt_chars`` characters (code points). The latest visitor
message is always kept (whole where it fits); older messages go first, then long ones are
shortened, and the prompt says what was cut. ``ChromeBuiltIn.last_cut`` holds the same notes.

Errors are DOMException names mapped by :data:`pysite_agent.ffi.ERROR_TABLE`
(``QuotaExceededError`` -> ``model-error`` "too long", ``NotSupportedError`` ->
``model-unavailable``, ``NotReadableError``/``SyntaxError`` -> ``model-error``, ``AbortError`` ->
``aborted``); in :meth:`ChromeBuiltIn.prepare`, ``NotAllowedError`` (no recent user activation)
-> ``model-download-required`` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pysite_agent import ffi
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.core.types import Availability, ModelRequest
from pysite_agent.core.validation import InvalidSchemaError, validator_for
from pysite_agent.core.wire import parse_reply
from pysite_agent.models.base import AVAILABILITY_VALUES

__all__ = ["ChromeBuiltIn", "build_prompt", "chrome_built_in", "response_constraint"]

MIN_PROMPT_CHARS = 1000
"""``max_prompt_chars`` must be at least this (room for the tools and the reply format)."""

TOOL_DESCRIPTION_CHARS = 300
"""Each tool's description is cut to this many characters in the prompt (less when crowded)."""

REPLY_FORMAT = (
    "Reply with exactly one JSON object: "
    '{"type": "tool", "name": "<tool name>", "arguments": {...}} to call one tool, or '
    '{"type": "answer", "text": "..."} to answer the visitor.'
)

_PREPARE_ERRORS: Mapping[str, ffi.ErrorRule] = {
    "NotAllowedError": ffi.ErrorRule(
        "model-download-required",
        "Chrome starts the model download only right after a click: call prepare() from a "
        "user gesture (for example the download button's click handler).",
    ),
}


def _constraint_schema(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    try:
        validator_for(schema)
    except InvalidSchemaError:
        return {"type": "object"}
    plain = json.loads(json.dumps(schema, default=str))
    if '"$ref"' in json.dumps(plain) or plain.get("type") not in (None, "object"):
        return {"type": "object"}
    for key in ("$schema", "$id"):
        plain.pop(key, None)
    return plain  # type: ignore[no-any-return]


def response_constraint(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``responseConstraint`` for ``tools`` (definitions ``{name, inputSchema, ...}``):
    ``{"anyOf": [answer branch, one tool branch per tool]}`` (see the module docstring)."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"type": {"const": "answer"}, "text": {"type": "string"}},
            "required": ["type", "text"],
            "additionalProperties": False,
        }
    ]
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        branches.append(
            {
                "type": "object",
                "properties": {
                    "type": {"const": "tool"},
                    "name": {"const": name},
                    "arguments": _constraint_schema(tool.get("inputSchema")),
                },
                "required": ["type", "name", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = f" [… cut {len(text) - limit} characters]"
    return text[: max(0, limit - len(marker))] + marker


def _tools_text(tools: Sequence[Mapping[str, Any]], description_chars: int) -> str:
    if not tools:
        return "There are no tools on this page now: answer the visitor."
    lines = ["Tools on this page (call at most one per reply):"]
    for tool in tools:
        name = str(tool.get("name", ""))
        title = tool.get("title")
        head = f"- {name}" + (f" ({title})" if isinstance(title, str) and title else "")
        description = str(tool.get("description") or "")
        if description_chars > 0 and description:
            head += ": " + _cut(" ".join(description.split()), description_chars)
        lines.append(head)
    return "\n".join(lines)


def _render(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "user":
        return f"Visitor: {message.get('content', '')}"
    if role == "assistant" and isinstance(message.get("toolCall"), Mapping):
        call = message["toolCall"]
        args = json.dumps(call.get("arguments"), ensure_ascii=False, default=str)
        return f"You called the tool {call.get('name')} with {args}"
    if role == "assistant":
        return f"You answered: {message.get('content', '')}"
    if role == "tool":
        state = " (denied, not run)" if message.get("denied") else ""
        if not state and message.get("isError"):
            state = " (error)"
        return f"Result of {message.get('name')}{state}: {message.get('content', '')}"
    return json.dumps(message, ensure_ascii=False, default=str)


def build_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    max_history: int,
    max_prompt_chars: int,
) -> tuple[str, list[str]]:
    """The prompt text for one step, and notes on what was cut (empty when nothing was).

    Keeps the latest ``max_history`` messages (the latest visitor message always among them),
    then fits ``max_prompt_chars`` code points: the tool list takes at most half (descriptions
    shortened first), older messages are dropped, then long messages shortened (the latest
    visitor message last). The prompt says what was cut.
    """
    latest_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    keep = list(range(max(0, len(messages) - max_history), len(messages)))
    if latest_user >= 0 and latest_user not in keep:
        keep = (
            [latest_user, *keep[len(keep) - max_history + 1 :]]
            if max_history > 1
            else [latest_user]
        )
    notes: list[str] = []
    dropped = len(messages) - len(keep)

    description_chars = TOOL_DESCRIPTION_CHARS
    tools_text = _tools_text(tools, description_chars)
    while len(tools_text) > max_prompt_chars // 2 and description_chars > 0:
        description_chars = description_chars // 2 if description_chars > 20 else 0
        tools_text = _tools_text(tools, description_chars)
    if description_chars < TOOL_DESCRIPTION_CHARS and len(tools) > 0:
        notes.append("tool descriptions shortened")
    tools_text = _cut(tools_text, max_prompt_chars // 2)

    blocks = {i: _render(messages[i]) for i in keep}
    fixed = len(tools_text) + len(REPLY_FORMAT) + 200  # + headings and the cut note
    budget = max(0, max_prompt_chars - fixed)

    def size() -> int:
        return sum(len(b) + 1 for b in blocks.values())

    for i in sorted(blocks):
        if size() <= budget:
            break
        if i != latest_user:
            del blocks[i]
            dropped += 1
    shortened = 0
    if size() > budget:
        others = sorted((i for i in blocks if i != latest_user), key=lambda i: -len(blocks[i]))
        for i in others:
            over = size() - budget
            if over <= 0:
                break
            limit = max(80, len(blocks[i]) - over)
            if limit < len(blocks[i]):
                blocks[i] = _cut(blocks[i], limit)
                shortened += 1
    if size() > budget and latest_user in blocks:
        over = size() - budget
        blocks[latest_user] = _cut(blocks[latest_user], max(40, len(blocks[latest_user]) - over))
        notes.append("the visitor's latest message shortened")
    if dropped:
        notes.insert(0, f"{dropped} earlier message{'s' if dropped != 1 else ''} not shown")
    if shortened:
        notes.append(f"{shortened} long message{'s' if shortened != 1 else ''} shortened")

    parts = [tools_text, ""]
    if notes:
        parts.append(f"[Conversation cut to fit: {'; '.join(notes)}.]")
    parts.append("Conversation so far:")
    parts.extend(blocks[i] for i in sorted(blocks))
    parts.extend(["", REPLY_FORMAT])
    text = "\n".join(parts)
    if len(text) > max_prompt_chars:  # a last resort; the budget above normally prevents it
        text = _cut(text, max_prompt_chars)
        notes.append("prompt cut at the end")
    return text, notes


def _parse(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        text = str(text)
    try:
        value = json.loads(text)
    except ValueError:
        snippet = text[:200]
        raise SiteAgentError(
            "bad-reply", f"Chrome's model replied with text that is not JSON: {snippet!r}"
        ) from None
    return dict(parse_reply(value))


class ChromeBuiltIn:
    """Chrome's on-device model (Prompt API). See the module docstring for the protocol.

    Attributes:
        languages: BCP 47 codes for ``expectedInputs``/``expectedOutputs`` (Chrome supports
            ``en``, ``es``, ``ja``).
        max_history: messages of the conversation sent per step.
        max_prompt_chars: the most code points per prompt text (system instructions not counted).
        last_cut: what the latest prompt left out (notes; empty when nothing).
    """

    def __init__(
        self,
        languages: Iterable[str] = ("en",),
        max_history: int = 12,
        max_prompt_chars: int = 6000,
        *,
        language_model: Any = None,
    ) -> None:
        if isinstance(languages, str):
            languages = (languages,)
        langs = tuple(languages)
        if not langs or not all(isinstance(lang, str) and lang for lang in langs):
            raise ValueError("languages must be a non-empty list of language codes, e.g. ['en']")
        if isinstance(max_history, bool) or not isinstance(max_history, int) or max_history < 1:
            raise ValueError("max_history must be a positive integer")
        if (
            isinstance(max_prompt_chars, bool)
            or not isinstance(max_prompt_chars, int)
            or max_prompt_chars < MIN_PROMPT_CHARS
        ):
            raise ValueError(f"max_prompt_chars must be an integer >= {MIN_PROMPT_CHARS}")
        self.languages = langs
        self.max_history = max_history
        self.max_prompt_chars = max_prompt_chars
        self.last_cut: list[str] = []
        self._language_model = language_model
        self._why_unavailable = ""

    @property
    def name(self) -> str:
        return "chrome built-in"

    def _lm(self) -> Any:
        if self._language_model is not None:
            return self._language_model
        return ffi.global_object("LanguageModel")

    def _options(self) -> dict[str, Any]:
        expected = [{"type": "text", "languages": list(self.languages)}]
        return {"expectedInputs": expected, "expectedOutputs": [dict(e) for e in expected]}

    @staticmethod
    def _arg(lm: Any, value: Any) -> Any:
        return ffi.to_js(value) if ffi.is_js(lm) else ffi.plain_copy(value)

    async def availability(self) -> Availability:
        """``LanguageModel.availability(options)``; ``"unavailable"`` when there is no
        ``LanguageModel``, when it raises (e.g. ``NotSupportedError`` for the languages), or
        when it answers something unknown."""
        lm = self._lm()
        if lm is None:
            self._why_unavailable = "this browser has no LanguageModel (Chrome's Prompt API)"
            return "unavailable"
        try:
            value = await ffi.maybe_await(lm.availability(self._arg(lm, self._options())))
        except Exception as exc:  # noqa: BLE001 - a failing probe means "not usable here"
            self._why_unavailable = f"LanguageModel.availability() failed: {ffi.from_js_error(exc)}"
            return "unavailable"
        if value not in AVAILABILITY_VALUES:
            self._why_unavailable = f"LanguageModel.availability() said {value!r}"
            return "unavailable"
        self._why_unavailable = f"LanguageModel.availability() said {value!r}"
        return value  # type: ignore[no-any-return]

    async def _check(self) -> Any:
        state = await self.availability()
        if state in ("downloadable", "downloading"):
            raise SiteAgentError(
                "model-download-required",
                "Chrome's on-device model must be downloaded first "
                f"({self._why_unavailable}); start it from a click (prepare()).",
            )
        if state != "available":
            raise SiteAgentError(
                "model-unavailable",
                f"Chrome's on-device model is not available here: {self._why_unavailable}.",
            )
        return self._lm()

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        """One step: a fresh session, one constrained prompt, the parsed reply.

        Returns:
            ``{"type": "tool", "name", "arguments"}`` or ``{"type": "answer", "text"}``.

        Raises:
            SiteAgentError: ``model-download-required``, ``model-unavailable``, ``model-error``,
                ``bad-reply`` or ``aborted`` (see the module docstring).
            AbortedError: ``request.signal`` aborted while the browser worked.
        """
        lm = await self._check()
        prompt, self.last_cut = build_prompt(
            request.messages,
            request.tools,
            max_history=self.max_history,
            max_prompt_chars=self.max_prompt_chars,
        )
        constraint = response_constraint(request.tools)
        signal = request.signal
        session: Any = None
        stage = "LanguageModel.create()"
        with ffi.JsAbortLink(signal, for_js=ffi.is_js(lm)) as link:
            try:
                options = {
                    "initialPrompts": [{"role": "system", "content": request.instructions}],
                    **self._options(),
                    "signal": link.signal,
                }
                session = await ffi.call_abortable(
                    link, ffi.maybe_await(lm.create(self._arg(lm, options)))
                )
                stage = "prompt()"
                text = await ffi.call_abortable(
                    link,
                    ffi.maybe_await(
                        session.prompt(
                            prompt,
                            self._arg(
                                lm, {"responseConstraint": constraint, "signal": link.signal}
                            ),
                        )
                    ),
                )
            except (asyncio.CancelledError, SiteAgentError):
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                raise _mapped(exc, signal, stage) from None
            finally:
                _destroy(session)
        return _parse(text)

    async def prepare(
        self,
        on_progress: Callable[[float], Any] | None = None,
        signal: AbortSignal | Any = None,
    ) -> None:
        """Download the on-device model (must run from a user gesture, e.g. a click).

        Calls ``LanguageModel.create({monitor, signal, ...})`` and forwards each
        ``downloadprogress`` event's ``loaded`` (a fraction, 0.0 to 1.0) to ``on_progress``.
        Returns when the model is ready; does nothing but report ``1.0`` when it already is.
        ``signal`` is a core :class:`AbortSignal` or a JS ``AbortSignal``.

        Raises:
            SiteAgentError: ``model-unavailable`` (nothing to download on this device);
                ``model-download-required`` when Chrome refuses (``NotAllowedError``: not called
                from a user gesture); ``model-error`` for a failed download (``NetworkError``);
                ``aborted``.
            AbortedError: ``signal`` aborted during the download.
        """
        state = await self.availability()
        if state == "available":
            if on_progress is not None:
                on_progress(1.0)
            return
        if state == "unavailable":
            raise SiteAgentError(
                "model-unavailable",
                f"Chrome's on-device model cannot be downloaded here: {self._why_unavailable}.",
            )
        lm = self._lm()
        core_signal, release = ffi.signal_from_js(signal)
        target: Any = None

        def progress(event: Any) -> None:
            loaded = ffi.field(event, "loaded")
            if on_progress is None or not isinstance(loaded, int | float):
                return
            with contextlib.suppress(Exception):  # a UI callback must not break the download
                on_progress(min(1.0, max(0.0, float(loaded))))

        progress_cb = ffi.callback(progress, lm)

        def monitor(m: Any) -> None:
            nonlocal target
            target = m
            m.addEventListener("downloadprogress", progress_cb.value)

        monitor_cb = ffi.callback(monitor, lm)
        session: Any = None
        try:
            with ffi.JsAbortLink(core_signal, for_js=ffi.is_js(lm)) as link:
                options = {**self._options(), "monitor": monitor_cb.value, "signal": link.signal}
                try:
                    session = await ffi.call_abortable(
                        link, ffi.maybe_await(lm.create(self._arg(lm, options)))
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                    raise _mapped(
                        exc, core_signal, "LanguageModel.create()", _PREPARE_ERRORS
                    ) from None
        finally:
            if target is not None:
                with contextlib.suppress(Exception):
                    target.removeEventListener("downloadprogress", progress_cb.value)
            progress_cb.destroy()
            monitor_cb.destroy()
            release()
            _destroy(session)


def _mapped(
    exc: BaseException,
    signal: AbortSignal | None,
    what: str,
    overrides: Mapping[str, ffi.ErrorRule] | None = None,
) -> BaseException:
    if signal is not None and signal.aborted and ffi.error_name(exc) == "AbortError":
        return AbortedError(signal.reason)
    return ffi.site_error(exc, what=what, overrides=overrides)


def _destroy(session: Any) -> None:
    if session is None:
        return
    destroy = ffi.field(session, "destroy")
    if callable(destroy):
        with contextlib.suppress(Exception):  # already destroyed, or the page is going away
            session.destroy()


def chrome_built_in(
    languages: Iterable[str] = ("en",),
    max_history: int = 12,
    max_prompt_chars: int = 6000,
    *,
    language_model: Any = None,
) -> ChromeBuiltIn:
    """Chrome's on-device model (Prompt API ``LanguageModel``) as a model adapter.

    Args:
        languages: language codes for ``expectedInputs``/``expectedOutputs`` (default ``en``).
        max_history: messages of the conversation sent per step (default 12).
        max_prompt_chars: the most characters (code points) of prompt text per step
            (default 6000, at least 1000).
        language_model: the ``LanguageModel`` object (default: the page's global one).

    Raises:
        ValueError: empty ``languages``, ``max_history`` < 1, ``max_prompt_chars`` < 1000.
    """
    return ChromeBuiltIn(languages, max_history, max_prompt_chars, language_model=language_model)
