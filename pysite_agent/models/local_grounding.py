"""Grounded arguments: the values a small model may write are the ones the visitor gave.

Pure Python (no ``js``). A model of a hundred million parameters that is free to write any
string fills a tool's arguments with words from its prompt rather than the visitor's
(``"product": "<product name>"``, ``"query": "search_products"``), invents values (``"Milk"``)
or repeats itself until its token limit (measured with SmolLM2-135M: docs/local-model.md,
"Tool choice"), and it does not turn "two" into ``2``. It copies well. So, for the site's own
model, the reply's grammar (:mod:`pysite_agent.models.local_grammar`) offers the values the
conversation holds, gathered here by :func:`said`:

- a **free-text string** argument (a ``string`` with no ``enum``, ``const``, ``format`` or
  ``pattern``) is one of the conversation's :attr:`Said.spans`: a run of one to
  :data:`MAX_SPAN_WORDS` words (separated by white space) of a visitor's message or of a
  tool's result, inside one sentence and one line, that neither starts nor ends with a
  :data:`~pysite_agent.models.local_words.STOP_WORDS` word ("linen tote bag", "Ursula Le
  Guin", "ana@example.com"), its last word also singular ("mug" for "mugs"); or a dictated
  piece, whole: text in quotes, or after a colon ("send a note: the handle fell off"), up to
  :data:`MAX_PIECE_CHARS`; within the schema's ``minLength``/``maxLength``;
- an **integer** or **number** argument is one of the numbers said (:attr:`Said.numbers`:
  digits, with thousands separators, and English number words: "two", "twenty-two", "two
  hundred", "a dozen", "a" or "an" for 1) within its range; when none is, the schema's
  ``default`` if it has one;
- a **string enum** offers the values the conversation names (all their words were said,
  in any case: "Are you open on Sunday?" leaves ``"sunday"`` of seven days), or all of them
  when it names none (an enum with values that are not strings stays whole).

A span that starts with the first word of the called tool's name ("add" of ``add_to_cart``)
is not offered to that tool (:attr:`Said.verb`): it is the visitor's verb, not a value; unless
it was dictated, or every span that fits the argument does.

Where the conversation holds no such value for an argument, the grammar allows any value of
its type, as without grounding. Every visitor message shown and every result not denied is
a source, the latest first (an earlier message's value can be chosen again: the card shows
it); a result of a tool marked ``untrustedContentHint`` is one too (the agent asks the
visitor before every call after one, README's rule 5). The site's instructions and the tool
list are never a source (the prompt's own words are what the model wrongly copies). The
answer text is never grounded. A language written without spaces offers whole runs of text
between spaces and punctuation.

This makes the grammar **stricter than the tool's schema**, on purpose:
``local_model(..., ground_arguments=False)`` turns it off. Either way, the agent's gateway
validates the arguments against the tool's real schema and asks the visitor before anything
that changes data.
"""

from __future__ import annotations

import dataclasses
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysite_agent.models.local_words import STOP_WORDS, words

__all__ = [
    "MAX_ITEMS",
    "MAX_NUMBERS",
    "MAX_PIECE_CHARS",
    "MAX_SPANS",
    "MAX_SPAN_CHARS",
    "MAX_SPAN_WORDS",
    "MAX_TOKEN_CHARS",
    "NUMBER_WORDS",
    "Said",
    "said",
]

MAX_SPAN_WORDS = 6
"""The most words a grounded string holds (a name, a title, a short phrase)."""

MAX_SPANS = 256
"""The most distinct spans offered; the visitor's latest message is read first, then their
earlier messages and the tools' results, newest first."""

MAX_NUMBERS = 64
"""The most distinct numbers offered."""

MAX_ITEMS = 8
"""With grounding, an array argument whose schema sets no smaller ``maxItems`` holds at most
this many items (a small model otherwise repeats an item until its token limit)."""

