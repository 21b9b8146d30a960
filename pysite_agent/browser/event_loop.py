"""Run the ready callbacks of the browser's asyncio loop in batches.

Pyodide's ``WebLoop`` gives every ``call_soon`` callback a browser task of its own (a
``MessageChannel`` message), so each ``await`` hop costs a round trip through the browser's
event loop. CPython's loops run every ready callback in one iteration instead. One tool step of
the agent makes about 35 such hops: batched, a step through the element measured about 40 %
cheaper in Chromium (``benchmarks/browser_bridge.py``).

:func:`install` changes one loop so that ``call_soon`` queues the callback and schedules one
drain for the whole queue with the loop's own ``call_later(0, ...)``. A drain runs the queued
callbacks in order (first in, first out, as ``asyncio`` requires) for at most ``budget_ms``
milliseconds, then leaves the rest to a drain in a later browser task, so that messages (a
Stop from the page) and rendering still get their turn. Timers (``call_later`` with a delay)
are unchanged.

``bootPython()`` (``web/runtime/boot.js``) installs it on every runtime it starts: the worker's, and
the page's own in ``runtime="main"``. A Pyodide that the page handed in (PyScript) keeps its
loop as it is.
Importing this module needs no browser; :func:`install` works on any asyncio loop (tests).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import time
from collections.abc import Callable
from typing import Any

BUDGET_MS = 5.0
"""How long (ms) one drain may run before it yields to the browser."""


class _Batcher:
    def __init__(self, loop: asyncio.AbstractEventLoop, budget_ms: float) -> None:
        self.loop = loop
        self.budget_s = budget_ms / 1000
        self.ready: collections.deque[asyncio.Handle] = collections.deque()
        self.scheduled = False
        self.call_later = loop.call_later

    def call_soon(
        self,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self.loop, context=context)
        self.ready.append(handle)
        if not self.scheduled:
            self.scheduled = True
            self.call_later(0, self.drain)
        return handle

    def drain(self) -> None:
        self.scheduled = False
        deadline = time.perf_counter() + self.budget_s
        ready = self.ready
        try:
            while ready:
                handle = ready.popleft()
                if not handle.cancelled():
                    # Handle._run reports an Exception to the loop's exception handler, as
                    # the loop itself does; SystemExit and KeyboardInterrupt propagate.
                    handle._run()
                if ready and time.perf_counter() >= deadline:
                    break
        finally:
            if ready and not self.scheduled:
                self.scheduled = True
                self.call_later(0, self.drain)


def install(loop: asyncio.AbstractEventLoop | None = None, *, budget_ms: float = BUDGET_MS) -> bool:
    """Batch the ready callbacks of ``loop`` (default: the current event loop).

    Args:
        loop: the loop to change; once per loop (a second call changes nothing).
        budget_ms: the longest a drain runs before it yields (milliseconds, > 0).

    Returns:
        ``True`` if the loop was changed now, ``False`` if it already batches.

    Raises:
        ValueError: ``budget_ms`` is not a positive number.
    """
    if not (isinstance(budget_ms, int | float) and budget_ms > 0):
        raise ValueError(f"budget_ms must be a positive number of milliseconds, not {budget_ms!r}")
    if loop is None:
        loop = asyncio.get_event_loop()
    if isinstance(getattr(loop, "_pysite_agent_batcher", None), _Batcher):
        return False
    batcher = _Batcher(loop, float(budget_ms))
    loop._pysite_agent_batcher = batcher  # type: ignore[attr-defined]
    # Instance attributes: asyncio's futures and tasks look call_soon up on the loop object.
    loop.call_soon = batcher.call_soon  # type: ignore[method-assign,assignment]
    loop.call_soon_threadsafe = batcher.call_soon  # type: ignore[method-assign,assignment]
    return True


def uninstall(loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """Undo :func:`install` (callbacks already queued still run). ``True`` if it was on."""
    if loop is None:
        loop = asyncio.get_event_loop()
    batcher = getattr(loop, "_pysite_agent_batcher", None)
    if not isinstance(batcher, _Batcher):
        return False
    del loop._pysite_agent_batcher  # type: ignore[attr-defined]
    del loop.call_soon
    del loop.call_soon_threadsafe
    return True


def batching(loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """Whether :func:`install` is in effect on ``loop`` (default: the current event loop)."""
    if loop is None:
        loop = asyncio.get_event_loop()
    return isinstance(getattr(loop, "_pysite_agent_batcher", None), _Batcher)
