"""A pure-Python abort signal, shaped like the DOM's ``AbortController``/``AbortSignal``.

The bridge races every wait (the model, the visitor, a tool) against a signal, so that one abort
stops all three (README, safety rule 7). In the browser, the glue links a JS ``AbortSignal`` to one
of these; nothing here touches JavaScript.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class AbortedError(Exception):
    """Raised by :meth:`AbortSignal.race` and :meth:`AbortSignal.throw_if_aborted`."""

    def __init__(self, reason: Any = None) -> None:
        super().__init__("aborted" if reason is None else str(reason))
        self.reason = reason


class AbortSignal:
    """Read-only view of an abort: ``aborted``, ``reason``, listeners and an awaitable race."""

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._listeners: list[Callable[[], Any]] = []
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> Any:
        return self._reason

    def add_listener(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback()`` once on abort (at once if already aborted). Returns a remover."""
        if self._aborted:
            callback()
            return lambda: None
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def throw_if_aborted(self) -> None:
        """Raises :class:`AbortedError` if the signal is aborted."""
        if self._aborted:
            raise AbortedError(self._reason)

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the signal aborts first.

        On abort the awaitable (if it is a task or coroutine) is cancelled and
        :class:`AbortedError` is raised at once, without waiting for it to finish; an awaitable
        that settles in the same turn as the abort does not win over it.
        """
        if self._aborted:
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never started: close it so it is not reported as leaked
            raise AbortedError(self._reason)
        task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            if not waiter.done():
                waiter.cancel()
        if task.done() and not self._aborted:
            return task.result()
        # Aborted (even if the awaitable settled in the same turn, e.g. failing *because* of
        # the abort, as a model call across the worker channel does): the abort wins.
        task.cancel()
        # Retrieve the cancellation later so it is never reported as unhandled.
        task.add_done_callback(_consume)
        raise AbortedError(self._reason)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        for callback in listeners:
            with contextlib.suppress(Exception):  # a listener must not break the caller
                callback()


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable (a coroutine, a future, a JS ``Promise`` in
    Pyodide), else return it: for callables that may be sync or async (a model's methods, a
    site's function, a browser API). The package's one definition; :mod:`pysite_agent.ffi` and
    :mod:`pysite_agent.models.base` re-export it."""
    if inspect.isawaitable(value):
        return await value
    return value


def _consume(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


class AbortController:
    """Owns an :class:`AbortSignal`; ``abort(reason)`` fires it (once; later calls do nothing)."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        self.signal._fire(reason)


def _forward(signal: AbortSignal, controller: AbortController) -> Callable[[], None]:
    return lambda: controller.abort(signal.reason)


def any_signal(*signals: AbortSignal | None) -> AbortController:
    """A controller that aborts as soon as any of ``signals`` does (``None`` entries ignored)."""
    controller = AbortController()
    for signal in signals:
        if signal is None:
            continue
        signal.add_listener(_forward(signal, controller))
    return controller
