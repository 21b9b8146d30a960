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
    number, a list, a string that is not a JSON object) is not an object.
    """
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def check_arguments(schema: Mapping[str, Any] | None, raw: Any) -> ArgumentCheck:
    """Check the model's ``raw`` arguments against ``schema`` (``None``: any object passes).

    Returns an :class:`ArgumentCheck` with at most :data:`MAX_PROBLEMS` problems, each message
    cut to :data:`MAX_PROBLEM_CHARS` characters.

    Raises:
        InvalidSchemaError: when the schema itself is invalid.
    """
    args = coerce_arguments(raw)
    if args is None:
        kind = "null" if raw is None else type(raw).__name__
        if isinstance(raw, str):
            kind = "a string that is not a JSON object"
        return ArgumentCheck(
            None, (Problem("", f"arguments must be a JSON object, got {kind}"),), 1
        )
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
