"""Mounting declared Python tools on ``document.modelContext`` (WebMCP), native or the JS shim.

``await registry.mount()`` registers every *available* tool of a
:class:`~pysite_agent.tools.declare.ToolRegistry` with ``registerTool(descriptor, {signal})``, so
this agent and any other WebMCP client on the page (a browser agent, another script) can list
and call it; ``registry.unmount()`` takes them all away again::

    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def list_tasks() -> str:
        '''Show the tasks on the board.'''
        ...

    mounted = await registry.mount()        # or mount(registry, model_context=...)
    ...
    registry.refresh()                      # predicates re-evaluated: (un)registers tools
    registry.unmount()                      # aborts every registration, destroys every proxy

The module needs no ``js`` import of its own: every crossing goes through
:mod:`pysite_agent.ffi`, so it imports on CPython and mounts on any duck-typed object with a
``registerTool(descriptor, options)`` method (tests pass Python fakes; then descriptors,
arguments and results stay plain Python data).

What a registration looks like (WebMCP, Chromium 156 as measured in ``docs/webmcp-native.md``):

- **descriptor**: ``{name, description, inputSchema, annotations, execute}`` plus ``title`` when
  the tool has one, as a plain JS object (``Object.fromEntries``, never a ``Map``).
  ``annotations`` carries WebMCP's hint names (``readOnlyHint``, ``untrustedContentHint``,
  ``consequentialHint``) and any extra annotations declared.
- **execute** is one owned PyProxy per registration (``create_proxy``, through
  :func:`pysite_agent.ffi.callback`). WebMCP calls it as ``execute(input, client)``; it starts a
  Python task and returns a real JS ``Promise`` (:func:`pysite_agent.ffi.promise_of`). The task
  converts ``input`` to Python (JSON), runs :meth:`DeclaredTool.execute
  <pysite_agent.tools.declare.DeclaredTool.execute>` (availability, then jsonschema, then the
  function) with a core abort signal that follows ``client.signal``, and resolves with:

  ======================================  ====================================================
  the function returned                   the Promise resolves with
  ======================================  ====================================================
  a ``str``                               the string, as is
  ``None``                                ``"Operation succeeded"`` (what WebMCP reports for
                                          an empty result)
  an MCP result ``{"content": [...],      that object, as a plain JS object (WebMCP then
  "isError"?: bool}``                     JSON-stringifies it; ``ModelContextSource`` reads
                                          the envelope back, ``isError`` included)
  anything else                           its JSON text (as :mod:`pysite_agent.core.results`)
  ======================================  ====================================================

  **Errors never reject.** Chromium turns a rejected or throwing ``execute`` into the generic
  ``UnknownError: Tool was executed but the invocation failed`` and keeps the message in the
  console, where no agent can read it. So every exception becomes an MCP *error result*,
  ``{"content": [{"type": "text", "text": TEXT}], "isError": true}``, where ``TEXT`` is the
  reason for :class:`~pysite_agent.tools.declare.ToolRefused` (the predicate's words), the
  message for :class:`~pysite_agent.tools.declare.ToolArgumentsError` (JSON pointer + problem
  each) and ``"NAME failed: ExceptionType: message"`` for anything the function raised.
  If the caller aborts (``client.signal``), the task is cancelled (WebMCP has already rejected
  the caller's promise) and resolves with an error result that says so.
- **signal**: one ``AbortController`` per registration (JS in the browser); aborting it is
  WebMCP's way to unregister.

Availability: the set of registered tools follows the registry. :meth:`Mount.sync` (run on every
``registry.refresh()``, ``add()`` and ``remove()``, and after every call made through a mounted
tool) registers tools whose ``available`` predicate now holds and unregisters those whose
predicate no longer holds. A predicate that raises counts as "not available". A call that
arrives while a tool is registered but its predicate says no is refused with the reason.

Ownership: a registration owns its ``execute`` proxy and its abort controller; unregistering
aborts the controller and destroys the proxy (:func:`pysite_agent.ffi.live_callbacks` counts
what is left). A call in flight keeps running to its end after its tool was unregistered.

Errors raised: ``ValueError`` (a tool without a description: WebMCP requires one),
``RuntimeError`` (no ``document.modelContext``, or the registry is already mounted there),
``TypeError`` (``model_context`` has no ``registerTool``),
:class:`~pysite_agent.ffi.BrowserError` (the browser refused a registration, e.g.
``InvalidStateError: Duplicate tool name`` when the page already has a tool of that name).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from weakref import WeakKeyDictionary

from pysite_agent import ffi
from pysite_agent.core.results import is_mcp_result, result_text
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.tools.declare import (
    EMPTY_RESULT,
    DeclaredTool,
    ToolArgumentsError,
    ToolRefused,
    ToolRegistry,
)
from pysite_agent.tools.model_context import document_model_context

__all__ = [
    "EMPTY_RESULT",
    "Mount",
    "descriptor_for",
    "error_result",
    "js_result",
    "mount",
    "mounts_of",
]

ABORTED_TEXT: Final = "The caller stopped this call before it finished."


def error_result(text: str) -> dict[str, Any]:
    """An MCP error result carrying ``text``: ``{"content": [{"type": "text", "text": text}],
    "isError": True}``."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def js_result(value: Any) -> str | dict[str, Any]:
    """What a mounted tool hands back to WebMCP for the function's return ``value``.

    A ``str`` as is; ``None`` as :data:`EMPTY_RESULT`; an MCP result (``{"content": [...]}``)
    as a plain-data copy of the dict; anything else as its JSON text (the core's
    :func:`~pysite_agent.core.results.result_text`).
    """
    if isinstance(value, str):
        return value
    if value is None:
        return EMPTY_RESULT
    if is_mcp_result(value):
        copy: dict[str, Any] = ffi.plain_copy(value)
        return copy
    return result_text(value).text


