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

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import Tool
from pysite_agent.core.validation import check_arguments
from pysite_agent.tools.python_source import TOOL_NAME, PythonToolSource

if TYPE_CHECKING:
    from pysite_agent.tools.mount import Mount

F = TypeVar("F", bound=Callable[..., Any])

Predicate = Callable[[], "bool | str"]

EMPTY_RESULT = "Operation succeeded"
"""The result text of a tool that returned ``None`` (WebMCP's own text for an empty result)."""


class ToolRefused(Exception):
    """Raised when a declared tool is called while its ``available`` predicate says no."""


class ToolArgumentsError(ValueError):
    """Raised when a declared tool is called with arguments that fail its input schema."""


# --- docstrings --------------------------------------------------------------------------

_SPHINX = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+):\s*(.*)$")
_GOOGLE = re.compile(r"^\*{0,2}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The docstring's summary (its first paragraph) and its parameter descriptions.

    Parameters come from a Google-style ``Args:`` section (``name: text`` or
    ``name (type): text``, continuation lines indented deeper) or Sphinx ``:param name: text``.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip():
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    section_indent: int | None = None
    param_indent: int | None = None
    current: str | None = None
    for line in lines:
        sphinx = _SPHINX.match(line)
        if sphinx:
            current, section_indent = sphinx.group(1), None
            params[current] = sphinx.group(2).strip()
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section_indent, param_indent, current = indent, None, None
            continue
        if section_indent is None or not stripped:
            continue
        if indent <= section_indent:
            section_indent, current = None, None
            continue
        if param_indent is None:
            param_indent = indent
        match = _GOOGLE.match(stripped)
        if indent == param_indent and match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary), {k: v for k, v in params.items() if v}


# --- type hints -> JSON Schema ----------------------------------------------------------


