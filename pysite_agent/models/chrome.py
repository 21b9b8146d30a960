"""``chrome_built_in()``: Chrome's on-device model through the Prompt API (``LanguageModel``).

The only module that touches ``LanguageModel`` (design, "Layers"); every JS crossing goes through
:mod:`pysite_agent.ffi`, and ``language_model=`` takes any object with the same methods
(tests pass a fake that follows the documented API).

How a step works (the Prompt API explainer, https://github.com/webmachinelearning/prompt-api):

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

The prompt ``text`` lists the tools, the conversation and the reply format, in at most
``max_prompt_chars`` characters (code points). The current turn (the latest visitor message and
the calls and results after it) is always shown; long tool results are shortened (head kept,
the cut marked) before older messages are dropped, and the tool list is shortened before the
current turn is: :func:`build_prompt` gives the exact order. The prompt says what was cut;
``ChromeBuiltIn.last_cut`` holds the same notes.

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

MIN_BLOCK_CHARS = 200
"""The current turn's messages are not shortened below this many characters (see
:func:`build_prompt`)."""

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
    """``text`` whole if it fits in ``limit`` code points, else its head and a marker saying how
    many characters were cut (the marker counts towards ``limit`` when ``limit`` allows it)."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(f" [… cut {len(text)} characters]"))
    return text[:keep] + f" [… cut {len(text) - keep} characters]"


def _tools_text(
    tools: Sequence[Mapping[str, Any]], description_chars: int, *, titles: bool = True
) -> str:
    if not tools:
        return "There are no tools on this page now: answer the visitor."
    lines = ["Tools on this page (call at most one per reply):"]
    for tool in tools:
        name = str(tool.get("name", ""))
        title = tool.get("title") if titles else None
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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