MAX_SPAN_CHARS = 12_000
"""The most characters all spans hold together (the grammar grows with them)."""

MAX_PIECE_CHARS = 300
"""The longest dictated piece offered whole: text in quotes, or after a colon."""

MAX_TOKEN_CHARS = 200
"""A longer run without white space is not offered (nor are spans across it)."""

_UNITS: Mapping[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS: Mapping[str, int] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES: Mapping[str, int] = {"hundred": 100, "thousand": 1000, "dozen": 12}
_ALONE: Mapping[str, int] = {"a": 1, "an": 1, "single": 1, "pair": 2, "couple": 2, "dozen": 12}

NUMBER_WORDS: Mapping[str, int] = {**_UNITS, **_TENS, **_SCALES, **_ALONE}
"""English number words read as numbers; runs of them make one number ("twenty-two", "two
hundred and fifty", "a dozen")."""

_TOKEN = re.compile(r"\S+")
_EDGE = "\"'“”‘’«»()[]{}<>.,;:!?¡¿…*_`"
_END = frozenset(".;:!?…")
_QUOTED = re.compile(r"[\"“«]([^\"”»\n]{1,400})[\"”»]")
_NUMBER = re.compile(
    r"(?<![0-9A-Za-z.,])[-−]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,15})(?:\.[0-9]{1,15})?(?![0-9])"
)
_MAX_TEXT = 20_000


@dataclass(frozen=True)
class Said:
    """What the conversation holds to ground arguments in (:func:`said`).

    Attributes:
        spans: runs of the visitor's and the results' words (module docstring), most
            recent first, each once.
        numbers: the numbers said, ints where whole, most recent first, each once.
        words: every word said, casefolded (for string enums).
        pieces: the dictated spans (quoted, or after a colon), offered whole.
        verb: the first word of the called tool's name (:meth:`for_tool`): a span that starts
            with it is not offered ("add one tote bag" for ``add_to_cart``: the visitor's
            verb, not a value), unless dictated or every span fitting the argument does.
    """

    spans: tuple[str, ...] = ()
    numbers: tuple[int | float, ...] = ()
    words: frozenset[str] = frozenset()
    pieces: frozenset[str] = frozenset()
    verb: str | None = None

    def enum_values(self, values: Sequence[Any]) -> list[Any]:
        """The values of an all-string ``enum`` whose words were all said (none, or an enum
        with other values: ``[]``, meaning all of them)."""
        if not all(isinstance(value, str) for value in values):
            return []
        out = []
        for value in values:
            parts = words(value)
            if parts and all(p in self.words for p in parts):
                out.append(value)
        return out

    def numbers_for(self, node: Mapping[str, Any], kind: str) -> list[int | float]:
        """The numbers said that an ``integer`` or ``number`` schema ``node`` accepts (its
        range); when none is, its ``default`` alone if it has one; else ``[]`` (any)."""
        out: list[int | float] = []
        for n in self.numbers:
            if kind == "integer" and isinstance(n, float):
                if not n.is_integer():
                    continue
                n = int(n)
            if _in_range(node, n) and n not in out:
                out.append(n)
        default = _bound(node, "default")
        usable = default is not None and math.isfinite(default)
        if not out and usable and (kind == "number" or float(default or 0).is_integer()):
            out.append(int(default or 0) if kind == "integer" else (default or 0))
        return out

    def for_tool(self, name: Any) -> Said:
        """What a call of the tool ``name`` is grounded in: the same, with the first word of
        its name as :attr:`verb` (none when that is a stop word or ``name`` no string)."""
        parts = words(name) if isinstance(name, str) else []
        verb = parts[0] if parts and parts[0] not in STOP_WORDS else None
        return self if verb == self.verb else dataclasses.replace(self, verb=verb)

    def spans_for(self, node: Mapping[str, Any]) -> list[str]:
        """The spans a free-text ``string`` schema ``node`` accepts (its lengths), without
        those that start with :attr:`verb` unless dictated or all of them do."""
        low = node.get("minLength")
        high = node.get("maxLength")
        out = []
        for span in self.spans:
            if isinstance(low, int) and not isinstance(low, bool) and len(span) < low:
                continue
            if isinstance(high, int) and not isinstance(high, bool) and len(span) > high:
                continue
            out.append(span)
        if self.verb is not None:
            kept = [s for s in out if s in self.pieces or words(s)[:1] != [self.verb]]
            return kept or out
        return out


def _bound(node: Mapping[str, Any], key: str) -> float | None:
    value = node.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def _in_range(node: Mapping[str, Any], n: int | float) -> bool:
    low, high = _bound(node, "minimum"), _bound(node, "maximum")
    above, below = _bound(node, "exclusiveMinimum"), _bound(node, "exclusiveMaximum")
    try:
        if (low is not None and n < low) or (high is not None and n > high):
            return False
        if (above is not None and n <= above) or (below is not None and n >= below):
            return False
    except (OverflowError, ValueError):
        return False
    return True


def _sources(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts values come from: the visitor's messages (the latest first), then the tools'
    results, newest first."""
    visitor: list[str] = []
    results: list[str] = []
    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, str) or not content:
            continue
        if message.get("role") == "user":
            visitor.append(content[:_MAX_TEXT])
        elif message.get("role") == "tool" and not message.get("denied"):
            results.append(content[:_MAX_TEXT])
    return visitor + results


def _is_stop(token: str) -> bool:
    parts = words(token)
    return not parts or all(p in STOP_WORDS for p in parts)


def _trim(raw: str) -> str:
    """``raw`` without the punctuation, white space and invisible format characters at its
    edges."""

    def edge(ch: str) -> bool:
        return ch in _EDGE or ch.isspace() or unicodedata.category(ch) == "Cf"

    start, end = 0, len(raw)
    while start < end and edge(raw[start]):
        start += 1
    while end > start and edge(raw[end - 1]):
        end -= 1
    return raw[start:end]


def _add(
    out: dict[str, None], span: str, budget: list[int], pieces: set[str] | None = None
) -> bool:
    """Add ``span`` (and its singular; to ``pieces`` too when given, as dictated text);
    ``False`` once :data:`MAX_SPANS` or the characters of :data:`MAX_SPAN_CHARS` are used
    up."""
    if pieces is not None:
        pieces.add(span)
    for value in dict.fromkeys((span, _singular(span))):
        if value not in out:
            if len(out) >= MAX_SPANS or budget[0] < len(value):
                return False
            out[value] = None
            budget[0] -= len(value)
    return True


def _spans(text: str, out: dict[str, None], budget: list[int], pieces: set[str]) -> None:
    for line in text.splitlines():
        if not _line_spans(line, out, budget, pieces):
            return


def _line_spans(line: str, out: dict[str, None], budget: list[int], pieces: set[str]) -> bool:
    # Dictated text first: in quotes, or after a colon, as written (up to MAX_PIECE_CHARS).
    for match in _QUOTED.finditer(line):
        piece = _trim(match.group(1))
        if piece and len(piece) <= MAX_PIECE_CHARS and not _add(out, piece, budget, pieces):
            return False
    head, colon, rest = line.partition(":")
    piece = _trim(rest.split(" — ")[0]) if colon and head.strip() else ""
    if piece and len(piece) <= MAX_PIECE_CHARS and not _add(out, piece, budget, pieces):
        return False
    tokens: list[tuple[str, bool, bool] | None] = []  # (core, is stop word, ends a sentence)
    for match in _TOKEN.finditer(line):
        raw = match.group()
        core = _trim(raw)
        if not core or len(core) > MAX_TOKEN_CHARS:
            tokens.append(None)
            continue
        tail = raw[raw.rfind(core) + len(core) :]
        tokens.append((core, _is_stop(core), any(c in _END for c in tail)))
    for i, first in enumerate(tokens):
        if first is None or first[1]:
            continue
        span = None
        for j in range(i, min(len(tokens), i + MAX_SPAN_WORDS)):
            token = tokens[j]
            if token is None:
                break
            span = first[0] if span is None else f"{span} {token[0]}"
            if not token[1] and not _add(out, span, budget):
                return False
            if token[2]:
                break
    return True


def _singular(span: str) -> str:
    """``span`` with an English plural last word made singular ("tote bags" -> "tote bag",
    "berries" -> "berry", "boxes" -> "box"); unchanged when it has none (or is short)."""
    head, _, last = span.rpartition(" ")
    low = last.lower()
    if len(low) < 4 or not low.replace("-", "").isalpha() or low.endswith(("ss", "us", "is")):
        return span
    if low.endswith("ies"):
        one = last[:-3] + ("Y" if last[-3:].isupper() else "y")
    elif low.endswith(("xes", "zes", "ches", "shes", "sses")):
        one = last[:-2]
    elif low.endswith("s"):
        one = last[:-1]
    else:
        return span
    return f"{head} {one}" if head else one


def _numbers(text: str, out: dict[int | float, None]) -> None:
    for match in _NUMBER.finditer(text):
        raw = match.group().replace("−", "-").replace(",", "")
        value: int | float = float(raw) if "." in raw else int(raw)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out.setdefault(value, None)
    for value in _word_numbers(words(text)):
        out.setdefault(value, None)


def _word_numbers(said_words: Sequence[str]) -> list[int]:
    """The numbers English number words make: "twenty-two" 22, "two hundred and fifty" 250,
    "a dozen" 12, "three" 3, and "a"/"an" 1 (one number per run of number words)."""
    found: list[int] = []
    total = current = 0
    last = ""  # the kind of the run's last word: "unit", "tens", "scale" or ""
    for i, word in enumerate(said_words):
        following = said_words[i + 1] if i + 1 < len(said_words) else ""
        kind = ""
        if word in _UNITS and not (last == "unit" or (last == "tens" and _UNITS[word] >= 10)):
            current += _UNITS[word]
            kind = "unit"
        elif word in _TENS and last in ("", "scale"):
            current += _TENS[word]
            kind = "tens"
        elif word in _SCALES and last:
            current = max(current, 1) * _SCALES[word]
            if word == "thousand":
                total, current = total + current, 0
            kind = "scale"
        elif word in ("a", "an") and not last and following in _SCALES:
            current, kind = 1, "unit"
        elif word == "and" and last == "scale" and (following in _UNITS or following in _TENS):
            continue
        if kind:
            last = kind
            continue
        if last:
            found.append(total + current)
            total = current = 0
            last = ""
        if word in _UNITS or word in _TENS:  # a number word that ended the run starts one
            current = _UNITS.get(word, 0) + _TENS.get(word, 0)
            last = "unit" if word in _UNITS else "tens"
        elif word in _ALONE:
            found.append(_ALONE[word])
    if last:
        found.append(total + current)
    return found


def said(messages: Sequence[Mapping[str, Any]]) -> Said:
    """What the conversation's visitor messages and tool results hold (see :class:`Said`).
    Never raises for JSON data; lone surrogates and other odd text are kept as they are (the
    grammar spells them with JSON escapes)."""
    spans: dict[str, None] = {}
    numbers: dict[int | float, None] = {}
    seen: set[str] = set()
    pieces: set[str] = set()
    budget = [MAX_SPAN_CHARS]
    for text in _sources(messages):
        if len(spans) < MAX_SPANS:
            _spans(text, spans, budget, pieces)
        if len(numbers) < MAX_NUMBERS:
            _numbers(text, numbers)
        seen.update(words(text))
    kept = tuple(spans)[:MAX_SPANS]
    dictated = frozenset(p for p in pieces if p in spans)
    return Said(kept, tuple(numbers)[:MAX_NUMBERS], frozenset(seen), dictated)
