"""A tool source over the browser's ``document.modelContext`` (WebMCP), native or the JS shim.

This is the only Python module that reads ``document.modelContext`` (design, "Layers"). It
implements the :class:`~pysite_agent.core.types.ToolSource` protocol; every JS crossing goes
through :mod:`pysite_agent.ffi`, so the module imports on CPython and works with any
duck-typed object that has ``getTools()`` and ``executeTool()`` (tests pass Python fakes).

What it does with WebMCP (Chromium 156 as measured in ``docs/webmcp-native.md``; Chrome 153-160
as documented in Chrome's "WebMCP API updates" and spec PR #348, see ``docs/webmcp-native.md``):

- **Reading a tool**: every listed tool is read attribute by attribute (``name``,
  ``description``, ``title``, ``inputSchema``, ``outputSchema``, ``annotations``, ``source`` or
  ``window``), never serialized whole: from Chrome 160 ``getTools()`` returns instances of a
  ``Tool`` interface for which ``JSON.stringify`` gives ``{}`` and ``structuredClone`` throws.
  Empty members may be ``null`` (Chrome 160) or absent (156): both mean "not given". The very
  object ``getTools()`` returned is kept and passed back to ``executeTool`` (Chrome 160 finds
  the tool by an internal id, not by name).
- **Discovery scope**: a tool whose ``source`` (Chrome 160; ``window`` before) is
  not the current window is skipped, so a frame cannot add tools to this page's agent. A tool
  without either is kept.
- **debugging** (Chrome 156): a tool whose ``annotations.debugging`` is ``true`` is a tool for
  the site's own developers; it is hidden from the visitor's agent unless the source was made
  with ``debugging_tools=True`` (the site opts in).
- **outputSchema** (Chrome 159, spec PR #254) is read like ``inputSchema`` and carried to the
  model; the bridge flags a result that fails it.
- **Form tools**: a tool whose name belongs to a ``<form toolname>`` of the document without
  ``toolautosubmit`` ends when the visitor submits the form; it is listed with
  ``waits_for_visitor`` so the bridge waits for the visitor instead of the tool timeout.
- **inputSchema** is read as an object or as a JSON string (older Chrome). A string that is not
  JSON, or JSON that is not an object, gives the tool an *invalid* schema: it is listed, and the
  core's validation refuses every call to it with a message that says why (it never crashes the
  listing or the run).
- **annotations** become a plain dict; ``None`` when the browser returned none (Chromium omits
  the member when the page gave no annotations), so the policy asks before every call.
- **Identity** (``RegisteredTool.key``). Chromium's ``getTools()`` returns fresh plain objects on
  every call, with no id, and ``executeTool()`` looks the tool up by name (measured: an object
  from before a re-registration runs the new registration). So a key is ``"NAME#N"``, renewed
  when the name appears, when its normalized content changes, and whenever ``toolchange`` events
  arrived that the listing does not explain (an unregister + register of identical content);
  in that last case every key is renewed, since the event does not say which tool changed.
- **Revision** (README, decision binding): raised by one on every ``toolchange`` event (even when
  name and schema stay the same) and whenever a listing differs from the previous one (names,
  keys or normalized content). An event that arrives *after* a listing already showed its change
  (a register or unregister the listing explained; the shim and a worker's relay dispatch
  ``toolchange`` in a later task) was counted by that listing and does not raise it again, so a
  decision bound to that listing stays valid; any event beyond those raises it.
- **Execution**: arguments go as a plain JS object (``Object.fromEntries``), once: every Chrome
  with ``document.modelContext`` takes an object, and a decision allows exactly one execution, so
  a call is never sent again with its arguments in another form. When the browser refuses the
  input (a ``TypeError``, e.g. it could not parse it), the tool did not run: that becomes a
  :class:`~pysite_agent.ffi.BrowserError` saying so, which the bridge hands to the model as an
  error result. ``{signal}`` is a JS
  ``AbortSignal`` that aborts with the call's core signal or when the awaiting task is cancelled
  (the bridge's timeout). ``null`` (the page navigated) becomes ``NAVIGATED``, ``undefined`` and
  the strings ``"undefined"``/``"null"`` (a tool that returned nothing) ``None``; a string that is
  exactly a JSON MCP envelope (Chromium stringifies ``{content: [...]}``) becomes that dict;
  other strings pass as they are. A JS error becomes a
  :class:`~pysite_agent.ffi.BrowserError` (``"UnknownError: Tool was executed but..."``).
- **Proxies**: the source owns one JS listener (``toolchange``), created in the constructor and
  released by :meth:`ModelContextSource.close`; a run creates no lasting PyProxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pysite_agent import ffi
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.results import NAVIGATED, parse_mcp_envelope
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.core.types import RegisteredTool

__all__ = [
    "ModelContextSource",
    "NoModelContextError",
    "document_model_context",
    "read_input_schema",
]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def _invalid_schema(reason: str, member: str = "inputSchema") -> dict[str, Any]:
    # Not a valid JSON Schema on purpose: jsonschema's check_schema quotes ``type`` in its error,
    # so the model and the developer read *why* the tool cannot be called.
    return {"type": f"(unusable {member}: {reason})"}


def read_input_schema(value: Any, member: str = "inputSchema") -> dict[str, Any] | None:
    """A tool's ``inputSchema`` as a dict: an object, or a JSON string of one (WebMCP took
    strings before Chrome 152). ``None`` when absent.

    A string that is not JSON, or a value that is not a JSON object, gives a schema that is
    itself invalid, so validation refuses calls to the tool with the reason (never raises).
    ``member`` names the schema in that reason (``"outputSchema"`` reads an output schema the
    same way).
    """
    if ffi.is_none(value):
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            msg = getattr(exc, "msg", str(exc))
            pos = getattr(exc, "pos", None)
            where = f" at character {pos}" if isinstance(pos, int) else ""
            return _invalid_schema(f"the page gave a string that is not JSON: {msg}{where}", member)
    else:
        try:
            parsed = ffi.json_to_py(value)
        except ffi.BrowserError as exc:
            return _invalid_schema(f"it cannot be read as JSON: {exc}", member)
    if not isinstance(parsed, dict):
        kind = "null" if parsed is None else type(parsed).__name__
        return _invalid_schema(f"it must be a JSON object, not {kind}", member)
    return parsed


def _read_annotations(value: Any) -> dict[str, Any] | None:
    if ffi.is_none(value):
        return None
    try:
        plain = ffi.json_to_py(value)
    except ffi.BrowserError:
        return None
    return plain if isinstance(plain, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class _Listed:
    tool: RegisteredTool
    raw: Any


class NoModelContextError(SiteAgentError, RuntimeError):
    """There is no ``document.modelContext`` here: code ``no-tools`` (a ``SiteAgentError``), and
    a ``RuntimeError`` too (what :func:`pysite_agent.tools.mount.mount` raises for it)."""

    def __init__(self, message: str) -> None:
        super().__init__("no-tools", message)


def document_model_context() -> Any:
    """The page's ``document.modelContext`` (WebMCP, native or the JS shim): the one place
    Python looks it up.

    Raises:
        NoModelContextError: outside a browser, in a Web Worker (no document: pass Python
            tools instead), or the page has none (include ``loader.js``, which installs the
            WebMCP shim; or pass ``model_context=...``).
    """
    if ffi.IN_PYODIDE and ffi.in_worker():
        raise NoModelContextError(
            f"No tools: {ffi.WORKER_HAS_NO_PAGE}. Pass Python tools to the agent instead: "
            "create_site_agent(tools=registry.tools()) (mount() needs a page)."
        )
    document = ffi.global_object("document") if ffi.IN_PYODIDE else None
    model_context = ffi.field(document, "modelContext")
    if model_context is None:
        where = "on this page" if document is not None else "here (no browser document)"
        raise NoModelContextError(
            f"No tools: there is no document.modelContext {where}. Include loader.js (it "
            "installs the WebMCP shim), use a browser with WebMCP, or pass model_context=..."
        )
    return model_context


class ModelContextSource:
    """The tools of ``document.modelContext`` (or of ``model_context``), as a tool source.

    Args:
        model_context: an object with ``getTools()`` and ``executeTool(tool, args, {signal})``
            and, optionally, ``addEventListener("toolchange", fn)``: the browser's
            ``document.modelContext`` (the default, read once here), the JS shim, a JS tools
            object, or a Python fake.
        window: the window whose tools are listed (default: the page's ``window``; ``None``
            outside a window, where no tool is skipped for its window).
        debugging_tools: list tools annotated ``debugging: true`` too (default ``False``: they
            are hidden from the visitor's agent; Chrome 156's ``debugging`` annotation).
        document: where to look for ``<form toolname>`` elements (default: the page's
            ``document``; ``None`` outside a page).

    Raises:
        SiteAgentError: ``no-tools`` when no ``model_context`` is given and the page has none
            (or outside Pyodide).
        TypeError: ``model_context`` lacks ``getTools`` or ``executeTool``.
    """

    def __init__(
        self,
        model_context: Any = None,
        *,
        window: Any = None,
        debugging_tools: bool = False,
        document: Any = None,
    ) -> None:
        if model_context is None:
            model_context = document_model_context()
        for method in ("getTools", "executeTool"):
            if not callable(ffi.field(model_context, method)):
                raise TypeError(f"model_context has no {method}() method")
        self._mc = model_context
        self._js = ffi.is_js(model_context)
        self._window = window if window is not None else ffi.global_object("window")
        self._debugging_tools = debugging_tools
        self._document = document if document is not None else ffi.global_object("document")
        self._revision = 0
        self._events = 0  # toolchange events since the latest listing
        self._credit = 0  # changes seen in a listing before their events arrived
        self._listed: dict[str, _Listed] | None = None
        self._by_key: dict[str, Any] = {}
        self._counter = itertools.count(1)
        self._numbers: dict[str, int | None] = {}  # name -> the loader's registration number
        self._callbacks: list[Callable[[], Any]] = []
        self._tasks: set[asyncio.Future[Any]] = set()
        self._listener: ffi.OwnedCallback | None = None
        if callable(ffi.field(model_context, "addEventListener")):
            self._listener = ffi.callback(self._on_toolchange, model_context)
            model_context.addEventListener("toolchange", self._listener.value)

    @property
    def revision(self) -> int:
        """Raised on every ``toolchange`` and whenever the listed tools change (README,
        decision binding)."""
        return self._revision

    @property
    def model_context(self) -> Any:
        """The object this source reads (e.g. the browser's ``document.modelContext``)."""
        return self._mc

    def close(self) -> None:
        """Remove the ``toolchange`` listener and release its proxy (idempotent)."""
        listener, self._listener = self._listener, None
        if listener is not None and not listener.destroyed:
            with contextlib.suppress(Exception):  # a closed page may refuse; release anyway
                self._mc.removeEventListener("toolchange", listener.value)
            listener.destroy()
        self._callbacks.clear()

    def _on_toolchange(self, *_event: Any) -> None:
        if self._credit:
            # A listing already saw this change (the shim dispatches in a later task) and
            # raised the revision for it then: counting it again would make a decision taken
            # on that listing stale although nothing changed since (an Allow thrown away).
            self._credit -= 1
        else:
            self._revision += 1
            self._events += 1
        for callback in list(self._callbacks):
            try:
                result = callback()
                if asyncio.iscoroutine(result):
                    task = asyncio.ensure_future(result)
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
            except Exception:  # noqa: BLE001 - a listener must not break the page's event
                continue

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback()`` after each ``toolchange`` (after the revision was raised).

        Returns an unsubscribe function. The JS side holds one listener for the whole source
        (owned, released by :meth:`close`), so subscribing creates no proxy.
        """
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe

    async def get_tools(self) -> Sequence[RegisteredTool]:
        """The current window's tools, sorted by name, as :class:`RegisteredTool`. A name the
        page lists twice is left out (the ambiguity is refused, never resolved to one listing).

        Raises:
            BrowserError: ``getTools()`` failed in the browser.
        """
        try:
            raw_list = await ffi.maybe_await(self._mc.getTools())
        except Exception as exc:  # noqa: BLE001 - re-raised, as a readable error
            raise ffi.from_js_error(exc) from None
        fresh: dict[str, tuple[RegisteredTool, Any]] = {}
        numbers: dict[str, int | None] = {}
        twice: set[str] = set()
        for raw in list(raw_list or ()):
            tool = self._read(raw)
            if tool is not None and tool.name in fresh:
                twice.add(tool.name)
            elif tool is not None:
                fresh[tool.name] = (tool, raw)
                numbers[tool.name] = self._registration(tool.name, raw)
        # A name listed twice is an ambiguity: neither listing is offered or run (never the
        # first one, which may be the looser; see pysite_agent.agent._gateway.unambiguous).
        for name in twice:
            del fresh[name]
        self._numbers = numbers
        self._update(fresh)
        assert self._listed is not None
        return [self._listed[name].tool for name in sorted(self._listed)]

    def _registration(self, name: str, raw: Any) -> int | None:
        """The loader's number for the registration listed as ``name`` (``registration`` on a
        worker relay's entry, else ``siteAgentRegistrationOf(name)`` on the model context;
        web/webmcp/shim.js ``recordRegistrations``), or ``None`` when there is none."""
        number = ffi.field(raw, "registration")
        if ffi.is_none(number):
            lookup = ffi.field(self._mc, "siteAgentRegistrationOf")
            if not callable(lookup):
                return None
            try:
                number = lookup(name)
            except Exception:  # noqa: BLE001 - a lookup that fails: count events instead
                return None
        if isinstance(number, bool) or not isinstance(number, int | float):
            return None
        return int(number) if number == int(number) and number > 0 else None

    def _read(self, raw: Any) -> RegisteredTool | None:
        # One attribute at a time: a Chrome 160 ``Tool`` cannot be serialized or cloned.
        window = ffi.field(raw, "source")
        if ffi.is_none(window):
            window = ffi.field(raw, "window")
        if (
            not ffi.is_none(window)
            and self._window is not None
            and not ffi.same_object(window, self._window)
        ):
            return None
        name = ffi.field(raw, "name")
        if not isinstance(name, str) or not name:
            return None
        annotations = _read_annotations(ffi.field(raw, "annotations"))
        debugging = annotations is not None and annotations.get("debugging") is True
        if debugging and not self._debugging_tools:
            return None
        return RegisteredTool(
            name=name,
            description=_text(ffi.field(raw, "description")) or "",
            title=_text(ffi.field(raw, "title")) or None,
            input_schema=read_input_schema(ffi.field(raw, "inputSchema")),
            annotations=annotations,
            output_schema=read_input_schema(ffi.field(raw, "outputSchema"), "outputSchema"),
            waits_for_visitor=self._form_waits(name, raw),
        )

    def _form_waits(self, name: str, raw: Any) -> bool:
        """Whether ``name`` is a ``<form toolname>`` without ``toolautosubmit``.

        In a worker there is no document: the page's side of the worker channel marks such a
        tool with ``waitsForVisitor: true`` when it lists the page's tools (``docs/runtime.md``).
        """
        if self._document is None:
            return ffi.field(raw, "waitsForVisitor") is True
        if not _NAME.fullmatch(name):
            return False
        try:
            form = self._document.querySelector(f'form[toolname="{name}"]')
            return not ffi.is_none(form) and not form.hasAttribute("toolautosubmit")
        except Exception:  # noqa: BLE001 - a document that cannot be asked: no form
            return False

    def _update(self, fresh: dict[str, tuple[RegisteredTool, Any]]) -> None:
        """Assign keys, account for ``toolchange`` events and raise the revision (no awaits)."""
        previous = self._listed
        before = previous or {}
        added = [n for n in fresh if n not in before]
        removed = [n for n in before if n not in fresh]
        changed = [
            n
            for n in fresh
            if n in before and before[n].tool.fingerprint() != fresh[n][0].fingerprint()
        ]
        # Each register or unregister fires one toolchange; a content change is both. The first
        # listing explains nothing: its tools were registered before anyone was listening.
        explained = len(added) + len(removed) + 2 * len(changed) if previous is not None else 0
        unexplained = max(0, self._events - self._credit)
        credit_left = max(0, self._credit - self._events)
        renew_all = previous is not None and unexplained > explained
        self._credit = credit_left + max(0, explained - unexplained)
        self._events = 0
        listed: dict[str, _Listed] = {}
        for name, (tool, raw) in fresh.items():
            old = before.get(name)
            number = self._numbers.get(name)
            if number is not None:
                # The loader numbered this registration: the key follows it exactly (a tool
                # registered again gets a new number, one that stayed keeps its key).
                key = f"{name}@{number}"
            elif old is None or name in changed or renew_all:
                key = f"{name}#{next(self._counter)}"
            else:
                key = old.tool.key
            listed[name] = _Listed(
                RegisteredTool(
                    name=tool.name,
                    description=tool.description,
                    title=tool.title,
                    input_schema=tool.input_schema,
                    annotations=tool.annotations,
                    key=key,
                    output_schema=tool.output_schema,
                    waits_for_visitor=tool.waits_for_visitor,
                ),
                raw,
            )
        if previous is not None and _signature(previous) != _signature(listed):
            self._revision += 1
        self._listed = listed
        self._by_key = {entry.tool.key: entry.raw for entry in listed.values()}

    async def execute_tool(
        self, tool: RegisteredTool, args: dict[str, Any], *, signal: AbortSignal | None = None
    ) -> Any:
        """Run ``tool`` (the registration listed with ``tool.key``) with ``args``.

        Returns the tool's result: ``None`` when the page navigated (``null``), the MCP dict
        when the string is exactly a JSON MCP envelope, else the string (or plain data).

        Raises:
            LookupError: the registration is no longer listed (removed or registered again).
            AbortedError: ``signal`` aborted and the browser stopped the call.
            BrowserError: the browser or the tool failed (its ``name: message``).
        """
        # The browser runs tools by name: after a toolchange, list again so that a registration
        # made since ``tool`` was listed (a new key) is never run in its place.
        raw = None if self._events else self._by_key.get(tool.key)
        if raw is None:
            await self.get_tools()
            raw = self._by_key.get(tool.key)
        if raw is None:
            raise LookupError(
                f"The tool {tool.name!r} is no longer registered on this page "
                "(it was removed or registered again)."
            )
        with ffi.JsAbortLink(signal, for_js=self._js) as link:
            options = {"signal": link.signal}
            try:
                result = await ffi.call_abortable(link, self._call(raw, args, options))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised, as a readable error
                if signal is not None and signal.aborted and ffi.error_name(exc) == "AbortError":
                    raise AbortedError(signal.reason) from None
                error = ffi.from_js_error(exc)
                if ffi.error_name(exc) == "TypeError" or _INPUT_REFUSED.search(str(error)):
                    # The browser refused the input before running the tool (WebMCP before
                    # Chrome 155 wanted a JSON string): one decision, one attempt.
                    detail = getattr(error, "message", "") or str(error)
                    raise ffi.BrowserError(
                        "TypeError",
                        f"the browser could not take these arguments, so the tool did not run "
                        f"({detail})",
                    ) from None
                raise error from None
        return _result(result)

    async def _call(self, raw: Any, args: dict[str, Any], options: Any) -> Any:
        if self._js:
            return await self._mc.executeTool(raw, ffi.to_js(args), ffi.to_js(options))
        return await ffi.maybe_await(self._mc.executeTool(raw, ffi.plain_copy(args), dict(options)))


_INPUT_REFUSED = re.compile(r"(could not|cannot|failed to|unable to) parse (the )?input", re.I)


def _signature(listed: dict[str, _Listed]) -> list[tuple[str, str, str]]:
    return sorted((n, e.tool.key, e.tool.fingerprint()) for n, e in listed.items())


_NOTHING = ("undefined", "null")
"""What ``executeTool`` resolves with when the tool returned ``undefined`` or ``null``: it
stringifies every result (native Chromium and the shim, ``web/webmcp/calls.js``)."""


def _result(value: Any) -> Any:
    """``executeTool``'s result for the core: JS ``null`` is WebMCP's "the page navigated"
    (:data:`~pysite_agent.core.results.NAVIGATED`), ``undefined`` and the strings
    ``"undefined"``/``"null"`` are a tool that returned nothing (``None``)."""
    if ffi.is_none(value):
        return NAVIGATED if value is not None else None
    if isinstance(value, str):
        if value in _NOTHING:
            return None
        envelope = parse_mcp_envelope(value)
        return envelope if envelope is not None else value
    if ffi.is_js(value):
        try:
            return ffi.json_to_py(value)
        except ffi.BrowserError:
            return str(value)
    return value