def schema_for(hint: Any) -> dict[str, Any]:
    """The JSON Schema for a type hint (see the module docstring).

    Raises:
        ValueError: the hint has no JSON Schema form here.
    """
    if hint is Any:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (typing.Required, typing.NotRequired):
        return schema_for(args[0])
    if origin is typing.Annotated:
        inner = schema_for(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                inner["description"] = extra
            elif isinstance(extra, Mapping):
                inner.update(extra)
        return inner
    if origin is Literal:
        values = list(args)
        out: dict[str, Any] = {"enum": values}
        kinds = {_json_type(v) for v in values}
        if len(kinds) == 1 and None not in kinds:
            out["type"] = kinds.pop()
        return out
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) != len(args)
        if len(members) == 1:
            inner = schema_for(members[0])
            if nullable:
                if isinstance(inner.get("type"), str) and set(inner) <= {"type", "description"}:
                    return {**inner, "type": [inner["type"], "null"]}
                return {"anyOf": [inner, {"type": "null"}]}
            return inner
        variants = [schema_for(m) for m in members]
        if nullable:
            variants.append({"type": "null"})
        return {"anyOf": variants}
    if origin in (list, set, frozenset, tuple) or hint in (list, set, frozenset, tuple):
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return {
                "type": "array",
                "prefixItems": [schema_for(a) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        out = {"type": "array"}
        if args:
            out["items"] = schema_for(args[0])
        if origin in (set, frozenset):
            out["uniqueItems"] = True
        return out
    if origin is dict or hint is dict:
        out = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise ValueError(f"dict keys must be str for JSON, got {args[0]!r}")
            out["additionalProperties"] = schema_for(args[1])
        return out
    if inspect.isclass(hint) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        out = {"enum": values}
        kinds = {_json_type(v) for v in values}
        if len(kinds) == 1 and None not in kinds:
            out["type"] = kinds.pop()
        return out
    if _is_typeddict(hint):
        return _typeddict_schema(hint)
    if dataclasses.is_dataclass(hint) and inspect.isclass(hint):
        return _dataclass_schema(hint)
    raise ValueError(f"no JSON Schema for the type {hint!r}; pass input_schema= explicitly")


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _is_typeddict(hint: Any) -> bool:
    return inspect.isclass(hint) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _typeddict_schema(hint: Any) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    _, described = parse_docstring(hint.__doc__)
    props = {}
    for key, value in hints.items():
        props[key] = schema_for(value)
        if key in described:
            props[key].setdefault("description", described[key])
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    # ``__required_keys__`` is wrong for string annotations on 3.11: read the markers themselves.
    required = sorted(
        key
        for key, value in hints.items()
        if get_origin(value) is typing.Required
        or (get_origin(value) is not typing.NotRequired and key in hint.__required_keys__)
    )
    if required:
        out["required"] = required
    return out


def _dataclass_schema(hint: Any) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    _, described = parse_docstring(hint.__doc__)
    props: dict[str, Any] = {}
    required: list[str] = []
    for field in dataclasses.fields(hint):
        prop = schema_for(hints[field.name])
        if field.name in described:
            prop.setdefault("description", described[field.name])
        if field.default is not dataclasses.MISSING and _jsonish(field.default):
            prop["default"] = field.default
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
        props[field.name] = prop
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _jsonish(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_signal(hint: Any) -> bool:
    """``AbortSignal`` or ``AbortSignal | None``: the parameter receives the call's signal."""
    if hint is AbortSignal:
        return True
    if get_origin(hint) in (typing.Union, types.UnionType):
        members = [a for a in get_args(hint) if a is not type(None)]
        return members == [AbortSignal]
    return False


def signature_schema(fn: Callable[..., Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The input schema of ``fn``'s parameters, and the hints used (for building arguments).

    A parameter named ``signal`` annotated as :class:`AbortSignal` is not part of the schema: it
    receives the call's abort signal.

    Raises:
        ValueError: ``*args``/``**kwargs`` or a hint without a JSON Schema form.
    """
    signature = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)
    _, described = parse_docstring(fn.__doc__)
    props: dict[str, Any] = {}
    required: list[str] = []
    used: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"{fn.__name__}: *args/**kwargs cannot be described as a tool input")
        hint = hints.get(name, Any)
        if _is_signal(hint):
            continue
        prop = schema_for(hint)
        if name in described:
            prop.setdefault("description", described[name])
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif _jsonish(param.default):
            prop["default"] = param.default
        props[name] = prop
        used[name] = hint
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema, used


def _build(hint: Any, value: Any) -> Any:
    """Turn validated JSON into the Python value a parameter expects (dataclasses, enums)."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return _build(get_args(hint)[0], value)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        members = [a for a in get_args(hint) if a is not type(None)]
        return _build(members[0], value) if len(members) == 1 else value
    if dataclasses.is_dataclass(hint) and inspect.isclass(hint) and isinstance(value, dict):
        field_hints = get_type_hints(hint)
        return hint(**{k: _build(field_hints.get(k, Any), v) for k, v in value.items()})
    if inspect.isclass(hint) and issubclass(hint, enum.Enum):
        return hint(value)
    if origin in (list, set, frozenset, tuple) and isinstance(value, list):
        args = get_args(hint)
        item = args[0] if args else Any
        items = [_build(item, v) for v in value]
        return origin(items) if origin in (set, frozenset, tuple) else items
    return value


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
        self._wants_signal = "signal" in inspect.signature(fn).parameters and _is_signal(
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
        kwargs = {k: _build(self._hints.get(k, Any), v) for k, v in check.arguments.items()}
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


class ToolRegistry:
    """A set of declared tools: a plain tool list on CPython, mountable on a page in Pyodide.

    ``tools()`` lists the available ones as :class:`Tool` objects (for ``create_site_agent``);
    ``source()`` is a live :class:`PythonToolSource` kept in step by :meth:`refresh`;
    ``mount()``/``unmount()`` (:mod:`pysite_agent.tools.mount`) register them on
    ``document.modelContext`` so this agent and any other WebMCP client can call them.
    """

    def __init__(self, tools: Iterable[DeclaredTool] = ()) -> None:
        self._declared: dict[str, DeclaredTool] = {}
        self._listeners: list[Callable[[], Any]] = []
        self._source: PythonToolSource | None = None
        self._mounts: list[Mount] = []
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

    async def mount(self, model_context: Any = None) -> Mount:
        """Register the available tools on ``model_context`` (default: the page's
        ``document.modelContext``); see :func:`pysite_agent.tools.mount.mount` for the errors.

        Later ``refresh()``/``add()``/``remove()`` calls register and unregister tools there.
        """
        from pysite_agent.tools.mount import mount

        return await mount(self, model_context)

    def unmount(self) -> None:
        """Unregister every mounted tool everywhere and release their proxies (idempotent)."""
        for mounted in list(self._mounts):
            mounted.unmount()

    @property
    def mounts(self) -> list[Mount]:
        """The live mounts (a copy)."""
        return list(self._mounts)

    def _remember_mount(self, mounted: Mount) -> None:
        self._mounts.append(mounted)

    def _forget_mount(self, mounted: Mount) -> None:
        if mounted in self._mounts:
            self._mounts.remove(mounted)

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
