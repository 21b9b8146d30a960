"""A GBNF reader and matcher for tests: does a llama.cpp grammar allow a given text?

It reads what llama.cpp's grammar parser reads (``grammars/README.md``): rules ``name ::=
expr``, string literals and character classes with ``\\x``, ``\\u``, ``\\U`` and one-character
escapes, groups, ``|``, and the repetitions ``?``, ``*``, ``+``, ``{m}``, ``{m,}``, ``{m,n}``.
Matching follows every alternative at once (the sets of end positions), as llama.cpp's stacks
do, so an ambiguous grammar is read as the engine reads it. Left recursion is not supported
(llama.cpp refuses it too).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<rule>[a-zA-Z0-9-]+)\s*::= |
      (?P<ref>[a-zA-Z0-9-]+) |
      (?P<lit>"(?:[^"\\]|\\.)*") |
      (?P<cls>\[(?:[^\]\\]|\\.)*\]) |
      (?P<rep>\{\d+(?:,\d*)?\}) |
      (?P<op>[()|?*+])
    )""",
    re.X,
)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
_HEX = {"x": 2, "u": 4, "U": 8}


class GrammarError(ValueError):
    """The text is not a grammar this reader (and llama.cpp) accepts."""


def _chars(body: str) -> list[str]:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        kind = body[i + 1 : i + 2]
        if kind in _HEX:
            digits = body[i + 2 : i + 2 + _HEX[kind]]
            if len(digits) != _HEX[kind] or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise GrammarError(f"bad escape in {body!r}")
            out.append(chr(int(digits, 16)))
            i += 2 + _HEX[kind]
        elif kind in _ESCAPES:
            out.append(_ESCAPES[kind])
            i += 2
        else:
            raise GrammarError(f"unknown escape \\{kind} in {body!r}")
    return out


def parse(text: str) -> dict[str, Any]:
    """The rules of ``text``: ``{name: node}``. Raises GrammarError."""
    rules: dict[str, Any] = {}
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        match = _TOKEN.match(text, pos)
        if match is None:
            raise GrammarError(f"cannot read {text[pos : pos + 30]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    i = 0

    def alternatives() -> Any:
        nonlocal i
        seqs = [sequence()]
        while i < len(tokens) and tokens[i] == ("op", "|"):
            i += 1
            seqs.append(sequence())
        return ("alt", seqs)

    def sequence() -> Any:
        nonlocal i
        items = []
        while (
            i < len(tokens)
            and tokens[i][0] != "rule"
            and tokens[i]
            not in (
                ("op", "|"),
                ("op", ")"),
            )
        ):
            kind, value = tokens[i]
            i += 1
            if kind == "lit":
                item: Any = ("lit", "".join(_chars(value[1:-1])))
            elif kind == "cls":
                item = _char_class(value[1:-1])
            elif kind == "ref":
                item = ("ref", value)
            elif value == "(":
                item = alternatives()
                if i >= len(tokens) or tokens[i] != ("op", ")"):
                    raise GrammarError("unclosed group")
                i += 1
            else:
                raise GrammarError(f"unexpected {value!r}")
            while i < len(tokens) and (tokens[i][0] == "rep" or tokens[i][1] in "?*+"):
                op = tokens[i][1]
                i += 1
                low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}.get(op, (0, 0))
                if op.startswith("{"):
                    a, _, b = op[1:-1].partition(",")
                    low = int(a)
                    high = low if "," not in op else (int(b) if b else None)
                item = ("rep", item, low, high)
            items.append(item)
        return ("seq", items)

    while i < len(tokens):
        kind, value = tokens[i]
        if kind != "rule":
            raise GrammarError(f"expected a rule, got {value!r}")
        name = value.split(":")[0].strip()
        i += 1
        rules[name] = alternatives()
    missing = {r for node in rules.values() for r in _refs(node)} - set(rules)
    if missing or "root" not in rules:
        raise GrammarError(f"undefined rules: {sorted(missing) or ['root']}")
    return rules


def _char_class(body: str) -> Any:
    negate = body.startswith("^")
    chars = _chars(body[1:] if negate else body)
    ranges = []
    k = 0
    while k < len(chars):
        if k + 2 < len(chars) and chars[k + 1] == "-":
            ranges.append((chars[k], chars[k + 2]))
            k += 3
        else:
            ranges.append((chars[k], chars[k]))
            k += 1
    return ("cls", negate, tuple(ranges))


def _refs(node: Any) -> list[str]:
    kind = node[0]
    if kind == "ref":
        return [node[1]]
    if kind in ("alt", "seq"):
        return [r for child in node[1] for r in _refs(child)]
    if kind == "rep":
        return _refs(node[1])
    return []


@cache
def _parsed(grammar: str) -> dict[str, Any]:
    return parse(grammar)


def allows(grammar: str, text: str) -> bool:
    """True when ``grammar``'s ``root`` matches the whole of ``text``.

    Recursion goes through plain Python calls only (no ``functools.cache`` wrapper, no
    generator consumed by a C function), so a deeply nested value does not grow the C stack:
    Pyodide's is small, and it overflows as a JavaScript ``RangeError`` rather than a
    ``RecursionError``.
    """
    rules = _parsed(grammar)
    memo: dict[tuple[str, int], frozenset[int]] = {}

    def rule_ends(name: str, pos: int) -> frozenset[int]:
        key = (name, pos)
        found = memo.get(key)
        if found is None:
            found = memo[key] = ends(rules[name], pos)
        return found

    def ends_from(node: Any, starts: frozenset[int]) -> frozenset[int]:
        out: set[int] = set()
        for p in starts:
            out.update(ends(node, p))
        return frozenset(out)

    def ends(node: Any, pos: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset({pos + len(node[1])}) if text.startswith(node[1], pos) else frozenset()
        if kind == "cls":
            if pos >= len(text):
                return frozenset()
            char = text[pos]
            inside = False
            for a, b in node[2]:
                if a <= char <= b:
                    inside = True
                    break
            return frozenset({pos + 1}) if inside != node[1] else frozenset()
        if kind == "ref":
            return rule_ends(node[1], pos)
        if kind == "alt":
            out: set[int] = set()
            for seq in node[1]:
                out.update(ends(seq, pos))
            return frozenset(out)
        if kind == "seq":
            current = frozenset({pos})
            for item in node[1]:
                current = ends_from(item, current)
                if not current:
                    break
            return current
        _, item, low, high = node
        result = frozenset({pos}) if low == 0 else frozenset()
        current, count, seen = frozenset({pos}), 0, {pos}
        while current and (high is None or count < high):
            current = ends_from(item, current)
            count += 1
            if high is None and count >= low:  # unbounded: each end once, so it stops
                current = current - seen
                seen |= current
            if count >= low:
                result |= current
        return result

    return len(text) in rule_ends("root", 0)