def failure_text(declared: DeclaredTool, exc: BaseException) -> str:
    """The error text a caller reads when ``declared`` raised ``exc`` (see the module docstring)."""
    if isinstance(exc, ToolRefused | ToolArgumentsError):
        return str(exc) or type(exc).__name__
    detail = str(exc)
    kind = type(exc).__name__
    return f"{declared.name} failed: {kind}" + (f": {detail}" if detail else "")


def descriptor_for(declared: DeclaredTool) -> dict[str, Any]:
    """The ``registerTool`` descriptor of ``declared``, without ``execute`` (plain data).

    Raises:
        ValueError: the tool has no description (WebMCP rejects an empty one with
            ``InvalidStateError: Description is required``).
    """
    if not declared.description:
        raise ValueError(
            f"tool {declared.name!r} has no description, and WebMCP requires one: give the "
            "function a docstring or pass description=..."
        )
    out: dict[str, Any] = {
        "name": declared.name,
        "description": declared.description,
        "inputSchema": ffi.plain_copy(declared.input_schema),
        "annotations": ffi.plain_copy(declared.annotations),
    }
    if declared.title:
        out["title"] = declared.title
    return out


def _refusal(exc: BaseException) -> BaseException:
    """A refused registration as :class:`~pysite_agent.ffi.BrowserError` (a ``JsException`` or a
    fake's exception with a ``name``); other exceptions as they are."""
    exc = ffi.from_js_error(exc)
    name = ffi.error_name(exc)
    if isinstance(exc, ffi.BrowserError) or name is None:
        return exc
    message = getattr(exc, "message", None)
    return ffi.BrowserError(name, message if isinstance(message, str) else str(exc))


@dataclass(slots=True, eq=False)
class _Registration:
    declared: DeclaredTool
    link: ffi.JsAbortLink
    execute: ffi.OwnedCallback
    done: asyncio.Future[Any] | None = None

    def release(self) -> None:
        self.link.abort("unregistered")
        self.link.close()
        self.execute.destroy()


