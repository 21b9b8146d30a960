"""The protocol v1 request check, built once.

The same published schema as :func:`pysite_agent.core.wire.problems` checks against
(``pysite_agent/schemas/protocol-v1.schema.json``, its ``request`` definition), with every local
``$ref`` replaced by the definition it names. ``jsonschema`` then no longer resolves a reference
for every message and tool of every request, which halves the check's time (the largest CPU
cost of a request in the proxy); the verdict and the problems reported are the same (a test
compares them).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from pysite_agent.core import wire

_LOCAL = "#/$defs/"


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


@cache
def request_validator() -> Validator:
    """A validator for protocol v1's ``request``, with the references inlined."""
    schema = wire.load_schema("protocol-v1")
    request = inline_refs(schema["$defs"]["request"], schema["$defs"])
    return jsonschema.Draft202012Validator({"$schema": schema["$schema"], **request})


def request_problems(value: Any) -> list[str]:
    """Problems of ``value`` as a protocol v1 request, as :func:`wire.problems` words them."""
    validator = request_validator()
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    out = []
    for error in errors[:8]:
        where = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where or '(root)'}: {error.message[:200]}")
    return out
