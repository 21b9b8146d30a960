"""A reply schema written as a GBNF grammar with no optional white space, for llama.cpp.

Pure Python (no ``js``), checked by mypy in strict mode. llama.cpp's own schema converter
(``json-schema-to-grammar``, what ``response_format`` uses) lets the model write white space
between any two tokens of the JSON (a ``space`` rule of up to two line breaks and 20 blanks),
and a small model does: every such token is one more decoding step on a CPU. The grammar here
allows exactly one spelling per structure, the compact one (``{"tool":"NAME","arguments":{...}}``),
so the model writes only what carries meaning. llama.cpp reads it from the request's ``grammar``
field (``grammars/README.md``, "GBNF Guide"; the server takes ``grammar`` or a schema, not both).

The grammar is never stricter than the schema: every value the schema accepts can be written,
in its compact spelling (:func:`compact_json`), with an object's keys in the grammar's order (a
schema's required properties in the order of ``properties``, then the optional ones, then any
others). Where a keyword is not translated the grammar is looser than the schema, never
tighter:

- translated: ``type`` (one or a list), ``properties``, ``required``, ``additionalProperties``
  (``false``, a schema, or anything), ``items``, ``enum``, ``const``, ``anyOf`` on its own,
  ``minItems``/``maxItems`` up to :data:`MAX_REPEAT`, and the ``format`` values of
  :data:`FORMATS` (read as assertions, as llama.cpp's own converter reads them);
- left to the schema (any value of the type is allowed): ``anyOf``/``allOf`` beside other
  keywords, ``prefixItems``, string lengths, ranges, other formats and ``pattern``; below
  :data:`MAX_DEPTH` levels, any JSON value.

With what the conversation said (:class:`~pysite_agent.models.local_grounding.Said`), a
tool's arguments are **grounded**: free-text strings, numbers and string enums offer what was
said (that module's docstring), and the grammar is then stricter than the schema, on purpose.

The arguments are validated against the tool's real ``inputSchema`` by the agent's gateway
before anything runs, so what the grammar lets through and the schema does not is refused
there (the model sees why), never run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.models.local_grounding import MAX_ITEMS, Said

__all__ = [
    "FORMATS",
    "MAX_DEPTH",
    "MAX_REPEAT",
    "PRIMITIVES",
    "compact_json",
    "literal",
    "reply_grammar",
]

MAX_DEPTH = 24
"""Schema levels translated; deeper parts of a schema allow any JSON value."""

MAX_REPEAT = 32
"""``minItems``/``maxItems`` up to this are written as a bounded repetition (llama.cpp's
``{m,n}``, which it expands into rules); a larger bound is left to the schema."""

PRIMITIVES: dict[str, str] = {
    "value": "object | array | string | number | boolean | null",
    "object": '"{" ( string ":" value ( "," string ":" value )* )? "}"',
    "array": '"[" ( value ( "," value )* )? "]"',
    "string": '"\\"" char* "\\""',
    "char": '[^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} )',
    "integer": '"-"? ( "0" | [1-9] [0-9]* )',
    "number": 'integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?',
    "boolean": '"true" | "false"',
    "null": '"null"',
}
"""JSON's value rules (RFC 8259, sections 2-7) without white space: a string's characters are
any but ``"``, ``\\`` and U+0000-U+001F, or an escape; an integer has as many digits as it
needs (llama.cpp's own converter allows 16, fewer than a valid 2**64 has)."""

FORMATS: dict[str, str] = {
    "date": 'year "-" month "-" day',
    "time": 'hour ":" minute ( ":" second ( "." [0-9]+ )? )? offset?',
    "date-time": 'year "-" month "-" day [Tt ] hour ":" minute ( ":" second ( "." [0-9]+ )? )? '
    "offset?",
    "uuid": '[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" '
    "[0-9a-fA-F]{12}",
}
"""String ``format`` values written as a grammar (those llama.cpp's own converter writes):
RFC 3339's ``full-date``, a time (seconds, fraction and offset optional, so every RFC 3339
``full-time`` can be written), both joined by ``T``, and RFC 9562's UUID. Other formats are
left to the gateway."""

_FORMAT_PARTS = {
    "year": "[0-9]{4}",
    "month": '"0" [1-9] | "1" [0-2]',
    "day": '"0" [1-9] | [12] [0-9] | "3" [01]',
    "hour": '[01] [0-9] | "2" [0-3]',
    "minute": "[0-5] [0-9]",
    "second": '[0-5] [0-9] | "60"',
    "offset": '[Zz] | [+-] hour ":" minute',
}
_DATE = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_TIME = (
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9](?::(?:[0-5][0-9]|60)(?:\.[0-9]+)?)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
)
_FORMAT_RE = {
    "date": re.compile(_DATE),
    "time": re.compile(_TIME),
    "date-time": re.compile(_DATE + "[Tt ]" + _TIME),
    "uuid": re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"),
}
"""Each of :data:`FORMATS` as a Python expression (``fullmatch``): which spans said can be
offered for it (grounded arguments)."""

