"""The client's side of a request: its body, and noticing when it has gone away (ASGI)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from pysite_agent.server._types import Receive

_T = TypeVar("_T")


class ClientGone(Exception):
    """The client disconnected: before its body arrived, or before the provider answered."""


async def read_body(receive: Receive, cap: int) -> bytes | None:
    """The request body, or ``None`` as soon as it passes ``cap`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def unless_gone(call: Awaitable[_T], receive: Receive) -> _T:
    """``await call``, unless the client disconnects first: then ``call`` is cancelled (which
    closes the upstream request at once) and :class:`ClientGone` is raised.

    The request body has been read whole, so the next ASGI message is ``http.disconnect``.
    """

    async def gone() -> None:
        while True:
            if (await receive())["type"] == "http.disconnect":
                return
            await asyncio.sleep(0)  # never a busy loop on a server that sends something else

    task = asyncio.ensure_future(call)
    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ClientGone
    return task.result()
