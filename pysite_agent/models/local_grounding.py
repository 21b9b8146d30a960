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
  :data:`MAX_SPAN_WORDS` words of a visitor's message or of a tool's result, inside one
  sentence, that neither starts nor ends with a
  :data:`~pysite_agent.models.local_words.STOP_WORDS` word ("linen tote bag", "Ursula Le
  Guin", "ana@example.com"); within the schema's ``minLength``/``maxLength``;
- an **integer** or **number** argument is one of the numbers said (:attr:`Said.numbers`:
  digits, and English number words: "two", "a dozen", "a" or "an" for 1), or the schema's
  ``default``, within its range;
- a **string enum** offers the values the conversation names (all their words were said,
  in any case: "Are you open on Sunday?" leaves ``"sunday"`` of seven days), or all of them
  when it names none.

Where the conversation holds no such value for an argument, the grammar allows any value of
its type, as without grounding. The site's instructions and the tool list are never a
source (the prompt's own words are what the model wrongly copies). The answer text is never
grounded. This makes the grammar **stricter than the tool's schema**, on purpose:
``local_model(..., ground_arguments=False)`` turns it off. Either way, the agent's gateway
validates the arguments against the tool's real schema and asks the visitor before anything
that changes data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysite_agent.models.local_words import STOP_WORDS, words

__all__ = [
    "MAX_ITEMS",
    "MAX_NUMBERS",
    "MAX_SPANS",
    "MAX_SPAN_WORDS",
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

NUMBER_WORDS: Mapping[str, int] = {
    "a": 1, "an": 1, "single": 1, "one": 1, "two": 2, "pair": 2, "couple": 2, "three": 3,
    "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "dozen": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100,
}  # fmt: skip
"""English number words read as numbers (one word each: "twenty" but not "twenty-two")."""

_TOKEN = re.compile(r"\S+")
_EDGE = "\"'“”‘’«»()[]{}<>.,;:!?¡¿…*_`"
_END = frozenset(".;:!?…")
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d{1,15}(?:\.\d{1,6})?(?![\w])")
_MAX_TEXT = 20_000


@dataclass(frozen=True)
class Said:
    """What the conversation holds to ground arguments in (:func:`said`).

    Attributes:
        spans: runs of the visitor's and the results' words (module docstring), most
            recent first, each once.
        numbers: the numbers said, ints where whole, most recent first, each once.
        words: every word said, casefolded (for string enums).
    """

    spans: tuple[str, ...] = ()
    numbers: tuple[int | float, ...] = ()
    words: frozenset[str] = frozenset()

    def enum_values(self, values: Sequence[Any]) -> list[Any]:
        """The string values of an ``enum`` whose words were all said (none: ``[]``)."""
        out = []
        for value in values:
            if isinstance(value, str):
                parts = words(value)
                if parts and all(p in self.words for p in parts):
                    out.append(value)
        return out

    def numbers_for(self, node: Mapping[str, Any], kind: str) -> list[int | float]:
        """The numbers said that an ``integer`` or ``number`` schema ``node`` accepts (its
        range and ``multipleOf``), with its ``default``; ``[]`` when none."""
        found: list[int | float] = list(self.numbers)
        default = _bound(node, "default")
        if default is not None and math.isfinite(default) and default not in found:
            found.append(default)
        out = []
        for n in found:
            if kind == "integer" and isinstance(n, float):
                if not n.is_integer():
                    continue
                n = int(n)
            if _in_range(node, n) and n not in out:
                out.append(n)
        return out

    def spans_for(self, node: Mapping[str, Any]) -> list[str]:
        """The spans a free-text ``string`` schema ``node`` accepts (its lengths)."""
        low = node.get("minLength")
        high = node.get("maxLength")
        out = []
        for span in self.spans:
            if isinstance(low, int) and not isinstance(low, bool) and len(span) < low:
                continue
            if isinstance(high, int) and not isinstance(high, bool) and len(span) > high:
                continue
            out.append(span)
        return out


def _bound(node: Mapping[str, Any], key: str) -> float | None:
    value = node.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def _in_range(node: Mapping[str, Any], n: int | float) -> bool:
    low, high = _bound(node, "minimum"), _bound(node, "maximum")
    above, below = _bound(node, "exclusiveMinimum"), _bound(node, "exclusiveMaximum")
    step = _bound(node, "multipleOf")
    try:
        if (low is not None and n < low) or (high is not None and n > high):
            return False
        if (above is not None and n <= above) or (below is not None and n >= below):
            return False
        if step is not None and step > 0 and not float(n / step).is_integer():
            return False
    except (OverflowError, ValueError, ZeroDivisionError):
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


def _spans(text: str, out: dict[str, None]) -> None:
    tokens: list[tuple[str, bool, bool] | None] = []  # (core, is stop word, ends a sentence)
    for match in _TOKEN.finditer(text):
        raw = match.group()
        core = raw.strip(_EDGE)
        if not core:
            tokens.append(None)
            continue
        tail = raw[raw.rfind(core) + len(core) :]
        tokens.append((core, _is_stop(core), any(c in _END for c in tail)))
    for i, first in enumerate(tokens):
        if first is None or first[1]:
            continue
        start = None
        for j in range(i, min(len(tokens), i + MAX_SPAN_WORDS)):
            token = tokens[j]
            if token is None:
                break
            start = first[0] if start is None else f"{start} {token[0]}"
            if not token[1]:
                out.setdefault(start, None)
                singular = _singular(start)
                if singular != start:
                    out.setdefault(singular, None)
                if len(out) >= MAX_SPANS:
                    return
            if token[2]:
                break


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
        raw = match.group().replace("−", "-")
        value = float(raw) if "." in raw else int(raw)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out.setdefault(value, None)
    for word in words(text):
        if word in NUMBER_WORDS:
            out.setdefault(NUMBER_WORDS[word], None)


def said(messages: Sequence[Mapping[str, Any]]) -> Said:
    """What the conversation's visitor messages and tool results hold (see :class:`Said`).
    Never raises for JSON data; lone surrogates and other odd text are kept as they are (the
    grammar spells them with JSON escapes)."""
    spans: dict[str, None] = {}
    numbers: dict[int | float, None] = {}
    seen: set[str] = set()
    for text in _sources(messages):
        if len(spans) < MAX_SPANS:
            _spans(text, spans)
        if len(numbers) < MAX_NUMBERS:
            _numbers(text, numbers)
        seen.update(words(text))
    return Said(tuple(spans)[:MAX_SPANS], tuple(numbers)[:MAX_NUMBERS], frozenset(seen))
