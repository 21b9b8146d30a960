"""Declaring tools in Python: ``@tool`` and :class:`ToolRegistry` (pure Python, no ``js``).

A typed function becomes a :class:`~pysite_agent.core.types.Tool` whose ``input_schema`` comes from
its signature, and whose description and parameter descriptions come from its docstring::

    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def find_plan(feature: str, billing: Literal["monthly", "yearly"] = "monthly") -> str:
        '''Find pricing plans that include a feature.

        Args:
            feature: a feature name, for example "SSO".
            billing: how the plan is billed.
        '''

Type hints map to JSON Schema (draft 2020-12): ``str`` string, ``int`` integer, ``float`` number,
``bool`` boolean, ``None`` null, ``list[X]``/``tuple[X, ...]``/``set[X]`` array of X, ``dict[str,
X]`` object of X, ``Literal[...]`` enum, ``enum.Enum`` enum of its values, ``X |
None``/``Optional[X]`` X or null, ``TypedDict`` and dataclasses objects with their fields
(required unless they have a default, or the TypedDict key is not required). A parameter default
becomes ``default`` and makes the parameter optional. Parameter descriptions come from a Google-
style ``Args:`` section or from Sphinx ``:param name:`` lines.

Annotations map to WebMCP's hints: ``read_only`` -> ``readOnlyHint``, ``untrusted_content`` ->
``untrustedContentHint``, ``consequential`` -> ``consequentialHint``.

Every call is validated with ``jsonschema`` before the function runs; dataclass parameters are
built from their JSON objects. A function that returns ``None`` reads as :data:`EMPTY_RESULT`
(``"Operation succeeded"``, what WebMCP reports for an empty result), both through ``tools()``
and when mounted. ``available`` is a predicate: while it returns ``False`` (or a
string, the reason) the tool is not offered, and a call refuses with that reason.

Raises (at declaration): ``ValueError`` for a name that breaks WebMCP's rule (1-128 characters of
``[A-Za-z0-9_.-]``), a duplicate name in one registry, or a parameter whose type has no JSON Schema
(``*args``, ``**kwargs``, or an unsupported type without an explicit ``input_schema``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar, get_type_hints

from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import Tool
from pysite_agent.core.validation import check_arguments
from pysite_agent.tools.python_source import TOOL_NAME, PythonToolSource
from pysite_agent.tools.schema import (
    build_value,
    is_signal,
    parse_docstring,
    schema_for,
    signature_schema,
)

__all__ = [
    "EMPTY_RESULT",
    "DeclaredTool",
    "Mounter",
    "Predicate",
    "ToolArgumentsError",
    "ToolRefused",
    "ToolRegistry",
    "parse_docstring",
    "schema_for",
    "signature_schema",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

Predicate = Callable[[], "bool | str"]

EMPTY_RESULT = "Operation succeeded"
"""The result text of a tool that returned ``None`` (WebMCP's own text for an empty result)."""


class ToolRefused(Exception):
    """Raised when a declared tool is called while its ``available`` predicate says no."""


class ToolArgumentsError(ValueError):
    """Raised when a declared tool is called with arguments that fail its input schema."""


# --- declared tools ------------------------------------------------------------------------


class DeclaredTool:
    """A function declared as a tool. Calling it calls the function unchanged.

    Attributes:
        tool: the :class:`Tool` the agent and the browser see (its ``execute`` validates first).
        name, input_schema, annotations: as in WebMCP's ``registerTool`` descriptor.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        read_only: bool = False,
        untrusted_content: bool = False,
        consequential: bool = False,
        input_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        available: Predicate | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: WebMCP allows 1-128 characters of "
                "letters, digits, '_', '.' and '-'"
            )
        summary, _ = parse_docstring(fn.__doc__)
        self.description = description if description is not None else summary
        self.title = title
        if input_schema is None:
            self.input_schema, self._hints = signature_schema(fn)
        else:
            self.input_schema, self._hints = dict(input_schema), {}
        hints: dict[str, Any] = {
            "readOnlyHint": bool(read_only),
            "untrustedContentHint": bool(untrusted_content),
            "consequentialHint": bool(consequential),
        }
        if annotations:
            hints.update(annotations)
        self.annotations = hints
        self.available = available
        # ``signal: AbortSignal`` or ``signal: AbortSignal | None`` receives the call's signal.
        self._wants_signal = "signal" in inspect.signature(fn).parameters and is_signal(
            get_type_hints(fn, include_extras=True).get("signal")
        )
        self.tool = Tool(
            name=self.name,
            description=self.description,
            execute=self._tool_execute,
            input_schema=self.input_schema,
            annotations=self.annotations,
            title=self.title,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name}>"

    def availability(self) -> str | None:
        """``None`` when the tool is available, else the reason it is not."""
        if self.available is None:
            return None
        verdict = self.available()
        if verdict is True:
            return None
        if isinstance(verdict, str) and verdict:
            return verdict
        return f"{self.name} is not available right now."

    async def execute(self, args: Any, signal: AbortSignal | None = None) -> Any:
        """Validate ``args`` against the input schema, then run the function.

        Raises:
            ToolRefused: the ``available`` predicate says no (its reason is the message).
            ToolArgumentsError: the arguments fail the schema (JSON pointer + message each).
            Exception: whatever the function raises.
        """
        reason = self.availability()
        if reason is not None:
            raise ToolRefused(reason)
        check = check_arguments(self.input_schema, args)
        if check.arguments is None or check.problems:
            listing = "; ".join(f"{p.path or '/'}: {p.message}" for p in check.problems)
            raise ToolArgumentsError(f"invalid arguments for {self.name}: {listing}")
        kwargs = {k: build_value(self._hints.get(k, Any), v) for k, v in check.arguments.items()}
        if self._wants_signal:
            kwargs["signal"] = signal
        result = self.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _tool_execute(self, args: Any, signal: AbortSignal | None = None) -> Any:
        """:meth:`execute` for the agent: ``None`` reads as :data:`EMPTY_RESULT` (the core would
        read ``None`` as "the page navigated")."""
        result = await self.execute(args, signal)
        return EMPTY_RESULT if result is None else result


class Mounter(Protocol):
    """Puts a registry's tools on a page: :mod:`pysite_agent.tools.mount` installs one as
    :attr:`ToolRegistry.mounter` (the registry knows no more of mounting than this)."""

    async def mount(self, registry: ToolRegistry, model_context: Any) -> Any: ...

    def unmount(self, registry: ToolRegistry) -> None: ...

    def mounts(self, registry: ToolRegistry) -> list[Any]: ...


class ToolRegistry:
    """A set of declared tools: a plain tool list on CPython, mountable on a page in Pyodide.

    ``tools()`` lists the available ones as :class:`Tool` objects (for ``create_site_agent``);
    ``source()`` is a live :class:`PythonToolSource` kept in step by :meth:`refresh`;
    ``mount()``/``unmount()`` (:mod:`pysite_agent.tools.mount`) register them on
    ``document.modelContext`` so this agent and any other WebMCP client can call them.
    """

    mounter: ClassVar[Mounter | None] = None
    """How :meth:`mount`, :meth:`unmount` and :attr:`mounts` reach the page (set by
    :mod:`pysite_agent.tools.mount`)."""

    def __init__(self, tools: Iterable[DeclaredTool] = ()) -> None:
        self._declared: dict[str, DeclaredTool] = {}
        self._listeners: list[Callable[[], Any]] = []
        self._source: PythonToolSource | None = None
        for declared in tools:
            self.add(declared)

    def add(self, declared: DeclaredTool) -> DeclaredTool:
        """Add a declared tool.

        Raises:
            ValueError: a tool of that name is already declared here.
        """
        if declared.name in self._declared:
            raise ValueError(f"duplicate tool name {declared.name!r}")
        self._declared[declared.name] = declared
        self.refresh()
        return declared

    def remove(self, name: str) -> bool:
        """Remove the tool called ``name``; returns whether there was one."""
        found = self._declared.pop(name, None) is not None
        if found:
            self.refresh()
        return found

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        **options: Any,
    ) -> Any:
        """Decorator: ``@registry.tool`` or ``@registry.tool(read_only=True, ...)``.

        The options are those of :func:`tool`.
        """

        def wrap(f: Callable[..., Any]) -> DeclaredTool:
            return self.add(DeclaredTool(f, **options))

        return wrap(fn) if fn is not None else wrap

    @property
    def declared(self) -> list[DeclaredTool]:
        """Every declared tool, available or not, by name."""
        return [self._declared[name] for name in sorted(self._declared)]

    def tools(self) -> list[Tool]:
        """The tools whose ``available`` predicate holds now."""
        return [d.tool for d in self.declared if d.availability() is None]

    def source(self) -> PythonToolSource:
        """A tool source over this registry; :meth:`refresh` keeps it in step."""
        if self._source is None:
            self._source = PythonToolSource()
            self._sync_source()
        return self._source

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """``callback()`` after every :meth:`refresh`; returns an unsubscribe function."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def refresh(self) -> None:
        """Re-evaluate every ``available`` predicate and update the source, the mounts and the
        listeners."""
        self._sync_source()
        for callback in list(self._listeners):
            callback()

    async def mount(self, model_context: Any = None) -> Any:
        """Register the available tools on ``model_context`` (default: the page's
        ``document.modelContext``) and return the ``Mount``; see
        :func:`pysite_agent.tools.mount.mount` for the errors.

        Later ``refresh()``/``add()``/``remove()`` calls register and unregister tools there.
        """
        return await self._mounter().mount(self, model_context)

    def unmount(self) -> None:
        """Unregister every mounted tool everywhere and release their proxies (idempotent)."""
        self._mounter().unmount(self)

    @property
    def mounts(self) -> list[Any]:
        """The live mounts (a copy)."""
        return self._mounter().mounts(self)

    def _mounter(self) -> Mounter:
        mounter = ToolRegistry.mounter
        if mounter is None:  # pragma: no cover - pysite_agent.tools installs it on import
            raise RuntimeError("pysite_agent.tools.mount is not loaded: import pysite_agent.tools")
        return mounter

    def _sync_source(self) -> None:
        source = self._source
        if source is None:
            return
        wanted = {t.name: t for t in self.tools()}
        listed = set(source._tools)
        for name in listed - set(wanted):
            source.unregister(name)
        for name in set(wanted) - listed:
            source.register(wanted[name])


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    read_only: bool = False,
    untrusted_content: bool = False,
    consequential: bool = False,
    input_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
    available: Predicate | None = None,
) -> Any:
    """Declare a function as a tool: ``@tool`` or ``@tool(read_only=True, ...)``.

    Returns a :class:`DeclaredTool` (still callable as the function). See the module docstring
    for the schema rules and the errors raised.
    """
    options = {
        "name": name,
        "description": description,
        "title": title,
        "read_only": read_only,
        "untrusted_content": untrusted_content,
        "consequential": consequential,
        "input_schema": input_schema,
        "annotations": annotations,
        "available": available,
    }

    def wrap(f: Callable[..., Any]) -> DeclaredTool:
        return DeclaredTool(f, **options)  # type: ignore[arg-type]

    return wrap(fn) if fn is not None else wrap
