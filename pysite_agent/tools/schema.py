"""Type hints and docstrings to JSON Schema (draft 2020-12), for tools declared in Python.

Pure Python, no ``js``. :func:`signature_schema` makes a function's ``inputSchema`` from its
signature and docstring; :func:`schema_for` maps one hint; :func:`parse_docstring` reads the
summary and the parameter descriptions; :func:`build_value` turns validated JSON back into what
a parameter's hint expects (dataclasses, enums, sets, tuples). The mapping rules are in
:mod:`pysite_agent.tools.declare`.

Raises: ``ValueError`` for a parameter whose type has no JSON Schema (``*args``, ``**kwargs``,
or an unsupported type).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin, get_type_hints

from pysite_agent.core.signals import AbortSignal

__all__ = ["build_value", "is_signal", "parse_docstring", "schema_for", "signature_schema"]


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


def is_signal(hint: Any) -> bool:
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
        if is_signal(hint):
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


def build_value(hint: Any, value: Any) -> Any:
    """Turn validated JSON into the Python value a parameter expects (dataclasses, enums)."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return build_value(get_args(hint)[0], value)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        members = [a for a in get_args(hint) if a is not type(None)]
        return build_value(members[0], value) if len(members) == 1 else value
    if dataclasses.is_dataclass(hint) and inspect.isclass(hint) and isinstance(value, dict):
        field_hints = get_type_hints(hint)
        return hint(**{k: build_value(field_hints.get(k, Any), v) for k, v in value.items()})
    if inspect.isclass(hint) and issubclass(hint, enum.Enum):
        return hint(value)
    if origin in (list, set, frozenset, tuple) and isinstance(value, list):
        args = get_args(hint)
        item = args[0] if args else Any
        items = [build_value(item, v) for v in value]
        return origin(items) if origin in (set, frozenset, tuple) else items
    return value
