"""A tool source over Python :class:`~pysite_agent.core.types.Tool` objects.

Implements the :class:`~pysite_agent.core.types.ToolSource` protocol: ``get_tools()`` sorted by
name (like WebMCP's ``getTools()``), ``execute_tool()``, a ``revision`` that changes on every
registration change, ``on_change()``, plus ``register()``/``unregister()``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import RegisteredTool, Tool, ToolSource

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
"""WebMCP's tool-name rule: 1-128 characters of letters, digits, ``_``, ``.`` and ``-``."""

_keys = itertools.count(1)


def _accepts_signal(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


class PythonToolSource:
    """Tools defined in Python.

    Raises (from :meth:`register`):
        ValueError: a name that breaks WebMCP's rule, or a duplicate name (WebMCP's
            ``InvalidStateError``).
        TypeError: ``execute`` is not callable.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, tuple[Tool, RegisteredTool]] = {}
        self._revision = 0
        self._listeners: list[Callable[[], Any]] = []
        for tool in tools:
            self.register(tool)

    @property
    def revision(self) -> int:
        """Raised by one on every register/unregister."""
        return self._revision

    def register(self, tool: Tool) -> Callable[[], None]:
        """Add ``tool``; returns a function that unregisters it."""
        if not isinstance(tool.name, str) or not TOOL_NAME.fullmatch(tool.name):
            raise ValueError(
                f"invalid tool name {tool.name!r}: use 1-128 letters, digits, '_', '.' or '-'"
            )
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        if not callable(tool.execute):
            raise TypeError(f"tool {tool.name!r}: execute must be callable")
        info = RegisteredTool(
            name=tool.name,
            description=tool.description or "",
            title=tool.title,
            input_schema=tool.input_schema,
            annotations=None if tool.annotations is None else dict(tool.annotations),
            key=f"py:{next(_keys)}",
        )
        self._tools[tool.name] = (tool, info)
        self._changed()

        def unregister() -> None:
            self.unregister(tool.name, _key=info.key)

        return unregister

    def unregister(self, name: str, *, _key: str | None = None) -> bool:
        """Remove the tool called ``name``; returns whether one was removed."""
        entry = self._tools.get(name)
        if entry is None or (_key is not None and entry[1].key != _key):
            return False
        del self._tools[name]
        self._changed()
        return True

    def _changed(self) -> None:
        self._revision += 1
        for callback in list(self._listeners):
            with contextlib.suppress(Exception):  # a listener must not break the caller
                callback()

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback()`` after every registration change; returns an unsubscribe function."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    async def get_tools(self) -> Sequence[RegisteredTool]:
        return [self._tools[name][1] for name in sorted(self._tools)]

    async def execute_tool(
        self, tool: RegisteredTool, args: dict[str, Any], *, signal: AbortSignal | None = None
    ) -> Any:
        """Run the tool registered as ``tool`` (same registration key) with ``args``.

        Raises:
            LookupError: the tool is no longer registered (or was registered again).
            Exception: whatever the tool raises.
        """
        entry = self._tools.get(tool.name)
        if entry is None or entry[1].key != tool.key:
            raise LookupError(f"tool {tool.name!r} is not registered")
        fn = entry[0].execute
        result = fn(args, signal) if _accepts_signal(fn) else fn(args)
        if inspect.isawaitable(result):
            result = await result
        return result


def as_tool_source(tools: Any) -> ToolSource:
    """``tools`` as a tool source: a source is returned as is; a list of :class:`Tool` is wrapped.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(tools, ToolSource):
        return tools
    if isinstance(tools, list | tuple):
        if not all(isinstance(t, Tool) for t in tools):
            raise TypeError("tools must be Tool objects or a tool source")
        return PythonToolSource(tools)
    raise TypeError("tools must be a tool source (get_tools/execute_tool) or a list of Tool")
