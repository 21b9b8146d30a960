"""The one helper module for the Pyodide boundary (Python <-> JavaScript).

It sits just above ``core`` in the layers (``pyproject.toml``, import-linter), so the tool source,
the model adapters and the element glue (``browser``) use it.

Every browser-facing module (``tools.model_context``, ``models.chrome``, ``models.proxy`` and the
element glue) crosses into JavaScript only through these helpers, so the conversion defaults and
the pitfalls are handled once:

- **Where we are.** :data:`IN_PYODIDE` is Pyodide's own test (``"_pyodide_core"`` in
  ``sys.modules``, or ``sys.platform == "emscripten"``). On CPython nothing here imports ``js``
  or ``pyodide``, so the module imports everywhere and the same code runs against duck-typed
  Python fakes in tests.
- **JS or Python target.** :func:`is_js` tells a ``JsProxy`` from a Python object. Callers convert
  arguments with :func:`to_js` only when the receiver is JavaScript; a Python fake receives plain
  Python data.
- **Python -> JS** (:func:`to_js`): dicts become plain objects (``dict_converter=
  Object.fromEntries``, nested too, never a ``Map``), ``None`` becomes JS ``null`` (not
  ``undefined``, which JSON would drop), and no PyProxy is ever created implicitly
  (``create_pyproxies=False``): a callable inside the data is a ``TypeError``.
- **JS -> Python** (:func:`to_py`, :func:`json_to_py`): plain data becomes dicts and lists with
  ``None`` for JS ``null``/``undefined`` (Pyodide's own ``to_py`` leaves ``jsnull`` inside).
  :func:`is_none` is true for ``None`` and ``jsnull``.
- **Errors** (:func:`error_name`, :func:`site_error`, :data:`ERROR_TABLE`): a ``JsException`` (or
  a fake exception with a ``name``) is read by its DOMException ``name``; one table maps names
  (Prompt API and fetch failures) to the project's error codes.
- **Abort** (:class:`JsAbortLink`, :func:`signal_from_js`): a core
  :class:`~pysite_agent.core.signals.AbortSignal` drives a JS ``AbortController`` (abort it when
  the Python signal aborts or the awaiting task is cancelled); a JS ``AbortSignal`` drives a core
  one.
- **Long-lived callbacks** (:func:`callback`, :class:`OwnedCallback`): a Python function handed
  to JavaScript beyond one call (event listeners, ``monitor``) is wrapped with ``create_proxy``
  and destroyed explicitly; :func:`live_callbacks` counts the ones not destroyed yet (tests use it
  to prove there is no leak). Borrowed proxies (implicit call arguments) are never relied on.
- **Python work for a JS caller** (:func:`promise_of`): a coroutine run as a task, handed to
  JavaScript as a real ``Promise`` (not a PyProxy of the coroutine), with no PyProxy left behind.

Errors raised: :class:`BrowserError` (a readable JS error), ``TypeError`` from :func:`to_js` for
data that is not JSON-like.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pysite_agent.core.errors import ErrorCode, SiteAgentError
from pysite_agent.core.signals import AbortController, AbortSignal
from pysite_agent.core.signals import maybe_await as maybe_await  # re-exported: ffi.maybe_await

IN_PYODIDE: Final[bool] = "_pyodide_core" in sys.modules or sys.platform == "emscripten"
"""True inside Pyodide (the same test Pyodide itself uses)."""

if IN_PYODIDE or TYPE_CHECKING:  # pragma: no cover - Pyodide only
    import js
    from pyodide.ffi import JsException, JsProxy, create_once_callable, create_proxy, jsnull
    from pyodide.ffi import to_js as _pyodide_to_js


def is_js(value: Any) -> bool:
    """Whether ``value`` is a JavaScript object seen from Python (a ``JsProxy``)."""
    return IN_PYODIDE and isinstance(value, JsProxy)


def is_none(value: Any) -> bool:
    """True for ``None`` (JS ``undefined``) and Pyodide's ``jsnull`` (JS ``null``)."""
    if value is None:
        return True
    return IN_PYODIDE and value is jsnull


def same_object(a: Any, b: Any) -> bool:
    """Identity: ``is`` for Python objects, ``===`` for two JS objects."""
    if a is b:
        return True
    return is_js(a) and is_js(b) and bool(a == b)