_USES = {
    "value": ("object", "array", "string", "number", "boolean", "null"),
    "object": ("string", "value"),
    "array": ("value",),
    "string": ("char",),
    "number": ("integer",),
}
_SHAPES = {
    "object": ("properties", "required", "additionalProperties"),
    "array": ("items", "prefixItems"),
}
_TYPES = frozenset(("object", "array", "string", "number", "integer", "boolean", "null"))


def literal(text: str) -> str:
    """``text`` as a GBNF string literal: ``"``, ``\\`` and every character outside printable
    ASCII escaped (``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH``), so the grammar text is ASCII."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02X}")
        elif code < 0x10000:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    return '"' + "".join(out) + '"'


def compact_json(value: Any) -> str:
    """``value`` (JSON data) in the spelling the grammar writes a ``const`` or ``enum`` value
    in, and allows for every value: no white space, ``json.dumps``'s numbers and escapes, each
    string as it is, or with JSON's ``\\uXXXX`` escapes where it holds a lone surrogate
    (UTF-8, what the model writes, cannot hold one).

    Raises:
        ValueError: for NaN or an infinity; TypeError: for a value that is not JSON data.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value)
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        pairs = (compact_json(str(k)) + ":" + compact_json(v) for k, v in value.items())
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    return json.dumps(value, allow_nan=False)


