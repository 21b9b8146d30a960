"""The protocol v1 request check, built once from the published schema.

Two validators come from the same schema (``pysite_agent/schemas/protocol-v1.schema.json``,
its ``request`` definition):

- a fast one: msgspec types built from the schema (:func:`compile_type`), checked with
  ``msgspec.convert`` (about 0.03 ms for a 40-message request with 10 tools, against 4-11 ms
  for ``jsonschema``; ``benchmarks/request_check.py`` has the numbers and the alternatives
  measured);
- ``jsonschema`` on the schema with its local references inlined (:func:`inline_refs`), which
  words the problems exactly as :func:`pysite_agent.core.wire.problems` does.

A request the fast validator accepts is valid. Only a request it refuses goes to ``jsonschema``,
whose problems are returned (so a refused request is reported word for word as before, and a
request the fast validator is stricter about, such as ``"version": 1.0``, is still accepted).
Tests check both validators' verdicts against the full schema.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Final, Literal

import jsonschema
import msgspec
from jsonschema.protocols import Validator

from pysite_agent.core import wire

_LOCAL = "#/$defs/"
# Keywords that only describe: they never change a verdict.
_NOTES: Final = frozenset({"description", "title", "$comment", "examples"})


def inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``{"$ref": "#/$defs/NAME"}`` replaced by that definition.

    A ``$ref`` with sibling keywords becomes ``allOf`` (both apply, as in draft 2020-12).

    Raises:
        ValueError: for a reference that is not local, names no definition, or is recursive
            (such a schema must keep its ``$ref``).
    """
    if isinstance(node, list):
        return [inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: inline_refs(v, defs, seen) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if ref is None:
        return out
    name = ref[len(_LOCAL) :] if isinstance(ref, str) and ref.startswith(_LOCAL) else None
    if name is None or name not in defs or "/" in name:
        raise ValueError(f"cannot inline the reference {ref!r}")
    if name in seen:
        raise ValueError(f"the reference {ref!r} is recursive")
    target = inline_refs(defs[name], defs, (*seen, name))
    return {"allOf": [target], **out} if out else target


def _request_schema() -> dict[str, Any]:
    schema = wire.load_schema("protocol-v1")
    request: dict[str, Any] = inline_refs(schema["$defs"]["request"], schema["$defs"])
    return request


@cache
def request_validator() -> Validator:
    """A ``jsonschema`` validator for protocol v1's ``request``, with the references inlined."""
    schema = wire.load_schema("protocol-v1")
    return jsonschema.Draft202012Validator({"$schema": schema["$schema"], **_request_schema()})


# The fast validator: msgspec types from the schema.


class Unsupported(ValueError):
    """The schema uses a keyword or a shape :func:`compile_type` does not translate."""


def compile_type(schema: Any, name: str = "Request") -> Any:
    """A msgspec type that accepts no value the JSON Schema ``schema`` refuses.

    ``schema`` must have no ``$ref`` (see :func:`inline_refs`) and use only what protocol v1
    uses, each with draft 2020-12's meaning:

    - ``true``: any value;
    - ``{"type": "string", "minLength"?, "maxLength"?, "pattern"?}`` (``pattern`` searched
      with Python's ``re``, as msgspec and ``jsonschema`` do), ``{"type": "boolean"}``;
    - ``{"const": STRING | INT}`` (an integer const also refuses ``1.0``, which the schema
      accepts: stricter, never looser);
    - ``{"type": "array", "items", "minItems"?}``;
    - ``{"type": "object"}`` alone (any object), or with ``properties``, ``required`` and
      ``"additionalProperties": false`` (a struct that refuses unknown fields; a property not
      in ``required`` may be absent but never ``null`` unless its schema allows it);
    - ``{"oneOf": [objects]}`` where every branch requires one property with a string
      ``const`` (the tag). Branches that share a tag become one struct whose fields are
      optional, with a check that exactly one of the branches matches the fields present.

    Descriptive keywords (``description``, ``title``) are ignored.

    Raises:
        Unsupported: for anything else (a new keyword in the schema must be translated here,
            or the schema's author learns at once that it is not).
    """
    return _Compiler().type_of(schema, name)


class _Compiler:
    def __init__(self) -> None:
        self._names: set[str] = set()

    def _name(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self._names:
            name, n = f"{wanted}{n}", n + 1
        self._names.add(name)
        return name

    def type_of(self, node: Any, name: str) -> Any:
        if node is True:
            return Any
        if not isinstance(node, dict):
            raise Unsupported(f"{name}: a schema must be an object or true")
        keys = set(node) - _NOTES
        if keys == {"oneOf"}:
            return self._one_of(node["oneOf"], name)
        if keys == {"const"}:
            value = node["const"]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise Unsupported(f"{name}: only string and integer consts are translated")
            return Literal[value]
        kind = node.get("type")
        if kind == "string" and keys <= {"type", "minLength", "maxLength", "pattern"}:
            meta = msgspec.Meta(
                min_length=node.get("minLength"),
                max_length=node.get("maxLength"),
                pattern=node.get("pattern"),
            )
            return Annotated[str, meta]
        if kind == "boolean" and keys == {"type"}:
            return bool
        if kind == "array" and keys <= {"type", "items", "minItems"} and "items" in keys:
            item = self.type_of(node["items"], f"{name}Item")
            return Annotated[list[item], msgspec.Meta(min_length=node.get("minItems"))]  # type: ignore[valid-type]
        if kind == "object" and keys == {"type"}:
            return dict[str, Any]
        if kind == "object" and node.get("additionalProperties") is False:
            return self._struct(node, name)
        raise Unsupported(f"{name}: cannot translate the keywords {sorted(keys)}")

    def _fields(self, node: dict[str, Any], name: str) -> tuple[dict[str, Any], set[str]]:
        keys = set(node) - _NOTES
        if not keys <= {"type", "properties", "required", "additionalProperties"}:
            raise Unsupported(f"{name}: cannot translate the keywords {sorted(keys)}")
        properties: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", []))
        for field_name in properties:
            if not field_name.isidentifier() or keyword.iskeyword(field_name):
                raise Unsupported(f"{name}: the property {field_name!r} is not an identifier")
        if not required <= set(properties):
            raise Unsupported(f"{name}: a required property is not among the properties")
        types = {k: self.type_of(v, f"{name}{k[:1].upper()}{k[1:]}") for k, v in properties.items()}
        return types, required

    def _struct(self, node: dict[str, Any], name: str, **options: Any) -> Any:
        types, required = self._fields(node, name)
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
            (k, t) for k, t in types.items() if k in required
        ]
        fields += [
            (k, t | msgspec.UnsetType, msgspec.UNSET) for k, t in types.items() if k not in required
        ]
        return msgspec.defstruct(
            self._name(name), fields, kw_only=True, forbid_unknown_fields=True, **options
        )

    def _one_of(self, branches: Any, name: str) -> Any:
        if not isinstance(branches, list) or not branches:
            raise Unsupported(f"{name}: oneOf needs a list of schemas")
        tag_field = _tag_field(branches, name)
        groups: dict[str, list[dict[str, Any]]] = {}
        for branch in branches:
            groups.setdefault(branch["properties"][tag_field]["const"], []).append(branch)
        members = []
        for tag, group in groups.items():
            struct_name = f"{name}{tag[:1].upper()}{tag[1:]}"
            options = {"tag_field": tag_field, "tag": tag}
            if len(group) == 1:
                members.append(self._struct(_without(group[0], tag_field), struct_name, **options))
            else:
                members.append(self._merged(group, tag_field, struct_name, options))
        return members[0] if len(members) == 1 else _union(members)

    def _merged(
        self, group: list[dict[str, Any]], tag_field: str, name: str, options: dict[str, Any]
    ) -> Any:
        """One struct for branches that share a tag: every field optional, plus a check that
        exactly one branch's ``required`` and ``properties`` fit the fields present."""
        shapes: list[tuple[frozenset[str], frozenset[str]]] = []
        properties: dict[str, Any] = {}
        for branch in group:
            branch = _without(branch, tag_field)
            for k, v in branch.get("properties", {}).items():
                if k in properties and properties[k] != v:
                    raise Unsupported(f"{name}: branches give {k!r} different schemas")
                properties[k] = v
            shapes.append(
                (frozenset(branch.get("required", [])), frozenset(branch.get("properties", {})))
            )
        merged = {"type": "object", "properties": properties, "additionalProperties": False}
        types, _ = self._fields(merged, name)
        fields = [(k, t | msgspec.UnsetType, msgspec.UNSET) for k, t in types.items()]
        field_names = tuple(types)

        def __post_init__(self: Any) -> None:
            present = {k for k in field_names if getattr(self, k) is not msgspec.UNSET}
            matches = sum(1 for req, props in shapes if req <= present <= props)
            if matches != 1:
                raise ValueError("matches no branch, or more than one")

        return msgspec.defstruct(
            self._name(name),
            fields,
            kw_only=True,
            forbid_unknown_fields=True,
            namespace={"__post_init__": __post_init__},
            **options,
        )


def _union(members: list[Any]) -> Any:
    union = members[0]
    for member in members[1:]:
        union = union | member
    return union


def _without(branch: dict[str, Any], tag_field: str) -> dict[str, Any]:
    return {
        **branch,
        "properties": {k: v for k, v in branch["properties"].items() if k != tag_field},
        "required": [k for k in branch.get("required", []) if k != tag_field],
    }


def _tag_field(branches: list[Any], name: str) -> str:
    """The property every branch requires with a string ``const`` (one per branch)."""
    candidates: set[str] | None = None
    for branch in branches:
        if not isinstance(branch, dict) or branch.get("type") != "object":
            raise Unsupported(f"{name}: oneOf branches must be objects")
        if branch.get("additionalProperties") is not False:
            raise Unsupported(f"{name}: oneOf branches must refuse additional properties")
        properties = branch.get("properties", {})
        tagged = {
            k
            for k in branch.get("required", [])
            if isinstance(properties.get(k), dict)
            and set(properties[k]) - _NOTES == {"const"}
            and isinstance(properties[k]["const"], str)
        }
        candidates = tagged if candidates is None else candidates & tagged
    if not candidates:
        raise Unsupported(f"{name}: the oneOf branches share no required string const (a tag)")
    return sorted(candidates)[0]


@cache
def request_type() -> Any:
    """The msgspec type built from protocol v1's ``request`` (see :func:`compile_type`)."""
    return compile_type(_request_schema())


@cache
def fast_check() -> Callable[[Any], bool]:
    """``(value) -> bool``: True when the fast validator accepts ``value`` (built once)."""
    kind = request_type()

    def check(value: Any) -> bool:
        try:
            msgspec.convert(value, kind)
        except msgspec.ValidationError:
            return False
        return True

    return check


def request_problems(value: Any) -> list[str]:
    """Problems of ``value`` (parsed JSON) as a protocol v1 request, as :func:`wire.problems`
    words them; ``[]`` when it is valid. At most 8, each at most 200 characters after its
    place (``messages/3: ...``)."""
    if fast_check()(value):
        return []
    errors = sorted(request_validator().iter_errors(value), key=lambda e: list(e.absolute_path))
    out = []
    for error in errors[:8]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where or '(root)'}: {error.message[:200]}")
    return out