class Mount:
    """The registrations of one :class:`ToolRegistry` on one model context.

    Made by :func:`mount` (or ``await registry.mount()``); listed in :func:`mounts_of` (and
    ``registry.mounts``) until :meth:`unmount`.

    Attributes:
        registry: the registry whose tools are mounted.
        model_context: where they are registered (e.g. the page's ``document.modelContext``).
        errors: registrations the browser refused after mounting (from :meth:`sync`), as
            readable exceptions; :meth:`settled` raises the first new one.
    """

    def __init__(self, registry: ToolRegistry, model_context: Any) -> None:
        if not callable(ffi.field(model_context, "registerTool")):
            raise TypeError("model_context has no registerTool() method")
        self.registry = registry
        self.model_context = model_context
        self.errors: list[BaseException] = []
        self._js = ffi.is_js(model_context)
        self._live: dict[str, _Registration] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False
        self._reported = 0

    # ---- state

    @property
    def names(self) -> list[str]:
        """The names registered now, sorted."""
        return sorted(self._live)

    @property
    def closed(self) -> bool:
        """Whether :meth:`unmount` ran."""
        return self._closed

    # ---- registering

    async def _start(self) -> None:
        """Register every available tool and wait for the browser; roll back on any failure."""
        wanted = self._wanted()
        for declared in wanted:
            descriptor_for(declared)  # fail before registering anything
        try:
            for declared in wanted:
                self._register(declared)
            await self.settled()
        except BaseException:
            self.unmount()
            raise
        self._unsubscribe = self.registry.on_change(self.sync)

    def _wanted(self) -> list[DeclaredTool]:
        out = []
        for declared in self.registry.declared:
            try:
                reason = declared.availability()
            except Exception:  # noqa: BLE001 - a failing predicate means "not available"
                continue
            if reason is None:
                out.append(declared)
        return out

    def _register(self, declared: DeclaredTool) -> None:
        descriptor = descriptor_for(declared)
        link = ffi.JsAbortLink(None, for_js=self._js)
        owned = ffi.callback(self._executor(declared), self.model_context)
        registration = _Registration(declared, link, owned)
        self._live[declared.name] = registration
        try:
            descriptor["execute"] = owned.value
            options = {"signal": link.signal}
            if self._js:
                # ffi.to_js passes the JS values inside (the proxy, the signal) through as is.
                descriptor, options = ffi.to_js(descriptor), ffi.to_js(options)
            promise = self.model_context.registerTool(descriptor, options)
        except Exception as exc:  # noqa: BLE001 - a fake may throw synchronously
            self._drop(registration)
            raise _refusal(exc) from None
        registration.done = asyncio.ensure_future(self._confirmed(registration, promise))

    async def _confirmed(self, registration: _Registration, promise: Any) -> None:
        try:
            await ffi.maybe_await(promise)
        except Exception as exc:  # noqa: BLE001 - recorded, raised by settled()
            self._drop(registration)
            self.errors.append(_refusal(exc))

    def _drop(self, registration: _Registration) -> None:
        if self._live.get(registration.declared.name) is registration:
            del self._live[registration.declared.name]
        registration.release()

    def sync(self) -> None:
        """Make the registrations match the predicates now: unregister tools that became
        unavailable or were removed from the registry, register those that became available.

        Synchronous (WebMCP registers and unregisters at once; its promise only confirms):
        await :meth:`settled` to see refusals. Does nothing after :meth:`unmount`.
        """
        if self._closed:
            return
        wanted = {d.name: d for d in self._wanted()}
        for name, registration in list(self._live.items()):
            if wanted.get(name) is not registration.declared:
                self._drop(registration)
        for name, declared in wanted.items():
            if name not in self._live:
                try:
                    self._register(declared)
                except (ValueError, ffi.BrowserError) as exc:
                    self.errors.append(exc)

    async def settled(self) -> None:
        """Wait until every registration made so far was confirmed or refused.

        Raises:
            BrowserError: the first refusal not raised before (e.g. a duplicate name).
            ValueError: a tool that became available has no description.
        """
        pending = [r.done for r in self._live.values() if r.done is not None and not r.done.done()]
        if pending:
            await asyncio.gather(*pending)
        if len(self.errors) > self._reported:
            first = self.errors[self._reported]
            self._reported = len(self.errors)
            raise first

    async def refresh(self) -> None:
        """``registry.refresh()`` (re-evaluate predicates; this mount follows), then
        :meth:`settled`."""
        self.registry.refresh()
        await self.settled()

    def unmount(self) -> None:
        """Unregister every tool (abort each registration's signal) and destroy every proxy.

        Idempotent. Calls already running finish; no new call can reach these tools.
        """
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for registration in list(self._live.values()):
            self._drop(registration)
        mounts = _MOUNTS.get(self.registry)
        if mounts is not None and self in mounts:
            mounts.remove(self)

    # ---- calls

    def _executor(self, declared: DeclaredTool) -> Callable[..., Any]:
        def execute(input: Any = None, client: Any = None) -> Any:
            return ffi.promise_of(self._call(declared, input, client), for_js=self._js)

        return execute

    async def _call(self, declared: DeclaredTool, input: Any, client: Any) -> Any:
        signal, release = ffi.signal_from_js(ffi.field(client, "signal"))
        try:
            value = await self._outcome(declared, input, signal)
        finally:
            release()
        if not self._closed:
            with contextlib.suppress(Exception):  # the call's result must not be lost
                self.registry.refresh()
        return value

    async def _outcome(
        self, declared: DeclaredTool, input: Any, signal: AbortSignal
    ) -> str | dict[str, Any]:
        try:
            args = _arguments(input)
            return js_result(await signal.race(declared.execute(args, signal)))
        except AbortedError:
            return error_result(f"{declared.name}: {ABORTED_TEXT}")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - an error result the agent can read
            return error_result(failure_text(declared, exc))


