"""The Python side of ``<site-agent>``: what ``web/element/element.js`` calls, and nothing more.

The element holds no agent logic. It creates one :class:`ElementController` per element with
:func:`create_controller` and talks to it through a small boundary:

JS -> Python (methods of the controller; every ``async`` one returns a JS thenable that
resolves to a JSON **string**, never a proxy)::

    configure(config_json, js_values) -> envelope(status)   # rebuilds the agent
    status()                          -> envelope(status)
    run(text, run_id)                 -> envelope(RunResult JSON)
    replay(trace_json, js_values)     -> envelope(ReplayResult JSON)
    evaluate(cases_json, js_values)   -> envelope(EvalReport JSON)   # tool-choice eval
    prepare(on_progress)              -> envelope(status)   # e.g. download Chrome's model
    forget_model()                    -> envelope(status)   # remove the site's kept model
    tools()                           -> envelope([tool JSON, ...])
    restore(record_json, run_id)      -> envelope({restored, resumed, ended})  # next page
    state()                           -> the conversation and run state, JSON text
    abort(cause); deny_pending(cause); reset(); close()    # synchronous
    route(url)                        -> bool: a single-page app's route changed  # synchronous

``reset()`` aborts a running run and lets the next ``run()`` start at once; the old run ends in
the background against the old conversation (its ``run()`` still resolves, ``aborted``).

``envelope(x)`` is ``{"ok": true, "value": x}`` or ``{"ok": false, "error": {"code",
"message"}}`` where ``code`` is one of the agent's error codes (``busy``, ``aborted``, ...) or
``config`` (the element's settings are unusable; the message is for the site owner).

``status`` is ``{"model": str, "active": str | null, "availability": "available" |
"downloadable" | "downloading" | "unavailable", "models": [{"name", "availability",
"canPrepare", "size"?, "stored"?, "usage"?}]}``; ``active`` names the model that would answer
now; ``size``/``stored`` (bytes) are the site's model's download size and what it keeps here,
``usage`` its latest step's ``{promptTokens, completionTokens, promptChars, seconds}``.

Python -> JS (the ``bridge`` object the element passes to :func:`create_controller`)::

    bridge.emit(event_json, extra_json)     # each agent event's to_json(), as a string
    bridge.started(text, run_id)            # a run was accepted (not busy)
    bridge.confirm(request_json, signal)    # -> Promise<boolean>: the confirmation card
    bridge.save(state_json, run_id)         # optional: after each step, state() for the
                                            # element's record (docs/element.md, "Across pages");
                                            # run_id as in extra_json: a reset run's is stale
    bridge.modelContext, bridge.languageModel  # optional: used instead of the page's
                                            # document.modelContext and LanguageModel
    bridge.document                         # optional: its visibilityState and
                                            # visibilitychange stand for the page's
    bridge.toolTypes                        # optional: the Prompt API's tool-use classes
                                            # (LanguageModelToolCall, ...) to construct
    bridge.localEngine(options)             # optional: the site's model's engine host
                                            # (web/runtime/local-model.js), made on first use

In a Web Worker (``web/runtime/worker.js``) the bridge's ``modelContext``, ``languageModel``,
``document`` and ``toolTypes`` are stand-ins that ask or follow the page over the worker channel
(docs/runtime.md), and ``js_values`` holds
stand-ins for the site's JS options: this module runs the same on either side.

``event_json`` is exactly the event's JSON (its published shape). ``extra_json`` is the element's
own channel: ``{"run": run_id}`` (the run the event belongs to: the ``run_id`` given to
``run()``, or a number the controller chose; events of a run that was reset still carry their
own id, so the element can drop them), plus ``"title"`` on ``tool-call``, ``confirm-result``
and ``tool-result`` events when the tool has one (from the tool list the model was shown in that
step, or this page's tools for a call that began on the previous page).

``config_json`` is described in :mod:`pysite_agent.browser._config`. ``js_values`` is a JS
object holding the ``element.options`` entries that are JS values, each optional:
``model`` (``{respond(request), name?, availability?(), prepare?({onProgress, signal})}``),
``confirm`` (``(request, {signal}) => boolean | Promise<boolean>``; replaces the card) and
``tools`` (``{getTools(), executeTool(tool, args, {signal})}``, e.g. a shim made with
``createModelContext()``). For :meth:`ElementController.replay`, ``confirm`` may also be the
string ``"recorded"`` (answer as the trace's visitor did).

Ownership: data crosses as JSON text or as fresh JS objects made by ``JSON.parse``, so no
PyProxy is created per event, per confirmation or per model call. The controller itself is a
PyProxy owned by the element, which destroys it after :meth:`ElementController.close`
(named ``close`` because ``destroy`` is the PyProxy's own method). The
only other PyProxy is the ``onProgress`` callback handed to a JS model's ``prepare``, destroyed
when ``prepare`` settles.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import json
from collections.abc import Coroutine
from typing import Any

from pysite_agent import (
    SiteAgent,
    SiteAgentError,
    create_site_agent,
    ffi,
    recorded_decisions,
    replay,
)
from pysite_agent.agent._gateway import unambiguous
from pysite_agent.browser._config import ConfigError, ElementConfig, parse_config
from pysite_agent.browser._js_values import JsModel as JsModel  # re-exported
from pysite_agent.browser._js_values import (
    TitledSource,
    build_model,
    build_tools,
    close_source,
    js_confirm,
)
from pysite_agent.core.events import ConfirmResultEvent, ToolCallEvent, ToolResultEvent
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.trace import utc_now
from pysite_agent.core.types import (
    ConfirmRequest,
    denial_cause,
)
from pysite_agent.core.validation import loads_strict
from pysite_agent.core.visit import check_run, end_run, page_of
from pysite_agent.models.base import (
    availability_of,
    can_prepare,
    model_parts,
    optional_member,
)

AVAILABILITY_ORDER = ("available", "downloading", "downloadable")

_NOT_A_STEP = frozenset({"text-delta", "thinking", "tool-call"})
"""Events after which the element's record is not saved again: nothing was decided, or (a
``tool-call``) the next event follows before anything can run or wait: a ``confirm-request``
(the card is up), a ``confirm-result`` (just before the tool runs) or an invalid call's
``tool-result``. Each of those is saved, so a tool that opens another page always finds its
call in the record."""

_RUN_ID: contextvars.ContextVar[int | None] = contextvars.ContextVar("site_agent_run", default=None)
"""The element's id of the run whose task emits an event. A run's task copies the context when
``agent.run()`` creates it, so every event it emits (after a reset too) carries its own id."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def ok(value: Any = None) -> str:
    """The success envelope, as JSON text."""
    return _dumps({"ok": True, "value": value})


