"""``ChromeBuiltIn``: the sessions of Chrome's Prompt API (``LanguageModel``).

The only module that touches ``LanguageModel`` (design, "Layers"); every JS crossing goes
through :mod:`pysite_agent.ffi`. The protocol is in :mod:`pysite_agent.models.chrome`; the prompt
plan, the constraint schema and the reply reader are pure modules beside this one
(``prompt``, ``schema``, ``stream``), and the native tool-use shape is ``native``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pysite_agent import ffi
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.history import Trim
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.core.types import Availability, ModelRequest, canonical_json
from pysite_agent.models.base import AVAILABILITY_VALUES
from pysite_agent.models.chrome.native import (
    TOOL_TYPE_NAMES,
    NativeReply,
    native_messages,
    tool_declarations,
)
from pysite_agent.models.chrome.prompt import build_prompt, plan_prompt
from pysite_agent.models.chrome.schema import response_constraint
from pysite_agent.models.chrome.stream import AnswerStream, parse_constraint_reply

__all__ = ["CONTEXT_SHARE", "MIN_PROMPT_CHARS", "ChromeBuiltIn", "chrome_built_in"]

_NAME = "Chrome's model"  # in error messages

MIN_PROMPT_CHARS = 1000
"""``max_prompt_chars`` must be at least this (room for the tools and the reply format)."""

_PREPARE_ERRORS: Mapping[str, ffi.ErrorRule] = {
    "NotAllowedError": ffi.ErrorRule(
        "model-download-required",
        "Chrome starts the model download only right after a click: call prepare() from a "
        "user gesture (for example the download button's click handler).",
    ),
}

CONTEXT_SHARE = 0.8
"""The prompt may take at most this share of the context the session has left
(``contextWindow - contextUsage``); the rest is room for the reply."""


class ChromeBuiltIn:
    """Chrome's on-device model (Prompt API). See the module docstring for the protocol.

    Attributes:
        languages: BCP 47 codes for ``expectedInputs``/``expectedOutputs`` (Chrome supports
            ``en``, ``es``, ``ja``).
        max_history: messages of the conversation sent per step.
        max_prompt_chars: the most code points per prompt text (system instructions not counted).
        last_cut: what the latest prompt left out (notes; empty when nothing).
        last_mode: ``"native"`` or ``"constraint"``: how the latest step asked for a tool.
        last_refused: names of the tool calls of the latest reply that were refused (a reply
            with several calls: only the first is used).
        sessions_created: how many times ``LanguageModel.create()`` was called for steps.
    """

    def __init__(
        self,
        languages: Iterable[str] = ("en",),
        max_history: int = 12,
        max_prompt_chars: int = 6000,
        *,
        language_model: Any = None,
        tool_use: bool | None = None,
        tool_types: Mapping[str, Any] | None = None,
        document: Any = None,
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
        if tool_use not in (None, True, False):
            raise ValueError("tool_use must be None (feature test), True or False")
        self.languages = langs
        self.max_history = max_history
        self.max_prompt_chars = max_prompt_chars
        self.last_cut: list[str] = []
        self.last_mode: str | None = None
        self.last_refused: list[str] = []
        self.sessions_created = 0
        self._language_model = language_model
        self._tool_use = tool_use
        self._tool_types = dict(tool_types) if tool_types is not None else None
        self._document = document
        self._why_unavailable = ""
        self._native: bool | None = None  # the feature test's answer, once known
        self._base: Any = None  # the base session: system prompt (and tools, native)
        self._base_key: str | None = None
        self._visibility: ffi.OwnedCallback | None = None
        self._visibility_target: Any = None
        self._budget_scale = 1.0  # lowered after the browser reported a context overflow

    @property
    def name(self) -> str:
        return "chrome built-in"

    @property
    def unavailable_reason(self) -> str:
        """Why the latest :meth:`availability` said what it said ("" before the first)."""
        return self._why_unavailable

    def _lm(self) -> Any:
        if self._language_model is not None:
            return self._language_model
        return ffi.global_object("LanguageModel")

    def _options(self, native: bool = False) -> dict[str, Any]:
        expected: list[dict[str, Any]] = [{"type": "text", "languages": list(self.languages)}]
        if not native:
            return {"expectedInputs": expected, "expectedOutputs": [dict(e) for e in expected]}
        return {
            "expectedInputs": [*expected, {"type": "tool-call"}, {"type": "tool-response"}],
            "expectedOutputs": [dict(expected[0]), {"type": "tool-call"}],
        }

    @staticmethod
    def _arg(lm: Any, value: Any) -> Any:
        return ffi.to_js(value) if ffi.is_js(lm) else ffi.plain_copy(value)

    async def availability(self) -> Availability:
        """``LanguageModel.availability(options)``; ``"unavailable"`` when there is no
        ``LanguageModel``, when it raises (e.g. ``NotSupportedError`` for the languages), or
        when it answers something unknown."""
        lm = self._lm()
        if lm is None and ffi.in_worker():
            self._why_unavailable = (
                f"{ffi.WORKER_HAS_NO_PAGE}; use sa.proxy(url) (the site's proxy server) or "
                "sa.custom(fn) there"
            )
            return "unavailable"
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

    # -- native tool use: the feature test ------------------------------------------------

    def _types(self) -> dict[str, Any] | None:
        """The three tool-use classes (injected, or the page's globals), or ``None``."""
        if self._tool_types is not None:
            found = {n: self._tool_types.get(n) for n in TOOL_TYPE_NAMES}
        elif self._language_model is None:
            found = {n: ffi.global_object(n) for n in TOOL_TYPE_NAMES}
        else:
            return None
        return found if all(v is not None for v in found.values()) else None

    async def _uses_native(self, lm: Any) -> bool:
        """Whether this browser offers native tool use (Prompt API "Tool use"): the three
        classes exist, and ``availability()`` with the ``tool-call``/``tool-response`` types
        says ``"available"``. ``tool_use=False`` turns it off; the answer is kept."""
        if self._tool_use is False:
            return False
        if self._native is not None:
            return self._native
        native = False
        if self._types() is not None:
            try:
                state = await ffi.maybe_await(lm.availability(self._arg(lm, self._options(True))))
                native = state == "available"
            except Exception:  # noqa: BLE001 - refused: tool use is not offered here
                native = False
        self._native = native
        return native

    # -- sessions --------------------------------------------------------------------------

    async def _base_session(
        self, lm: Any, request: ModelRequest, native: bool, link: ffi.JsAbortLink
    ) -> Any:
        """The base session for these instructions and tools: created once (per page, tool
        revision and conversation), cloned for each step, never prompted itself."""
        declarations = tool_declarations(request.tools) if native else []
        key = canonical_json(
            [native, request.instructions, declarations or list(request.tools), self.languages]
        )
        if self._base is not None and self._base_key == key:
            return self._base
        self._drop_sessions()
        options: dict[str, Any] = {
            "initialPrompts": [{"role": "system", "content": request.instructions}],
            **self._options(native),
        }
        if native and declarations:
            options["tools"] = declarations
        self.sessions_created += 1
        # Its own signal, tied to the step's only while create() runs: aborting create()'s
        # signal later would also destroy the session, and the base outlives the step.
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(lm)) as own:
            if link.aborted:
                own.abort("aborted")
            options["signal"] = own.signal
            base = await ffi.call_abortable(own, ffi.maybe_await(lm.create(self._arg(lm, options))))
        self._base, self._base_key = base, key
        self._watch_visibility()
        return base

    async def _step_session(
        self, lm: Any, request: ModelRequest, native: bool, link: ffi.JsAbortLink
    ) -> Any:
        """A clone of the base session for one step (a new base when the clone fails because
        the browser dropped the base, e.g. ``InvalidStateError``)."""
        for attempt in (1, 2):
            base = await self._base_session(lm, request, native, link)
            clone = ffi.field(base, "clone")
            if not callable(clone):
                raise SiteAgentError(
                    "model-error", "The browser's LanguageModel session has no clone()."
                )
            try:
                return await ffi.call_abortable(
                    link,
                    ffi.maybe_await(base.clone(self._arg(lm, {"signal": link.signal}))),
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt == 2 or ffi.error_name(exc) == "AbortError":
                    raise
                self._drop_sessions()
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop_sessions(self) -> None:
        base, self._base, self._base_key = self._base, None, None
        _destroy(base)

    def reset(self) -> None:
        """A new conversation: the base session is destroyed; the next step creates one."""
        self._drop_sessions()

    def close(self) -> None:
        """Destroy the sessions and stop following the page's visibility (idempotent)."""
        self._drop_sessions()
        owned, target = self._visibility, self._visibility_target
        self._visibility = self._visibility_target = None
        if owned is not None:
            with contextlib.suppress(Exception):
                target.removeEventListener("visibilitychange", owned.value)
            owned.destroy()

    def _watch_visibility(self) -> None:
        """Destroy the sessions when the page is hidden (``visibilitychange`` on the page's
        ``document``, or the injected one): a hidden page should not hold the model."""
        if self._visibility is not None:
            return
        target = self._document
        if target is None and self._language_model is None:
            target = ffi.global_object("document")
        if target is None or not callable(ffi.field(target, "addEventListener")):
            return

        def changed(*_event: Any) -> None:
            if ffi.field(target, "visibilityState") == "hidden":
                self._drop_sessions()

        owned = ffi.callback(changed, target)
        target.addEventListener("visibilitychange", owned.value)
        self._visibility, self._visibility_target = owned, target

    # -- one step --------------------------------------------------------------------------

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        """One step: a clone of the base session, one prompt, the parsed reply.

        With native tool use (Prompt API "Tool use"; found by feature tests) the step streams
        the conversation as messages with ``tool-call``/``tool-response`` parts and reads
        ``tool-call`` parts from ``promptStreaming()``; otherwise it prompts with a
        ``responseConstraint`` (see the module docstring). ``request.on_text`` (when set)
        receives the answer text as it is written.

        Returns:
            ``{"type": "tool", "name", "arguments"}`` or ``{"type": "answer", "text"}``.

        Raises:
            SiteAgentError: ``model-download-required``, ``model-unavailable``, ``model-error``,
                ``bad-reply`` or ``aborted`` (see the module docstring).
            AbortedError: ``request.signal`` aborted while the browser worked.
        """
        lm = await self._check()
        # Without tools there is nothing to declare, and a session made without tools takes no
        # tool content: such a step (e.g. after the page removed its tools) uses the constraint.
        native = bool(tool_declarations(request.tools)) and await self._uses_native(lm)
        self.last_mode = "native" if native else "constraint"
        self.last_refused = []
        on_text = request.on_text
        signal = request.signal
        session: Any = None
        overflow: ffi.OwnedCallback | None = None
        overflowed = False
        stage = "LanguageModel.create()"
        with ffi.JsAbortLink(signal, for_js=ffi.is_js(lm)) as link:
            try:
                session = await self._step_session(lm, request, native, link)

                def on_overflow(*_event: Any) -> None:
                    nonlocal overflowed
                    overflowed = True

                if callable(ffi.field(session, "addEventListener")):
                    overflow = ffi.callback(on_overflow, session)
                    session.addEventListener("contextoverflow", overflow.value)
                stage = "measureContextUsage()"
                constraint = None if native else response_constraint(request.tools)
                prompt_input = await self._fitted_input(
                    lm, session, request, native, link, constraint
                )
                stage = "promptStreaming()" if native or on_text else "prompt()"
                options: dict[str, Any] = {"signal": link.signal}
                if constraint is not None:
                    options["responseConstraint"] = constraint
                if native:
                    reply = await self._native_reply(
                        lm, session, prompt_input, options, link, on_text
                    )
                elif on_text is not None:
                    stream = AnswerStream()

                    def forward(chunk: Any) -> None:
                        if isinstance(chunk, str):
                            text = stream.feed(chunk)
                            if text:
                                on_text(text)

                    chunks = await self._read_stream(
                        lm, session, prompt_input, options, link, forward
                    )
                    reply = parse_constraint_reply(
                        "".join(c for c in chunks if isinstance(c, str)), model_name=_NAME
                    )
                else:
                    text = await ffi.call_abortable(
                        link,
                        ffi.maybe_await(session.prompt(prompt_input, self._arg(lm, options))),
                    )
                    reply = parse_constraint_reply(text, model_name=_NAME)
            except (asyncio.CancelledError, SiteAgentError):
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                raise _mapped(exc, signal, stage) from None
            finally:
                if overflow is not None:
                    with contextlib.suppress(Exception):
                        session.removeEventListener("contextoverflow", overflow.value)
                    overflow.destroy()
                _destroy(session)
        if overflowed:
            # The browser dropped the oldest context to make room: send less from now on.
            self._budget_scale = max(0.25, self._budget_scale * 0.75)
            self.last_cut.append("the browser reported a context overflow (contextoverflow)")
        if self.last_cut and request.on_trim is not None:
            with contextlib.suppress(Exception):  # recording must not break the step
                request.on_trim(Trim("prompt-chars", notes=tuple(self.last_cut)))
        return reply

    async def _fitted_input(
        self,
        lm: Any,
        session: Any,
        request: ModelRequest,
        native: bool,
        link: ffi.JsAbortLink,
        constraint: Mapping[str, Any] | None,
    ) -> Any:
        """The step's input, trimmed until it fits the session's context window: measured with
        ``measureContextUsage()`` against ``CONTEXT_SHARE`` of ``contextWindow -
        contextUsage`` when the session has them (Prompt API "Context window"); the prompt text
        is cut as :func:`build_prompt` says, from ``max_prompt_chars`` down to
        ``MIN_PROMPT_CHARS`` at the least."""
        chars = max(MIN_PROMPT_CHARS, int(self.max_prompt_chars * self._budget_scale))
        measure = ffi.field(session, "measureContextUsage")
        window = ffi.field(session, "contextWindow")
        used = ffi.field(session, "contextUsage")
        room: float | None = None
        if callable(measure) and isinstance(window, int | float) and math.isfinite(window):
            room = (window - (used if isinstance(used, int | float) else 0)) * CONTEXT_SHARE
        measure_options: dict[str, Any] = {"signal": link.signal}
        if constraint is not None:
            measure_options["responseConstraint"] = constraint
        fitted: str | None = None
        for _ in range(5):
            prompt_input, self.last_cut = self._input(lm, request, native, chars)
            if fitted is not None:
                self.last_cut.append(fitted)
            if room is None:
                return prompt_input
            need = await ffi.call_abortable(
                link,
                ffi.maybe_await(
                    session.measureContextUsage(prompt_input, self._arg(lm, measure_options))
                ),
            )
            if not isinstance(need, int | float) or need <= room:
                return prompt_input
            if chars <= MIN_PROMPT_CHARS:
                self.last_cut.append("still too long for the model's context window")
                return prompt_input
            chars = max(MIN_PROMPT_CHARS, int(chars * room / need * 0.9))
            fitted = f"cut to {chars} characters to fit the model's context window"
        return prompt_input

    def _input(
        self, lm: Any, request: ModelRequest, native: bool, chars: int
    ) -> tuple[Any, list[str]]:
        if not native:
            return build_prompt(
                request.messages,
                request.tools,
                max_history=self.max_history,
                max_prompt_chars=chars,
            )
        plan = plan_prompt(
            request.messages, [], max_history=self.max_history, max_prompt_chars=chars
        )
        messages = native_messages(request.messages, plan, self._types() or {})
        return (ffi.to_js(messages) if ffi.is_js(lm) else messages), plan.notes()

    async def _read_stream(
        self,
        lm: Any,
        session: Any,
        prompt_input: Any,
        options: Mapping[str, Any],
        link: ffi.JsAbortLink,
        on_chunk: Callable[[Any], None],
    ) -> list[Any]:
        """``promptStreaming(input, options)`` read to its end with ``getReader()``; each
        chunk (a string, or a ``{type: "tool-call", value}`` part) goes to ``on_chunk``."""
        stream = session.promptStreaming(prompt_input, self._arg(lm, dict(options)))
        stream = await ffi.maybe_await(stream)
        reader = stream.getReader()
        chunks: list[Any] = []
        try:
            while True:
                item = await ffi.call_abortable(link, ffi.maybe_await(reader.read()))
                if ffi.field(item, "done"):
                    break
                chunk = ffi.field(item, "value")
                chunks.append(chunk)
                on_chunk(chunk)
        except BaseException:
            with contextlib.suppress(Exception):
                reader.releaseLock()
            raise
        return chunks

    async def _native_reply(
        self,
        lm: Any,
        session: Any,
        prompt_input: Any,
        options: Mapping[str, Any],
        link: ffi.JsAbortLink,
        on_text: Callable[[str], None] | None,
    ) -> dict[str, Any]:
        """Read a native-tool-use reply: text chunks and ``tool-call`` parts (Prompt API
        "Tool use"). The first call is the reply; the others are refused (not run, not shown
        to the model again; their names are in :attr:`last_refused`). Text is passed to
        ``on_text`` as it arrives, until the first call."""
        reader = NativeReply(on_text)
        await self._read_stream(lm, session, prompt_input, options, link, reader.take)
        self.last_refused = reader.refused()
        return reader.reply()

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
    tool_use: bool | None = None,
    tool_types: Mapping[str, Any] | None = None,
    document: Any = None,
) -> ChromeBuiltIn:
    """Chrome's on-device model (Prompt API ``LanguageModel``) as a model adapter.

    Args:
        languages: language codes for ``expectedInputs``/``expectedOutputs`` (default ``en``).
        max_history: messages of the conversation sent per step (default 12).
        max_prompt_chars: the most characters (code points) of prompt text per step
            (default 6000, at least 1000).
        language_model: the ``LanguageModel`` object (default: the page's global one).
        tool_use: ``None`` (default) uses native tool use when the feature tests find it
            (Prompt API "Tool use"), ``False`` always uses ``responseConstraint``, ``True``
            asks for native tool use but still falls back when the browser lacks it.
        tool_types: ``{"LanguageModelToolCall", "LanguageModelToolSuccess",
            "LanguageModelToolError"}`` classes (default: the page's globals; with an injected
            ``language_model`` and no ``tool_types``, native tool use is off).
        document: where ``visibilitychange`` is followed (default: the page's ``document``
            when ``language_model`` is the page's own).

    Raises:
        ValueError: empty ``languages``, ``max_history`` < 1, ``max_prompt_chars`` < 1000,
            ``tool_use`` not ``None``/``True``/``False``.
    """
    return ChromeBuiltIn(
        languages,
        max_history,
        max_prompt_chars,
        language_model=language_model,
        tool_use=tool_use,
        tool_types=tool_types,
        document=document,
    )
