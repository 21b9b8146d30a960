"""Argument validation with full JSON Schema (the ``jsonschema`` library).

The dialect is the schema's ``$schema`` when it names one, else draft 2020-12. Booleans are not
integers (JSON Schema's own rule, which ``jsonschema`` follows). ``$ref`` resolves only inside
the schema itself: nothing is ever fetched (a remote ``$ref`` makes the schema invalid, and so
does a local one that points nowhere). README, safety rule 1: a call with
arguments that fail the check is not run; the model receives the problems and may correct itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pysite_agent.core.types import canonical_json

if TYPE_CHECKING:
    import referencing
    from jsonschema.protocols import Validator

# jsonschema (with referencing, attrs and rpds) is imported on the first check, not with this
# module: it is 60 % of the agent's imports in Pyodide (about 0.3 s), and a start needs no
# check before its first tool call (docs/performance.md). Pages start it on idle beforehand
# (web/runtime/boot.js's laterImports).

MAX_PROBLEMS = 8
"""At most this many problems are reported to the model for one call."""

MAX_PROBLEM_CHARS = 300
"""Each problem's message is cut to this many characters."""

MAX_ARGUMENT_DEPTH = 32
"""Arguments nesting objects/arrays deeper than this are refused as an invalid call, checked
without recursion before anything else reads them (a deep recursion raises ``RecursionError``
on CPython and overflows the JavaScript stack in Pyodide)."""

MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: a larger integer reaches a JS tool rounded (JSON
numbers are IEEE 754 doubles there; RFC 8259, section 6), so the argument check refuses it."""


class NotJsonData(ValueError):
    """Text or a value that is not strict JSON data: ``NaN``/``Infinity`` (RFC 8259 has no
    such numbers), nesting beyond a limit, or not JSON at all. ``str()`` says which."""


def _no_constant(name: str) -> Any:
    raise NotJsonData(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def text_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON ``text`` (brackets inside strings do not
    count). Linear, without recursion; for text that is not JSON the count is a bound."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads_strict(text: str, *, max_depth: int = MAX_ARGUMENT_DEPTH) -> Any:
    """Parse JSON ``text`` as strict JSON data (RFC 8259).

    The nesting is measured first (:func:`text_depth`), so deep text never reaches the
    recursive parser.

    Raises:
        NotJsonData: for ``NaN``, ``Infinity`` or ``-Infinity`` (Python's ``json`` accepts them,
            JSON does not), for nesting deeper than ``max_depth``, and for text that is not
            JSON (the message names the position).
    """
    if text.count("[") + text.count("{") > max_depth and text_depth(text) > max_depth:
        raise NotJsonData(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except NotJsonData:
        raise
    except RecursionError:
        raise NotJsonData(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise NotJsonData(f"not JSON: {exc}") from None


def data_problems(value: Any, *, max_depth: int = MAX_ARGUMENT_DEPTH) -> list[Problem]:
    """What keeps ``value`` from being strict JSON data a JavaScript tool receives exactly.

    Walks ``value`` without recursion and reports, with the JSON pointer of each: nesting deeper
    than ``max_depth`` (reported once, the walk stops there), ``NaN``/``Infinity``, integers
    beyond :data:`MAX_SAFE_INTEGER` in magnitude, and values that are not JSON data (an object's
    non-string key, a set, a function...). ``[]`` when ``value`` is fine. At most
    :data:`MAX_PROBLEMS` problems.
    """
    found: list[Problem] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack and len(found) < MAX_PROBLEMS:
        item, path = stack.pop()
        if isinstance(item, dict | list) and len(path) >= max_depth:
            found.append(Problem(_pointer(path), f"nested deeper than {max_depth} levels"))
            break
        if isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str):
                    found.append(Problem(_pointer(path), f"a key that is not a string: {key!r}"))
                stack.append((member, (*path, key)))
        elif isinstance(item, list):
            stack.extend((member, (*path, i)) for i, member in enumerate(item))
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                found.append(
                    Problem(
                        _pointer(path),
                        f"{item} is beyond 2^53 and would reach the tool rounded; send it as "
                        "a string if the schema allows one",
                    )
                )
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                name = "NaN" if item != item else ("Infinity" if item > 0 else "-Infinity")
                message = f"{name} is not a JSON number (JSON has no NaN or Infinity)"
                found.append(Problem(_pointer(path), message))
        else:
            found.append(Problem(_pointer(path), f"{type(item).__name__} is not JSON data"))
    return found


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem: ``path`` is a JSON pointer into the arguments ("" = the root)."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class InvalidSchemaError(Exception):
    """The tool's ``inputSchema`` is not a valid JSON Schema: the tool cannot be called."""


@dataclass(frozen=True, slots=True)
class ArgumentCheck:
    """Outcome of :func:`check_arguments`: the arguments as a dict, or the problems."""

    arguments: dict[str, Any] | None
    problems: tuple[Problem, ...]
    total_problems: int = 0

    @property
    def ok(self) -> bool:
        return self.arguments is not None and not self.problems


def _no_retrieval(uri: str) -> referencing.Resource[Any]:
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_registries: list[referencing.Registry[Any]] = []


def _registry() -> referencing.Registry[Any]:
    """An empty registry that never retrieves: jsonschema's default one would fetch remote
    ``$ref``s (made once, on first use)."""
    if not _registries:
        import referencing

        _registries.append(referencing.Registry(retrieve=_no_retrieval))  # type: ignore[call-arg]
    return _registries[0]


