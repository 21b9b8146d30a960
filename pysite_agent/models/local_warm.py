"""The in-page model's head start: reading the fixed start of the prompt before the visitor asks.

On a CPU, every prompt token costs time (about 8 to 14 tokens a second for SmolLM2-135M on
this 2-core machine), and the first step's prompt is mostly the same every time: the rules,
the site's instructions and the tool list (:meth:`pysite_agent.models.local.LocalModel.prefix`).
:class:`Warmer` has the engine read it as soon as the model is kept on the device, with no
reply; llama.cpp then reuses it (its prompt cache), so a step pays only for the visitor's words.

It reads the prefix in :data:`PIECES` growing pieces, each cut at a line's end, so that it can
say how far it got: ``wllama`` 3.8.1 delivers llama.cpp's own ``prompt_progress`` only once the
whole prompt is read (measured: three reports within 1.3 s at the end of a 20 s prompt), which
is no sign of life. A step asked meanwhile waits for it (llama.cpp has one slot) with that
progress (:meth:`Warmer.wait`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pysite_agent.core.signals import AbortSignal

PIECES = 4
"""How many growing pieces the prefix is read in (each costs one generated token more)."""

MARK = "\u2063\u2063"
"""A stand-in for the visitor's first message (invisible separators): the prompt up to the line
before it is the fixed prefix."""


def prompt_fraction(progress: Any) -> float | None:
    """The share of the prompt's new tokens read so far, 0.0 to 1.0, from llama.cpp's
    ``prompt_progress`` (``{total, cache, processed}`` in tokens; ``processed`` counts the
    cached ones too), or ``None`` for anything else."""
    if not isinstance(progress, Mapping):
        return None
    raw = [progress.get(k) for k in ("total", "cache", "processed")]
    numbers = [float(n) for n in raw if isinstance(n, int | float) and not isinstance(n, bool)]
    if len(numbers) != 3:
        return None
    total, cache, processed = numbers
    if not (total > 0 and 0 <= cache <= total) or processed != processed:  # NaN
        return None
    new = total - cache
    if new <= 0:
        return 1.0
    return min(1.0, max(0.0, (processed - cache) / new))


def pieces(prefix: str, count: int = PIECES) -> list[str]:
    """``prefix`` as up to ``count`` growing pieces, each ending at a line's end (the last is
    ``prefix`` itself); fewer when it has fewer lines."""
    ends = [i + 1 for i, c in enumerate(prefix) if c == "\n"]
    if not ends or ends[-1] != len(prefix):
        ends.append(len(prefix))
    step = len(prefix) / count
    cuts: list[int] = []
    for k in range(1, count):
        end = next((e for e in ends if e >= step * k), len(prefix))
        if end < len(prefix) and (not cuts or end > cuts[-1]):
            cuts.append(end)
    return [prefix[:end] for end in cuts] + [prefix]


class Warmer:
    """One model's warm-up: what was read, the one running, who waits for it."""

    def __init__(self) -> None:
        self._done: tuple[str, str] | None = None
        self._running: asyncio.Future[None] | None = None
        self._listeners: list[Callable[[float], None]] = []
        self.last: dict[str, Any] = {}

    def done_for(self, system: str, prefix: str) -> bool:
        """Whether this prefix was read already (or is being read)."""
        return self._done == (system, prefix)

    async def run(
        self,
        system: str,
        prefix: str,
        read: Callable[[str], Awaitable[Any]],
        signal: AbortSignal | None,
    ) -> None:
        """Read ``prefix`` by ``read(piece)`` (one engine request, its reply as Python data),
        piece by piece, telling each waiter the fraction done.

        Raises:
            AbortedError: ``signal`` aborted (what was read stays in llama.cpp's cache).
            Exception: whatever ``read`` raises.
        """
        started = time.monotonic()
        self._done = (system, prefix)
        loop = asyncio.get_running_loop()
        running = self._running = loop.create_future()
        tokens = 0.0
        try:
            parts = pieces(prefix)
            for n, piece in enumerate(parts, 1):
                if signal is not None:
                    signal.throw_if_aborted()
                reply = await read(piece)
                timings = reply.get("timings") if isinstance(reply, Mapping) else None
                read_now = timings.get("prompt_n") if isinstance(timings, Mapping) else None
                if isinstance(read_now, int | float) and not isinstance(read_now, bool):
                    tokens += read_now  # each piece's new tokens (the rest came from the cache)
                for listener in list(self._listeners):
                    with contextlib.suppress(Exception):  # a sign of life must not break it
                        listener(n / len(parts))
        except BaseException:
            self._done = None  # not read whole: the next chance reads it again
            raise
        finally:
            self._running = None
            if not running.done():
                running.set_result(None)
        self.last = {"seconds": round(time.monotonic() - started, 3)}
        if tokens:
            self.last["promptTokens"] = int(tokens)

    async def wait(
        self, on_progress: Callable[[float], None] | None, signal: AbortSignal | None
    ) -> None:
        """Wait for a warm-up that is running (if any), passing its progress to
        ``on_progress``; ``signal`` ends the wait (the warm-up goes on)."""
        running = self._running
        if running is None:
            return
        if on_progress is not None:
            self._listeners.append(on_progress)
        try:
            if signal is not None:
                await signal.race(asyncio.shield(running))
            else:
                await asyncio.shield(running)
        finally:
            if on_progress is not None:
                with contextlib.suppress(ValueError):
                    self._listeners.remove(on_progress)