def _integral(value: Any) -> Any:
    """``value`` with every float that is a whole number as an int (``0.0`` -> ``0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_integral(v) for v in value]
    return value


class _Writer:
    def __init__(self, said: Said | None = None) -> None:
        self.rules: dict[str, str] = {}
        self._named: dict[str, str] = {}
        self._used: set[str] = set()
        self._said = said
        self._grounding = False  # inside a tool's arguments, with something said

    def use(self, name: str) -> str:
        if name not in self._used:
            self._used.add(name)
            for other in _USES.get(name, ()):
                self.use(other)
        return name

    def name(self, body: str) -> str:
        """A rule for ``body`` (one per distinct body)."""
        if body not in self._named:
            self._named[body] = f"r{len(self._named) + 1}"
            self.rules[self._named[body]] = body
        return self._named[body]

    def text(self) -> str:
        lines = [f"root ::= {self.rules.pop('root')}"]
        lines += [f"{k} ::= {v}" for k, v in self.rules.items()]
        lines += [f"{k} ::= {PRIMITIVES[k]}" for k in PRIMITIVES if k in self._used]
        return "\n".join(lines) + "\n"

    # -- schema to rule -----------------------------------------------------------------

    def schema(self, node: Any, depth: int) -> str:
        """A rule expression allowing at least every value ``node`` accepts."""
        if not isinstance(node, Mapping) or depth > MAX_DEPTH:
            return self.use("value")  # true, false (nothing: looser), or too deep
        if "const" in node:
            return self._literal_value(node["const"])
        enum = node.get("enum")
        if isinstance(enum, list) and enum:
            if self._grounding and self._said is not None:
                enum = self._said.enum_values(enum) or enum
            choices = [self._literal_value(v) for v in enum]
            return self.name(" | ".join(dict.fromkeys(choices)))
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k in _TYPES]
            if not kinds or len(kinds) != len(kind):
                return self.use("value")
            return self.name(" | ".join(self._typed(node, k, depth) for k in dict.fromkeys(kinds)))
        if isinstance(kind, str):
            return self._typed(node, kind, depth) if kind in _TYPES else self.use("value")
        shaped = [kind for kind, keys in _SHAPES.items() if any(k in node for k in keys)]
        if shaped:  # without a type these keywords apply to their type only: others are valid
            others = [self.use(k) for k in ("string", "number", "boolean", "null")]
            own = [self._typed(node, k, depth) if k in shaped else self.use(k) for k in _SHAPES]
            return self.name(" | ".join(own + others))
        branches = node.get("anyOf")
        if isinstance(branches, list) and branches:
            return self.name(" | ".join(self.schema(b, depth + 1) for b in branches))
        parts = node.get("allOf")
        if isinstance(parts, list) and len(parts) == 1:
            return self.schema(parts[0], depth + 1)
        return self.use("value")

    def _literal_value(self, value: Any) -> str:
        try:
            spellings = dict.fromkeys([compact_json(value), compact_json(_integral(value))])
        except (TypeError, ValueError, RecursionError):  # not JSON data, or nested too deeply
            return self.use("value")
        if len(spellings) == 1:
            return literal(next(iter(spellings)))
        # JSON Schema compares numbers by value (0.0 equals 0): both spellings are allowed.
        return "( " + " | ".join(literal(text) for text in spellings) + " )"

    def _typed(self, node: Mapping[str, Any], kind: str, depth: int) -> str:
        if kind == "object":
            return self._object(node, depth)
        if kind == "array":
            return self._array(node, depth)
        said = self._said if self._grounding else None
        if said is not None and kind in ("integer", "number"):
            numbers = said.numbers_for(node, kind)
            if numbers:
                return self.name(" | ".join(literal(compact_json(n)) for n in numbers))
        fmt = node.get("format") if kind == "string" else None
        if isinstance(fmt, str) and fmt in FORMATS:
            spans = said.spans_for(node) if said is not None else []
            shaped = [s for s in spans if _FORMAT_RE[fmt].fullmatch(s)]
            if shaped:  # the dates (times, ids) said, else any of that shape
                return self._spans(shaped)
            for part in ("year", "month", "day", "hour", "minute", "second", "offset"):
                if part in FORMATS[fmt]:
                    self.rules.setdefault(part, _FORMAT_PARTS[part])
            if "offset" in FORMATS[fmt]:
                self.rules.setdefault("hour", _FORMAT_PARTS["hour"])
                self.rules.setdefault("minute", _FORMAT_PARTS["minute"])
            return self.name(f'"\\"" {FORMATS[fmt]} "\\""')
        if said is not None and kind == "string" and fmt is None and "pattern" not in node:
            spans = said.spans_for(node)
            if spans:
                return self._spans(spans)
        if kind == "number":
            return self.use("number")
        return self.use(kind)

    def _array(self, node: Mapping[str, Any], depth: int) -> str:
        items = node.get("items")
        if "prefixItems" in node or items is None or items is True:
            return self.use("array")
        item = self.schema(items, depth + 1) if items is not False else None
        if item is None:
            return '"[]"'
        low = _count(node.get("minItems")) or 0
        high = _count(node.get("maxItems"))
        if self._grounding and (high is None or high > MAX_ITEMS):
            high = max(low, MAX_ITEMS)
        if low > MAX_REPEAT or (high is not None and (high > MAX_REPEAT or high < low)):
            low, high = 0, None  # left to the schema (and the gateway)
        if high == 0:
            return '"[]"'
        more = f'( "," {item} )' + ("*" if high is None else f"{{{max(0, low - 1)},{high - 1}}}")
        if low >= 1:
            return self.name(f'"[" {item} {more} "]"')
        return self.name(f'"[" ( {item} {more} )? "]"')

    def _spans(self, spans: Sequence[str]) -> str:
        """A string rule allowing exactly ``spans`` (each in its compact JSON spelling),
        written as a trie so that the engine follows one branch per shared start."""
        trie: dict[str, Any] = {}
        for span in spans:
            node = trie
            for ch in compact_json(span)[1:-1]:
                node = node.setdefault(ch, {})
            node[""] = {}
        body = self._trie(trie)
        return self.name(f'"\\"" {body} "\\""' if body else '"\\"\\""')

    def _trie(self, node: Mapping[str, Any]) -> str:
        branches = []
        for ch in sorted(k for k in node if k):
            label, child = ch, node[ch]
            while len(child) == 1 and "" not in child:  # one way on: one literal
                ((key, child),) = child.items()
                label += key
            rest = self._trie(child) if any(child) else ""
            branches.append(f"{literal(label)} {rest}".strip())
        if not branches:
            return ""
        rule = self.name(" | ".join(branches))
        return f"{rule}?" if "" in node else rule

    def _object(self, node: Mapping[str, Any], depth: int) -> str:
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = node.get("required")
        required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        extra_schema = node.get("additionalProperties", True)
        if not props and not required and extra_schema is True:
            return self.use("object")
        extra = None
        if extra_schema is not False:
            extra = self.name(f'{self.use("string")} ":" {self.schema(extra_schema, depth + 1)}')

        def pair(key: str) -> str:
            value = props.get(key, extra_schema)
            ground = depth <= 1 and key == "arguments" and "tool" in props and self._said
            before, self._grounding = self._grounding, bool(ground) or self._grounding
            said = self._said
            if ground and said is not None and isinstance(props["tool"], Mapping):
                self._said = said.for_tool(props["tool"].get("const"))
            try:
                value_rule = (
                    self.schema(value, depth + 1) if value is not False else self.use("value")
                )
            finally:
                self._grounding, self._said = before, said
            return self.name(f"{literal(compact_json(key) + ':')} {value_rule}")

        must = [k for k in props if k in required] + [k for k in required if k not in props]
        may = [k for k in props if k not in required]
        must_rules = [pair(k) for k in dict.fromkeys(must)]
        may_rules = [pair(str(k)) for k in may]
        tail = f' ( "," {extra} )*' if extra else ""
        if must_rules:
            body = ' "," '.join(must_rules)
            body += "".join(f' ( "," {r} )?' for r in may_rules) + tail
            return self.name(f'"{{" {body} "}}"')
        # Nothing required: the first pair written has no comma before it.
        starts = []
        for i, first in enumerate(may_rules):
            rest = "".join(f' ( "," {r} )?' for r in may_rules[i + 1 :])
            starts.append(f"{first}{rest}{tail}")
        if extra:
            starts.append(f'{extra} ( "," {extra} )*')
        if not starts:
            return '"{}"'
        return self.name(f'"{{" ( {" | ".join(starts)} )? "}}"')


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def reply_grammar(schema: Mapping[str, Any], said: Said | None = None) -> str:
    """``schema`` (a reply schema, :func:`pysite_agent.models.local_schema.reply_schema`: an
    ``anyOf`` of object branches) as GBNF text whose ``root`` rule allows each value the schema
    accepts in its compact JSON spelling, and nothing with white space outside strings. The
    text is ASCII, one rule per line, the same for the same schema (so a prompt cache and a
    test can compare it). Never raises for JSON data; see the module docstring for what is
    translated."""
    writer = _Writer(said if said is not None and (said.spans or said.numbers) else None)
    writer.rules["root"] = writer.schema(schema, 0)
    return writer.text()
