"""Run a coroutine to completion on an event loop with virtual time.

The loop never sleeps: when nothing is ready, its clock jumps to the next timer. Timeouts
(``tool_timeout_ms`` and the like) therefore take no wall time, and the same helper works on
CPython and inside Pyodide, where the page's own loop cannot be driven synchronously.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _Selector:
    """Stands in for a selector: ``select(timeout)`` advances the loop's virtual clock."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None:
            # Nothing scheduled and nothing ready: the coroutine waits for something that
            # can never happen on this loop.
            raise RuntimeError("deadlock: the coroutine waits for an event no timer will bring")
        if timeout > 0:
            self._loop._now += timeout
        return []

    def close(self) -> None:  # pragma: no cover - nothing to release
        pass


class VirtualTimeLoop(asyncio.BaseEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        self._selector = _Selector(self)

    def time(self) -> float:
        return self._now

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    def close(self) -> None:
        self._scheduled.clear()
        heapq.heapify(self._scheduled)
        super().close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh :class:`VirtualTimeLoop` and return its result."""
    previous = asyncio.events._get_running_loop()
    # Inside a running task (e.g. a test body run by Pyodide's own loop), step out of it: the
    # running loop is per thread, and from Python 3.14 the current task is too.
    swap = getattr(asyncio.tasks, "_swap_current_task", None)
    outer_task = swap(previous, None) if (swap is not None and previous is not None) else None
    asyncio.events._set_running_loop(None)
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            asyncio.events._set_running_loop(previous)
            if swap is not None and previous is not None:
                swap(previous, outer_task)