def global_object(name: str) -> Any:
    """``globalThis[name]`` in Pyodide (``None`` when absent, null or undefined); ``None`` on
    CPython."""
    if not IN_PYODIDE:
        return None
    value = getattr(js, name, None)
    return None if is_none(value) else value


def in_worker() -> bool:
    """Whether this Pyodide runs in a Web Worker (JupyterLite's kernel, a worker runtime):
    a ``WorkerGlobalScope`` and no ``document``. False on CPython."""
    return global_object("document") is None and global_object("WorkerGlobalScope") is not None


WORKER_HAS_NO_PAGE: Final = (
    "this Python runs in a Web Worker (a JupyterLite kernel, for one), which has no page: no "
    "document, so no document.modelContext and no Chrome LanguageModel"
)
"""The first half of the message for what a worker cannot do (docs/python-in-the-page.md,
"JupyterLite"); each caller adds what to use instead."""


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` for a JS object, a ``Mapping`` or a Python object with attributes.

    A missing member, JS ``null`` and ``undefined`` all read as ``None``.
    """
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        value = obj.get(name)
    else:
        try:
            value = getattr(obj, name)
        except AttributeError:
            return None
    return None if is_none(value) else value


# -- conversions ------------------------------------------------------------------------------


_INT32 = 2**31 - 1
_SAFE = 2**53 - 1


def _nulls_for_js(value: Any) -> Any:
    """Deep copy of plain data with ``None`` -> ``jsnull`` (so JS sees ``null``), and integers
    beyond 32 bits but within ``Number.MAX_SAFE_INTEGER`` as floats (exact), so JS sees a
    ``number``: Pyodide's ``to_js`` makes them ``BigInt`` (measured on Pyodide 314.0.7), which
    a tool's ``JSON.stringify`` refuses and ``===`` never equals. Larger integers stay ``BigInt``
    (exact; tool arguments never hold one, see ``core.validation.MAX_SAFE_INTEGER``)."""
    if value is None:
        return jsnull
    if isinstance(value, int) and not isinstance(value, bool) and _INT32 < abs(value) <= _SAFE:
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _nulls_for_js(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nulls_for_js(v) for v in value]
    return value


def plain_copy(value: Any) -> Any:
    """A deep copy of plain data (dicts with ``str`` keys, lists); other values as they are."""
    if isinstance(value, Mapping):
        return {str(k): plain_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_copy(v) for v in value]
    return value


def to_js(value: Any) -> Any:
    """Plain Python data (dict, list, str, numbers, bool, ``None``) as a JS value.

    In Pyodide: dicts become plain objects (``Object.fromEntries``), ``None`` becomes ``null``,
    every integer up to ``Number.MAX_SAFE_INTEGER`` a JS ``number`` (larger ones ``BigInt``),
    JS values (``JsProxy``) inside pass through unchanged, and no PyProxy is created (a callable
    or other Python object inside raises ``TypeError``). On CPython: a deep copy of the data.

    Raises:
        TypeError: ``value`` holds something that is neither plain data nor a JS value.
    """
    if not IN_PYODIDE:
        return plain_copy(value)
    from pyodide.ffi import ConversionError

    try:
        return _pyodide_to_js(
            _nulls_for_js(value),
            dict_converter=js.Object.fromEntries,
            create_pyproxies=False,
        )
    except ConversionError as exc:
        raise TypeError(f"cannot pass this value to JavaScript: {exc}") from None


def json_to_js(value: Mapping[str, Any], **members: Any) -> Any:
    """A dict of plain JSON data as a JS object, made by one ``JSON.parse`` (a long
    conversation converts many times faster than element by element), with ``members`` (JS
    values such as an ``AbortSignal``) set on it as they are. On CPython: a deep copy of the
    data with ``members`` added.

    Keys become strings, as with :func:`to_js`; data that JSON cannot carry (``NaN``, a JS
    value inside) goes through :func:`to_js` instead.

    Raises:
        TypeError: ``value`` holds something that is neither plain data nor a JS value.
    """
    if not IN_PYODIDE:
        return {**plain_copy(value), **members}
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return to_js({**value, **members})
    obj = js.JSON.parse(text)
    for name, member in members.items():
        setattr(obj, name, jsnull if member is None else member)
    return obj


def _fix_nulls(value: Any) -> Any:
    if is_none(value):
        return None
    if isinstance(value, dict):
        return {k: _fix_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fix_nulls(v) for v in value]
    return value


def to_py(value: Any) -> Any:
    """A JS value as Python data: objects -> dict, arrays -> list, ``null``/``undefined`` ->
    ``None``. Objects that are not plain data (a ``Window``, a function) stay ``JsProxy``.
    Python values pass through (``jsnull`` inside becomes ``None``)."""
    if is_js(value):
        value = value.to_py()
    return _fix_nulls(value)


def json_to_py(value: Any) -> Any:
    """A JSON-like JS value as Python data, through ``JSON.stringify`` (drops functions and
    ``undefined`` members exactly as the browser's JSON does). Python values are deep-copied.

    Raises:
        BrowserError: ``TypeError`` when the JS value cannot be serialized (a cycle, a BigInt).
    """
    if is_js(value):
        try:
            text = js.JSON.stringify(value)
        except JsException as exc:
            raise BrowserError(error_name(exc) or "TypeError", _message(exc)) from None
        return None if is_none(text) else json.loads(text)
    return _fix_nulls(plain_copy(value))


# -- errors -----------------------------------------------------------------------------------


class BrowserError(Exception):
    """A JavaScript error, readable from Python: ``name`` (e.g. ``"NotAllowedError"``) and
    ``message``; ``str()`` is ``"name: message"``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name = name
        self.message = message


_WRAPPED = re.compile(
    r"was thrown as an error!.*toString method returns \"\"\"([A-Za-z]+): ?(.*?)\"\"\"\.?\s*$",
    re.DOTALL,
)
"""Pyodide (measured: 314.0.7 in Chromium 156) wraps a DOMException thrown *synchronously* into a
plain ``Error`` whose message quotes the original ``toString()``; a rejected promise keeps it."""


def _unwrapped(exc: BaseException) -> tuple[str, str] | None:
    message = getattr(exc, "message", None)
    if getattr(exc, "name", None) != "Error" or not isinstance(message, str):
        return None
    match = _WRAPPED.search(message)
    return (match.group(1), match.group(2)) if match else None


def error_name(exc: BaseException) -> str | None:
    """The DOMException/JS error ``name`` of ``exc`` (a ``JsException``, a :class:`BrowserError`
    or any exception with a string ``name`` attribute, as test fakes raise), else ``None``."""
    unwrapped = _unwrapped(exc)
    if unwrapped is not None:
        return unwrapped[0]
    name = getattr(exc, "name", None)
    return name if isinstance(name, str) and name else None


def _message(exc: BaseException) -> str:
    unwrapped = _unwrapped(exc)
    if unwrapped is not None:
        return unwrapped[1]
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        return message
    text = str(exc)
    name = error_name(exc)
    if name and text.startswith(name + ": "):
        return text[len(name) + 2 :]
    return text


def from_js_error(exc: BaseException) -> BaseException:
    """A ``JsException`` as a :class:`BrowserError` (other exceptions are returned as they are)."""
    if IN_PYODIDE and isinstance(exc, JsException):
        return BrowserError(error_name(exc) or "Error", _message(exc))
    return exc


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """How one JS error name maps to a project error: ``code`` and a sentence for the visitor."""

    code: ErrorCode
    text: str


ERROR_TABLE: Final[Mapping[str, ErrorRule]] = {
    # Prompt API ("Errors" in the explainer; DOMException names), and fetch/WebMCP failures.
    "AbortError": ErrorRule("aborted", "The request was stopped."),
    "NotAllowedError": ErrorRule(
        "model-unavailable",
        "The browser did not allow this: the on-device model can be downloaded only right "
        "after a click on the page, or a permissions policy blocks it here.",
    ),
    "QuotaExceededError": ErrorRule(
        "model-error",
        "The conversation is too long for the on-device model; start a new conversation.",
    ),
    "NotSupportedError": ErrorRule(
        "model-unavailable",
        "The on-device model does not support the requested languages or response format.",
    ),
    "SyntaxError": ErrorRule(
        "model-error", "The on-device model could not produce a reply in the required format."
    ),
    "NotReadableError": ErrorRule(
        "model-error", "The on-device model's reply was filtered out by the browser."
    ),
    "NetworkError": ErrorRule(
        "model-error", "The network failed (for example while downloading the model)."
    ),
    "InvalidStateError": ErrorRule(
        "model-error", "The model session is no longer usable (the page may have changed)."
    ),
    "OperationError": ErrorRule("model-error", "The browser's model failed."),
    "TimeoutError": ErrorRule("model-error", "The browser's model did not answer in time."),
    "UnknownError": ErrorRule("model-error", "The browser reported an unknown error."),
    "TypeError": ErrorRule("model-error", "The browser rejected the request."),
}
"""JS error name -> project error code and visitor-facing text; unknown names: ``model-error``."""


def site_error(
    exc: BaseException, *, what: str, overrides: Mapping[str, ErrorRule] | None = None
) -> SiteAgentError:
    """A :class:`SiteAgentError` for a JS error raised by ``what`` (e.g. ``"prompt()"``).

    The code and text come from :data:`ERROR_TABLE` (``overrides`` first); the browser's own
    message is kept after the text, so nothing is lost for the developer.
    """
    name = error_name(exc) or type(exc).__name__
    rule = (overrides or {}).get(name) or ERROR_TABLE.get(name)
    detail = _message(exc)
    if rule is None:
        rule = ErrorRule("model-error", "The browser reported an error.")
    suffix = f" ({what}: {name}" + (f": {detail})" if detail else ")")
    return SiteAgentError(rule.code, rule.text + suffix)


# -- owned callbacks --------------------------------------------------------------------------

_live: set[int] = set()
_ids = itertools.count(1)


class OwnedCallback:
    """A Python callable handed to JavaScript for longer than one call, owned by its creator.

    ``value`` is what to pass to JavaScript: a ``create_proxy`` PyProxy in Pyodide, or the
    function itself for a Python receiver. :meth:`destroy` releases it (idempotent); calling it
    afterwards from JS raises in JS, so remove listeners first.
    """

    __slots__ = ("_id", "_proxy", "fn", "value")

    def __init__(self, fn: Callable[..., Any], *, for_js: bool) -> None:
        self.fn = fn
        self._id = next(_ids)
        self._proxy: Any = create_proxy(fn) if for_js else None
        self.value: Any = self._proxy if for_js else fn
        _live.add(self._id)

    @property
    def destroyed(self) -> bool:
        return self._id not in _live

    def destroy(self) -> None:
        if self._id not in _live:
            return
        _live.discard(self._id)
        if self._proxy is not None:
            self._proxy.destroy()
            self._proxy = None
        self.value = None


def callback(fn: Callable[..., Any], target: Any) -> OwnedCallback:
    """Wrap ``fn`` for ``target``: a PyProxy when ``target`` is a JS object, else ``fn`` itself."""
    return OwnedCallback(fn, for_js=is_js(target))


def live_callbacks() -> int:
    """How many :class:`OwnedCallback` objects exist and are not destroyed yet."""
    return len(_live)


def pyproxy_tracing(enable: bool = True) -> Callable[[], int] | None:
    """Pyodide's own PyProxy allocation tracing (for tests): returns a function giving the number
    of live PyProxies (borrowed ones included), or ``None`` outside Pyodide."""
    if not IN_PYODIDE:
        return None
    module = importlib.import_module("pyodide_js")._module
    if enable:
        module.enable_pyproxy_allocation_tracing()
    else:
        module.disable_pyproxy_allocation_tracing()
    return lambda: int(module.pyproxy_alloc_map.size)


# -- Python work for a JS caller -------------------------------------------------------------

_pending: set[asyncio.Future[Any]] = set()  # strong references: asyncio keeps only weak ones


def promise_of(awaitable: Awaitable[Any], *, for_js: bool) -> Any:
    """Run ``awaitable`` as a task now and return what the caller can await.

    For a JavaScript caller (``for_js`` in Pyodide): a JS ``Promise`` made with ``new
    Promise(executor)``, whose executor is a ``create_once_callable`` proxy that the constructor
    calls (and so releases) at once. The Promise resolves with the task's result passed through
    :func:`to_js` (plain data, a JS value, or a string); a task that raises rejects it with a JS
    ``Error`` whose ``name`` is the exception's class name (``"AbortError"`` when the task was
    cancelled). Returning a coroutine to JavaScript instead would hand out a PyProxy that only
    ``then`` releases; a caller that never calls ``then`` would leak it.

    For a Python caller: the task itself (an ``asyncio.Future``).

    Raises:
        RuntimeError: no running event loop (as ``asyncio.ensure_future`` does).
    """
    task = asyncio.ensure_future(awaitable)
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    if not (for_js and IN_PYODIDE):
        return task

    def executor(resolve: Any, reject: Any) -> None:
        def settle(done: asyncio.Future[Any]) -> None:
            if done.cancelled():
                reject(_js_error("AbortError", "The Python task was cancelled."))
                return
            error = done.exception()
            if error is not None:
                reject(_js_error(type(error).__name__, str(error)))
                return
            try:
                resolve(to_js(done.result()))
            except TypeError as exc:
                reject(_js_error("TypeError", str(exc)))

        task.add_done_callback(settle)

    return js.Promise.new(create_once_callable(executor))


def _js_error(name: str, message: str) -> Any:
    error = js.Error.new(message)
    error.name = name
    return error


# -- abort ------------------------------------------------------------------------------------


class JsAbortLink:
    """A JS ``AbortController`` that aborts when a core :class:`AbortSignal` does.

    ``signal`` is what to pass to the browser (``{signal}`` options): a JS ``AbortSignal`` when
    ``for_js`` (in Pyodide), else a core :class:`AbortSignal` (for Python fakes). Use it as a
    context manager, or call :meth:`close` to drop the link. :meth:`abort` aborts it directly
    (e.g. when the awaiting task is cancelled).
    """

    def __init__(self, source: AbortSignal | None, *, for_js: bool) -> None:
        self._js = for_js and IN_PYODIDE
        if self._js:
            self._controller: Any = js.AbortController.new()
        else:
            self._controller = AbortController()
        self.signal: Any = self._controller.signal
        self._remove: Callable[[], None] | None = None
        if source is not None:
            self._remove = source.add_listener(lambda: self.abort(source.reason))

    @property
    def aborted(self) -> bool:
        return bool(self.signal.aborted)

    def abort(self, reason: Any = None) -> None:
        if self._js:
            dom_exception = getattr(js, "DOMException", None)
            if reason is None or dom_exception is None or not isinstance(reason, str | int | float):
                self._controller.abort()  # the default reason: an AbortError DOMException
            else:
                self._controller.abort(dom_exception.new(str(reason), "AbortError"))
        else:
            self._controller.abort(reason)

    def close(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None

    def __enter__(self) -> JsAbortLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def call_abortable(link: JsAbortLink, awaitable: Awaitable[Any]) -> Any:
    """Await a JS promise (or coroutine); if the awaiting task is cancelled, abort ``link`` first
    so the browser stops the work too, then let the cancellation propagate."""
    try:
        return await awaitable
    except asyncio.CancelledError:
        link.abort("cancelled")
        raise


def signal_from_js(js_signal: Any) -> tuple[AbortSignal, Callable[[], None]]:
    """A core :class:`AbortSignal` that aborts when the JS ``AbortSignal`` ``js_signal`` does.

    Returns ``(signal, release)``; ``release()`` removes the JS listener and destroys its proxy
    (call it when the operation ends). A ``None`` (or ``null``) ``js_signal`` gives a signal that
    never aborts. A core signal is returned as it is.
    """
    if isinstance(js_signal, AbortSignal):
        return js_signal, lambda: None
    controller = AbortController()
    if is_none(js_signal):
        return controller.signal, lambda: None
    if bool(field(js_signal, "aborted")):
        controller.abort(field(js_signal, "reason"))
        return controller.signal, lambda: None
    owned: OwnedCallback | None = None

    def on_abort(*_event: Any) -> None:
        # The proxy is not destroyed here, inside its own call: ``release`` does that later.
        controller.abort(field(js_signal, "reason"))

    def release() -> None:
        nonlocal owned
        if owned is None:
            return
        if not owned.destroyed:
            js_signal.removeEventListener("abort", owned.value)
            owned.destroy()
        owned = None

    owned = callback(on_abort, js_signal)
    js_signal.addEventListener("abort", owned.value)
    return controller.signal, release