class _Prompt:
    """The prompt under construction: which messages are shown, each whole or cut to a limit,
    and how the tool list is written. ``size()`` is exactly ``len(text())``."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        older: list[int],
        current: list[int],
        dropped: int,
    ) -> None:
        self.tools = tools
        self.full = {i: _render(messages[i]) for i in (*older, *current)}
        self.results = {i for i in self.full if messages[i].get("role") == "tool"}
        self.older = older  # shown older messages, oldest first
        self.current = current  # the current turn: the visitor's message and what followed
        self.dropped = dropped  # older messages not shown
        self.skipped: list[int] = []  # current-turn messages not shown
        self.limits: dict[int, int] = {}  # message index -> characters it is cut to
        self.description_chars = TOOL_DESCRIPTION_CHARS
        self.titles = True
        self.tools_limit: int | None = None
        self._tools_cache: tuple[tuple[int, bool, int | None], str] | None = None

    def block(self, i: int) -> str:
        limit = self.limits.get(i)
        return self.full[i] if limit is None else _cut(self.full[i], limit)

    def shown(self) -> list[int]:
        return [*self.older, *(i for i in self.current if i not in self.skipped)]

    def tools_text(self) -> str:
        key = (self.description_chars, self.titles, self.tools_limit)
        if self._tools_cache is None or self._tools_cache[0] != key:
            text = _tools_text(self.tools, self.description_chars, titles=self.titles)
            if self.tools_limit is not None:
                text = _cut(text, self.tools_limit)
            self._tools_cache = (key, text)
        return self._tools_cache[1]

    def notes(self) -> list[str]:
        notes = []
        if self.dropped:
            notes.append(f"{_plural(self.dropped, 'earlier message')} not shown")
        if self.skipped:
            count = len(self.skipped)
            what = "earlier call or result" if count == 1 else "earlier calls and results"
            notes.append(f"{count} {what} for the visitor's latest message not shown")
        results = sum(1 for i in self.limits if i in self.results and i not in self.skipped)
        if results:
            notes.append(f"{_plural(results, 'long tool result')} shortened")
        others = sum(1 for i in self.limits if i not in self.results and i not in self.skipped)
        user = self.current[0] if self.current else -1
        if user in self.limits:
            notes.append("the visitor's latest message shortened")
            others -= 1
        if others:
            notes.append(f"{_plural(others, 'other long message')} shortened")
        if self.tools and (self.description_chars < TOOL_DESCRIPTION_CHARS or not self.titles):
            notes.append("tool descriptions shortened")
        if self.tools_limit is not None:
            notes.append("tool list cut")
        return notes

    def parts(self) -> list[str]:
        parts = [self.tools_text(), ""]
        notes = self.notes()
        if notes:
            parts.append(f"[Conversation cut to fit: {'; '.join(notes)}.]")
        parts.append("Conversation so far:")
        parts.extend(self.block(i) for i in self.shown())
        parts.extend(["", REPLY_FORMAT])
        return parts

    def size(self) -> int:
        parts = self.parts()
        return sum(len(p) for p in parts) + len(parts) - 1

    def text(self) -> str:
        return "\n".join(self.parts())


def build_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    max_history: int,
    max_prompt_chars: int,
) -> tuple[str, list[str]]:
    """The prompt text for one step, and notes on what was cut (empty when nothing was).

    The prompt is the tool list (each description cut to ``TOOL_DESCRIPTION_CHARS``), the
    conversation, and the reply format. The **current turn** is the latest visitor message and
    every message after it (the calls the model made for it and their results): it is always
    shown, whatever ``max_history`` says, and it is the last thing to be cut. Older messages
    fill ``max_history`` (counting the current turn); the ones before are not shown. With no
    visitor message at all, every message counts as older.

    When the prompt is longer than ``max_prompt_chars`` code points, it is made to fit in this
    order, each step only as far as needed and stopping as soon as it fits:

    1. a tool list longer than half of ``max_prompt_chars`` gets shorter descriptions (halved
       each time) until it is at most half;
    2. long tool results are shortened: older results to ``max_prompt_chars // 8`` characters,
       the current turn's to ``max_prompt_chars // 3``, older ones first;
    3. older messages are dropped, oldest first;
    4. the tool list is shortened further: shorter descriptions, then names only;
    5. the current turn's earlier calls and results (all but the latest call and result) are
       shortened further, earliest first, to ``MIN_BLOCK_CHARS`` each;
    6. those earlier calls and results are left out, earliest first (a result never without
       its call);
    7. the latest call and result are shortened, to ``MIN_BLOCK_CHARS`` each at the least;
    8. the visitor's latest message is shortened, to ``MIN_BLOCK_CHARS`` at the least;
    9. the tool list is cut at its end.

    A shortened text keeps its head and ends with ``[… cut N characters]``. The prompt says
    what was cut (``[Conversation cut to fit: …]``), and the notes returned say the same. The
    reply format always closes the prompt.
    """
    n = len(messages)
    latest_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    start = latest_user if latest_user >= 0 else n
    current = list(range(start, n))
    room = max(0, max_history - len(current))
    older = list(range(max(0, start - room), start))
    prompt = _Prompt(messages, tools, older, current, dropped=start - len(older))

    def over() -> int:
        return prompt.size() - max_prompt_chars

    def shorten(indices: Sequence[int], floor: int) -> None:
        for i in indices:
            for _ in range(3):  # again if the notes line grew with this cut
                excess = over()
                if excess <= 0:
                    return
                length = len(prompt.block(i))
                if length <= floor:
                    break
                prompt.limits[i] = max(floor, length - excess)

    def fewer_descriptions(until: Callable[[], bool]) -> None:
        while not until() and (prompt.description_chars > 0 or prompt.titles):
            if prompt.description_chars > 0:
                prompt.description_chars = (
                    prompt.description_chars // 2 if prompt.description_chars > 20 else 0
                )
            else:
                prompt.titles = False

    if over() <= 0:
        return prompt.text(), prompt.notes()
    # 1. a tool list over half of the prompt
    half = max_prompt_chars // 2
    fewer_descriptions(lambda: len(prompt.tools_text()) <= half or over() <= 0)
    # 2. long tool results, older ones first
    shorten([i for i in older if i in prompt.results], max(MIN_BLOCK_CHARS, max_prompt_chars // 8))
    shorten(
        [i for i in current if i in prompt.results], max(MIN_BLOCK_CHARS, max_prompt_chars // 3)
    )
    # 3. older messages, oldest first
    while over() > 0 and prompt.older:
        prompt.limits.pop(prompt.older.pop(0), None)
        prompt.dropped += 1
    # 4. the tool list, further
    fewer_descriptions(lambda: over() <= 0)
    # 5. the current turn's earlier calls and results, earliest first
    steps = current[1:] if latest_user >= 0 else current
    earlier, latest = steps[:-2], steps[-2:]
    shorten(earlier, MIN_BLOCK_CHARS)
    # 6. the current turn's earlier calls and results, left out, earliest first
    for i in earlier:
        if over() <= 0:
            break
        prompt.skipped.append(i)
    first = next((i for i in steps if i not in prompt.skipped), None)
    if prompt.skipped and first in earlier and first in prompt.results:
        prompt.skipped.append(first)  # never a result without its call
    # 7. the latest call and result; 8. the visitor's message
    shorten(latest, MIN_BLOCK_CHARS)
    if latest_user >= 0:
        shorten([latest_user], MIN_BLOCK_CHARS)
    # 9. the tool list, cut at the end
    for _ in range(3):  # the notes line may grow by a few characters once
        excess = over()
        if excess <= 0:
            break
        prompt.tools_limit = max(0, len(prompt.tools_text()) - excess)
    return prompt.text(), prompt.notes()


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