def fail(code: str, message: str) -> str:
    """The failure envelope, as JSON text."""
    return _dumps({"ok": False, "error": {"code": code, "message": message}})


# --------------------------------------------------------------------------- controller


MAX_INPUT_DEPTH = 256
"""JSON the page hands over (settings, a trace, eval cases, a visit record) nesting deeper than
this is refused with a clear error before it is parsed (docs/boundaries.md): a deep recursion
raises ``RecursionError`` on CPython and overflows the JavaScript stack in Pyodide."""


def _loads(text: str) -> Any:
    """Strict JSON ``text`` from the page, depth-bounded (raises ``ValueError``)."""
    return loads_strict(text, max_depth=MAX_INPUT_DEPTH)


class ElementController:
    """One element's agent (see the module docstring for the boundary)."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge
        self._agent: SiteAgent | None = None
        self._config: ElementConfig | None = None
        self._config_error = "The assistant is not configured yet."
        self._lock = asyncio.Lock()
        self._busy = False
        self._run: Any = None
        self._run_ids = itertools.count(1_000_000)  # when the element gives none
        self._titles: TitledSource | None = None
        self._replay: AbortController | None = None
        self._eval: AbortController | None = None
        self._prepare: AbortController | None = None
        self._destroyed = False
        self._page: dict[str, str] | None = None
        self._rid: int | None = None  # the id of the current run's events
        self._stops = 0  # abort() and reset() so far: a run() called before one does not start
        self._warming: AbortController | None = None
        self._warm_task: asyncio.Future[None] | None = None

    # ---- settings

    async def configure(self, config_json: str, js_values: Any = None) -> str:
        """Build a fresh agent (fresh conversation) from the element's settings.

        Waits for a running run to finish first. Returns ``envelope(status)``; on bad
        settings ``{"ok": false, "error": {"code": "config", ...}}`` and no agent.
        """
        async with self._lock:
            while (running := self._run) is not None:  # a run ends first (not a reset one)
                await asyncio.wait([running.done])
            if self._destroyed:
                return fail("config", "The element was removed.")
            self._drop_agent()
            try:
                raw = _loads(config_json)
                config = parse_config(raw)
                with contextlib.suppress(ValueError):
                    self._page = page_of(raw.get("pageUrl"))
                model = build_model(
                    config,
                    ffi.field(js_values, "model"),
                    ffi.field(self._bridge, "languageModel"),
                    ffi.field(self._bridge, "document"),
                    ffi.field(self._bridge, "toolTypes"),
                    ffi.field(self._bridge, "localEngine"),
                )
                confirm_fn = ffi.field(js_values, "confirm")
                if confirm_fn is not None and not callable(confirm_fn):
                    raise ConfigError("options.confirm must be a function")
                confirm = js_confirm(confirm_fn) if confirm_fn is not None else self._card
                tools = TitledSource(
                    build_tools(
                        ffi.field(js_values, "tools"),
                        ffi.field(self._bridge, "modelContext"),
                        debugging_tools=config.debugging_tools,
                    )
                )
                agent = create_site_agent(
                    model=model,
                    tools=tools,
                    confirm=confirm,
                    pre_approved=config.pre_approved,
                    max_steps=config.max_steps,
                    tool_timeout_ms=config.tool_timeout_ms,
                    instructions=config.instructions,
                    max_result_chars=config.max_result_chars,
                )
            except (ConfigError, ValueError, TypeError, SiteAgentError) as exc:
                self._config_error = str(exc)
                return fail("config", self._config_error)
            agent.on_event(self._emit)
            agent.on_tools_change(self._warm)  # the source is closed with the agent
            agent.page = self._page
            self._agent, self._config, self._titles = agent, config, tools
        return await self.status()

    async def status(self) -> str:
        """``envelope(status)``: the model's name and availability (see the module docstring)."""
        agent = self._agent
        if agent is None:
            return fail("config", self._config_error)
        model = agent.model
        parts = model_parts(model)
        entries = []
        for part in parts:
            state = await availability_of(part)
            entry = {"name": part.name, "availability": state, "canPrepare": can_prepare(part)}
            for key, member in (("size", "download_bytes"), ("stored", "stored_bytes")):
                value = optional_member(part, member)
                if isinstance(value, int) and not isinstance(value, bool):
                    entry[key] = value  # the site's model: bytes to download / kept here
            usage = optional_member(part, "last_usage")
            if isinstance(usage, dict) and usage:
                entry["usage"] = dict(usage)  # the latest step's token counts and seconds
            entries.append(entry)
        states = [e["availability"] for e in entries]
        overall = next((s for s in AVAILABILITY_ORDER if s in states), "unavailable")
        active = next((e["name"] for e in entries if e["availability"] == "available"), None)
        if active is not None:
            self._warm()
        return ok(
            {"model": model.name, "active": active, "availability": overall, "models": entries}
        )

    # ---- runs

    def run(self, text: str, run_id: Any = None) -> Coroutine[Any, Any, str]:
        """Run the agent on ``text``; awaitable, ``envelope(RunResult JSON)``.

        Fails with ``empty-message`` for text that is empty or only white space (the panel's
        input sends none), ``busy`` while a run or replay is in progress, ``config`` without an
        agent, and ``aborted`` when :meth:`abort` or :meth:`reset` came after this call but
        before the run started (the call is taken when it is made; its work starts in a later
        task).
        Events go to ``bridge.emit`` as they happen (``done`` included), tagged with
        ``run_id`` (an integer the element chose; the controller picks one when it is not).
        After :meth:`reset` the next run may start while this one still ends.
        """
        return self._run_from(self._stops, text, run_id)

    async def _run_from(self, stops: int, text: str, run_id: Any) -> str:
        if stops != self._stops:
            return fail("aborted", "Stopped before the message was sent.")
        if not str(text).strip():  # as the panel's own input: nothing typed, nothing sent
            return fail("empty-message", "Nothing to ask: the message is empty.")
        if self._busy:
            return fail("busy", "A run is already in progress; wait for it or press Stop.")
        self._busy = True
        run: Any = None
        try:
            async with self._lock:  # waits for a configure() in progress
                agent = self._agent
                if agent is None:
                    return fail("config", self._config_error)
                rid = (
                    run_id
                    if isinstance(run_id, int) and not isinstance(run_id, bool)
                    else next(self._run_ids)
                )
                token = _RUN_ID.set(rid)
                try:
                    run = agent.run(str(text))
                except SiteAgentError as exc:
                    return fail(exc.code, exc.message)
                finally:
                    _RUN_ID.reset(token)
                self._run, self._rid = run, rid
                with contextlib.suppress(Exception):
                    self._bridge.started(str(text), rid)
            result = await run.done
            return ok(result.to_json())
        finally:
            if run is None or self._run is run:  # not when a reset let another run start
                self._run = None
                self._busy = False

    async def replay(self, trace_json: str, js_values: Any = None) -> str:
        """Re-run a trace's tool calls without the model; ``envelope(ReplayResult JSON)``.

        ``js_values.confirm``: a JS function, ``"recorded"``, or absent (the card asks).
        ``js_values.preApproved``: names (default: the element's ``pre-approved``).
        """
        if self._busy:
            return fail("busy", "A run is already in progress; wait for it or press Stop.")
        self._busy = True
        try:
            async with self._lock:
                agent, config = self._agent, self._config
                if agent is None or config is None:
                    return fail("config", self._config_error)
                try:
                    trace = _loads(trace_json)
                    confirm_value = ffi.field(js_values, "confirm")
                    if confirm_value == "recorded":
                        confirm: Any = recorded_decisions(trace)
                    elif callable(confirm_value):
                        confirm = js_confirm(confirm_value)
                    else:
                        confirm = self._card
                    approved = ffi.json_to_py(ffi.field(js_values, "preApproved"))
                    controller = self._replay = AbortController()
                    result = await replay(
                        trace,
                        tools=agent.source,
                        confirm=confirm,
                        pre_approved=config.pre_approved if approved is None else approved,
                        tool_timeout_ms=config.tool_timeout_ms,
                        max_result_chars=config.max_result_chars,
                        signal=controller.signal,
                    )
                except SiteAgentError as exc:
                    return fail(exc.code, exc.message)
                except (ValueError, TypeError) as exc:
                    return fail("config", f"Not a trace v1: {exc}")
                return ok(result.to_json())
        finally:
            self._replay = None
            self._busy = False

    async def evaluate(self, cases_json: str, js_values: Any = None) -> str:
        """The tool-choice eval (:mod:`pysite_agent.agent.evals`) with the element's model;
        ``envelope(EvalReport JSON)``.

        ``cases_json`` is an eval set v1 (the webmcp-evals case format); a set without tools
        is run against the page's tools as they are now, and one without instructions with the
        element's ``instructions``. No tool runs: results are scripted. Fails with ``busy``
        while a run, replay or eval is in progress, ``config`` for cases that do not follow
        the format; :meth:`abort` stops it (``aborted``).
        """
        if self._busy:
            return fail("busy", "A run is already in progress; wait for it or press Stop.")
        self._busy = True
        try:
            async with self._lock:
                agent, config = self._agent, self._config
                if agent is None or config is None:
                    return fail("config", self._config_error)
                from pysite_agent.agent.evals import EvalSetError, load_eval_set, run_eval

                try:
                    data = _loads(cases_json)
                    page_tools = None
                    if not (isinstance(data, dict) and data.get("tools") is not None):
                        page_tools = [tool.to_json() for tool in await agent.tools()]
                    eval_set = load_eval_set(data, tools=page_tools)
                    instructions = eval_set.instructions or config.instructions
                    controller = self._eval = AbortController()
                    report = await run_eval(
                        eval_set, agent.model, instructions=instructions, signal=controller.signal
                    )
                except (EvalSetError, ValueError) as exc:
                    return fail("config", f"Not an eval set v1: {exc}")
                except AbortedError:
                    return fail("aborted", "The eval was stopped.")
                except SiteAgentError as exc:
                    return fail(exc.code, exc.message)
                return ok(report.to_json())
        finally:
            self._eval = None
            self._busy = False

    def state(self) -> str:
        """``{"conversation": {version, messages, afterUntrusted} | null, "run": run state |
        null}`` as JSON text (:mod:`pysite_agent.core.visit`), for the element's record."""
        agent = self._agent
        if agent is None:
            return _dumps({"conversation": None, "run": None})
        # Serialized at once: the run state need not be a copy (this runs after each step).
        state = {"conversation": agent.export_state(), "run": agent.run_state(copy=False)}
        return _dumps(state)

    async def restore(self, record_json: str, run_id: Any = None) -> str:
        """Take up the conversation of the previous page: ``{"conversation", "run"?,
        "ended"?}`` (``ended``: ``"expired"`` or ``"no-element"`` when the run must not go
        on). The conversation is imported whole (messages with the untrusted-output state) or
        not at all; a run that a page change interrupted goes on here in the background (its
        events and ``done`` reach ``bridge.emit``, tagged with ``run_id``), else its trace is
        finished as aborted.

        Returns ``envelope({"restored": bool, "resumed": bool, "ended": trace | null})``; a
        record that fails the checks is ``{"ok": false, "error": {"code": "restore", ...}}``
        and nothing is taken.
        """
        async with self._lock:
            agent = self._agent
            if agent is None:
                return fail("config", self._config_error)
            if self._busy:
                return fail("busy", "A run is already in progress.")
            try:
                record = _loads(record_json)
                if not isinstance(record, dict):
                    raise ValueError("the record is not an object")
                run = record.get("run")
                checked = None if run is None else check_run(run)
                agent.import_state(record.get("conversation"))
            except (ValueError, SiteAgentError) as exc:
                return fail("restore", f"The stored conversation was not used: {exc}")
            if checked is None:
                return ok({"restored": True, "resumed": False, "ended": None})
            ended = record.get("ended")
            if ended is not None:
                trace = end_run(checked, str(ended), utc_now())
                return ok({"restored": True, "resumed": False, "ended": trace})
            rid = (
                run_id
                if isinstance(run_id, int) and not isinstance(run_id, bool)
                else next(self._run_ids)
            )
            if self._titles is not None:
                # This page's tool titles, for the call that was open when the page changed.
                with contextlib.suppress(Exception):
                    await self._titles.get_tools()
            token = _RUN_ID.set(rid)
            try:
                resumed = agent.resume(checked)
            finally:
                _RUN_ID.reset(token)
            self._busy = True
            self._run, self._rid = resumed, rid

            def finished(_: Any) -> None:
                if self._run is resumed:
                    self._run = None
                    self._busy = False

            resumed.done.add_done_callback(finished)
        return ok({"restored": True, "resumed": True, "ended": None, "run": rid})

    def abort(self, cause: str = "stopped") -> None:
        """Stop the running run, replay or eval; a pending card closes as a denial recorded
        with ``cause`` (``"stopped"``, ``"reset"``, ``"removed"``, ...). A :meth:`run` called
        before this but not started yet does not start."""
        self._stops += 1
        if self._prepare is not None:  # the panel's Cancel: a download stops, nothing is kept
            self._prepare.abort(cause)
        if self._run is not None:
            self._run.abort(cause)
        if self._replay is not None:
            self._replay.abort(cause)
        if self._eval is not None:
            self._eval.abort(cause)

    def deny_pending(self, cause: str) -> bool:
        """End a pending card as a denial recorded with ``cause`` (e.g. ``"hidden"``); the run
        goes on. Returns whether a card was pending; an unknown cause counts as ``"stopped"``."""
        if self._run is None:
            return False
        return bool(self._run.deny_pending(denial_cause(cause)))

    def route(self, url: str) -> bool:
        """The page's address changed without a new document (``history.pushState`` or
        ``replaceState``, back or forward between such entries): ``url`` is the new
        ``location.href``. Its origin and path (never the query or the fragment) become the
        page later runs record, and a run going on gets a ``page`` step
        (:meth:`SiteAgent.route_changed`). Returns whether the page changed: the same path, a
        query or fragment alone, or a URL that is not ``http(s)`` changes nothing."""
        try:
            page = page_of(url)
        except ValueError:
            return False
        if page == self._page:
            return False
        self._page = page
        return self._agent.route_changed(page) if self._agent is not None else True

    def reset(self) -> None:
        """Start a fresh conversation: a running run is aborted and ends in the background
        against the old conversation (its events keep its run id); a new :meth:`run` may
        start at once. A replay in progress is aborted too, and must end first."""
        running = self._run
        self.abort("reset")
        if self._agent is not None:
            self._agent.reset()
        if running is not None:
            self._run = None
            self._busy = False

    async def tools(self) -> str:
        """``envelope([{name, title, description, inputSchema?, annotations?}, ...])``."""
        if self._agent is None:
            return fail("config", self._config_error)
        try:
            listed = await self._agent.tools()
        except SiteAgentError as exc:
            return fail(exc.code, exc.message)
        return ok([tool.to_json() for tool in listed])

    async def prepare(self, on_progress: Any = None) -> str:
        """Prepare the model (Chrome: download the on-device model). Call it from a click.

        ``on_progress(fraction)`` (a JS function) receives 0..1. Returns ``envelope(status)``;
        a failed download is ``{"ok": false, "error": {"code": "model-error" | ..., ...}}``.
        """
        agent = self._agent
        if agent is None:
            return fail("config", self._config_error)
        prepare = optional_member(agent.model, "prepare")
        if prepare is None:
            return await self.status()

        def progress(fraction: Any) -> None:
            if on_progress is not None and not ffi.is_none(on_progress):
                with contextlib.suppress(Exception):
                    on_progress(float(fraction))

        controller = self._prepare = AbortController()
        try:
            await ffi.maybe_await(prepare(progress, controller.signal))
        except SiteAgentError as exc:
            return fail(exc.code, exc.message)
        except AbortedError:
            return fail("aborted", "The download was cancelled; nothing was kept.")
        except Exception as exc:  # noqa: BLE001 - shown to the visitor, never raised into JS
            name = getattr(exc, "name", None) or type(exc).__name__
            return fail("model-error", f"{name}: {exc}")
        finally:
            self._prepare = None
        return await self.status()

    async def forget_model(self) -> str:
        """Remove the site's model kept on this device (``local``: the panel's Remove button);
        ``envelope(status)``. Models without a kept copy are left alone."""
        agent = self._agent
        if agent is None:
            return fail("config", self._config_error)
        for part in model_parts(agent.model):
            clear = optional_member(part, "clear")
            if callable(clear):
                try:
                    await ffi.maybe_await(clear())
                except Exception as exc:  # noqa: BLE001 - shown to the visitor, never raised
                    return fail("model-error", f"The model could not be removed: {exc}")
        return await self.status()

    def close(self) -> None:
        """Abort everything and release what the controller holds (idempotent)."""
        self._destroyed = True
        self.abort("removed")
        if self._prepare is not None:
            self._prepare.abort("destroyed")
        self._drop_agent()
        self._bridge = None

    # ---- internals

    def _warm(self) -> None:
        """Let a model that can (the site's own: ``warm``, docs/local-model.md) read the fixed
        start of its prompt now, in the background; best effort, once at a time."""
        agent = self._agent
        if agent is None or self._warming is not None or self._destroyed:
            return
        warms = [w for part in model_parts(agent.model) if (w := optional_member(part, "warm"))]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a tool change seen outside the event loop: the next status() warms
            return
        if not warms:
            return
        controller = self._warming = AbortController()

        async def go() -> None:
            try:
                tools = [t.to_definition() for t in unambiguous(await agent.tools())]
                for warm in warms:
                    await ffi.maybe_await(warm(agent.instructions, tools, controller.signal))
            except Exception:  # noqa: BLE001 - only a head start: the first step reads it anyway
                pass
            finally:
                if self._warming is controller:
                    self._warming = None

        self._warm_task = loop.create_task(go())  # kept: a task needs a reference

    def _drop_agent(self) -> None:
        if self._warming is not None:
            self._warming.abort("reset")
            self._warming = None
        agent, self._agent = self._agent, None
        self._titles = None
        if agent is not None:
            agent.on_event(None)
            agent.reset()
            close_source(agent.source)

    def _emit(self, event: Any) -> None:
        bridge = self._bridge
        if bridge is None:
            return
        extra: dict[str, Any] = {}
        rid = _RUN_ID.get()
        if rid is not None:
            extra["run"] = rid
        if (
            isinstance(event, ToolCallEvent | ConfirmResultEvent | ToolResultEvent)
            and self._titles is not None
        ):
            title = self._titles.titles.get(event.call.name)
            if title:
                extra["title"] = title
        bridge.emit(_dumps(event.to_json()), _dumps(extra))
        if event.type not in _NOT_A_STEP and self._run is not None and rid == self._rid:
            save = ffi.field(bridge, "save")
            if callable(save):
                with contextlib.suppress(Exception):  # the record is best effort
                    save(self.state(), rid)

    async def _card(self, request: ConfirmRequest) -> bool:
        """Ask through the element's confirmation card; only a JS ``true`` allows."""
        bridge = self._bridge
        if bridge is None:
            return False
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(bridge)) as link:
            answer = bridge.confirm(_dumps(request.to_json()), link.signal)
            answer = await ffi.call_abortable(link, ffi.maybe_await(answer))
        return answer is True


def create_controller(bridge: Any) -> ElementController:
    """The controller for one element; ``bridge`` is the JS object described above."""
    return ElementController(bridge)