def _unresolvable() -> type[Exception]:
    import referencing.exceptions

    return referencing.exceptions.Unresolvable


_cache: dict[str, Validator] = {}
_CACHE_MAX = 256


def validator_for(schema: Mapping[str, Any]) -> Validator:
    """A (cached) validator for ``schema``.

    Raises:
        InvalidSchemaError: when ``schema`` is not a JSON object or not a valid schema for its
            dialect.
    """
    if not isinstance(schema, Mapping):
        raise InvalidSchemaError("inputSchema must be a JSON object")
    key = canonical_json(schema)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    plain = json.loads(key)
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(plain, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(plain)
    except SchemaError as exc:
        raise InvalidSchemaError(f"inputSchema is not a valid JSON Schema: {exc.message}") from None
    validator: Validator = cls(plain, registry=_registry())
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[key] = validator
    return validator


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "".join("/" + p for p in parts)


def coerce_arguments(raw: Any) -> dict[str, Any] | None:
    """The model's ``arguments`` as a dict, or ``None`` when they are not a JSON object.

    A JSON *string* that parses to an object is accepted (some models send arguments that way).
    An empty string (or only white space) means no arguments, ``{}``: some OpenAI-compatible
    servers send ``arguments: ""`` for a tool without parameters. Any other value (``None``, a
    number, a list, a string that is not strict JSON (:func:`loads_strict`: no ``NaN``, no
    nesting beyond :data:`MAX_ARGUMENT_DEPTH`) or not an object) is not an object.
    """
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = loads_strict(raw)
        except NotJsonData:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def check_arguments(schema: Mapping[str, Any] | None, raw: Any) -> ArgumentCheck:
    """Check the model's ``raw`` arguments against ``schema`` (``None``: any object passes).

    Before the schema, the arguments must be strict JSON data (:func:`data_problems`): no
    ``NaN``/``Infinity`` (in a JSON string too, :func:`loads_strict`), no nesting beyond
    :data:`MAX_ARGUMENT_DEPTH`, no integer beyond 2^53. Strings are never converted to numbers
    (``"5"`` fails ``{"type": "number"}``). Returns an :class:`ArgumentCheck` with at most
    :data:`MAX_PROBLEMS` problems, each message cut to :data:`MAX_PROBLEM_CHARS` characters.

    Raises:
        InvalidSchemaError: when the schema itself is invalid.
    """
    args = coerce_arguments(raw)
    if args is None:
        kind = "null" if raw is None else type(raw).__name__
        if isinstance(raw, str):
            kind = "a string that is not a JSON object"
            try:
                loads_strict(raw)
            except NotJsonData as exc:
                if not str(exc).startswith("not JSON"):
                    message = f"arguments are not JSON data: {exc}"
                    return ArgumentCheck(None, (Problem("", _cut(message)),), 1)
        return ArgumentCheck(
            None, (Problem("", f"arguments must be a JSON object, got {kind}"),), 1
        )
    not_data = data_problems(args)
    if not_data:
        return ArgumentCheck(None, tuple(not_data), len(not_data))
    if schema is None:
        return ArgumentCheck(args, (), 0)
    validator = validator_for(schema)
    try:
        errors = sorted(
            validator.iter_errors(args), key=lambda e: (list(e.absolute_path), e.message)
        )
    except _unresolvable() as exc:
        raise InvalidSchemaError(f"inputSchema has a $ref that cannot be resolved: {exc}") from None
    except RecursionError:
        raise InvalidSchemaError("inputSchema refers to itself without end") from None
    if not errors:
        return ArgumentCheck(args, (), 0)
    problems = tuple(
        Problem(_pointer(e.absolute_path), _cut(e.message)) for e in errors[:MAX_PROBLEMS]
    )
    return ArgumentCheck(args, problems, len(errors))


def _cut(message: str) -> str:
    if len(message) <= MAX_PROBLEM_CHARS:
        return message
    return message[: MAX_PROBLEM_CHARS - 1] + "…"


def check_output(schema: Mapping[str, Any], value: Any) -> tuple[Problem, ...]:
    """Check a tool's result against its ``outputSchema`` (WebMCP, spec PR #254).

    ``value`` is what the tool source returned: an MCP result whose ``structuredContent`` is
    checked when present, a string that is checked as the JSON it holds (or as the string when
    it is not JSON), or plain data. Returns the problems (empty when the result fits), at most
    :data:`MAX_PROBLEMS`; a schema that is itself invalid gives one problem saying so. Never
    raises.
    """
    subject = value
    if isinstance(value, Mapping) and "structuredContent" in value:
        subject = value["structuredContent"]
    elif isinstance(value, str):
        try:
            subject = json.loads(value)
        except ValueError:
            subject = value
    try:
        validator = validator_for(schema)
        errors = sorted(
            validator.iter_errors(subject), key=lambda e: (list(e.absolute_path), e.message)
        )
    except InvalidSchemaError as exc:
        reason = str(exc).replace("inputSchema", "outputSchema")
        return (Problem("", _cut(f"the tool's outputSchema cannot be used: {reason}")),)
    except (_unresolvable(), RecursionError) as exc:
        return (Problem("", _cut(f"the tool's outputSchema cannot be used: {exc}")),)
    return tuple(Problem(_pointer(e.absolute_path), _cut(e.message)) for e in errors[:MAX_PROBLEMS])