def _arguments(value: Any) -> Any:
    """WebMCP's ``input`` as Python data (a JSON copy); absent -> ``{}``. A string (older
    clients) is parsed as JSON."""
    if ffi.is_none(value):
        return {}
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value  # validation reports it
    return ffi.json_to_py(value)


async def mount(registry: ToolRegistry, model_context: Any = None) -> Mount:
    """Register ``registry``'s available tools on ``model_context`` (default: the page's
    ``document.modelContext``) and return the :class:`Mount`.

    Every registration is confirmed before this returns; if one is refused, the others are
    unregistered again and the error is raised.

    Raises:
        RuntimeError: no ``document.modelContext`` (and none given), or ``registry`` is
            already mounted on this model context.
        TypeError: ``model_context`` has no ``registerTool``.
        ValueError: a tool has no description.
        BrowserError: the browser refused a registration (e.g. a duplicate name).
    """
    if model_context is None:
        model_context = document_model_context()
    for existing in mounts_of(registry):
        if ffi.same_object(existing.model_context, model_context):
            raise RuntimeError("this registry is already mounted on that model context")
    mounted = Mount(registry, model_context)
    _MOUNTS.setdefault(registry, []).append(mounted)
    await mounted._start()
    return mounted


_MOUNTS: WeakKeyDictionary[ToolRegistry, list[Mount]] = WeakKeyDictionary()
"""Each registry's live mounts, oldest first (this module owns the map; a mount leaves it when
it is unmounted)."""


def mounts_of(registry: ToolRegistry) -> list[Mount]:
    """``registry``'s live mounts, oldest first (a copy)."""
    return list(_MOUNTS.get(registry, ()))


class _RegistryMounts:
    """:class:`~pysite_agent.tools.declare.Mounter` for ``registry.mount()``, ``.unmount()``
    and ``.mounts``."""

    async def mount(self, registry: ToolRegistry, model_context: Any) -> Mount:
        return await mount(registry, model_context)

    def unmount(self, registry: ToolRegistry) -> None:
        for mounted in mounts_of(registry):
            mounted.unmount()

    def mounts(self, registry: ToolRegistry) -> list[Any]:
        return list(mounts_of(registry))


ToolRegistry.mounter = _RegistryMounts()
