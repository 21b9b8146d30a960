"""Words of a text as a small model's helpers compare them: pure Python (no ``js``).

:mod:`~pysite_agent.models.local_match` ranks the page's tools by the visitor's words and
:mod:`~pysite_agent.models.local_grounding` offers the visitor's own words as argument values;
both read a text the same way, here:

- a **word** is a run of letters and digits (Unicode ``\\w`` without ``_``), compared after
  ``str.casefold()``; a tool's name is split at ``_``, ``-``, ``.`` and camelCase humps;
- a **stem** is the word with an English plural ending taken off (Harman's "S" stemmer:
  ``-ies`` -> ``-y``, ``-es`` -> ``-e``, ``-s`` -> nothing, with its exceptions; D. Harman, "How
  effective is suffixing?", JASIS 42(1), 1991; and ``-es`` after a sibilant, ``boxes`` ->
  ``box``); other languages' words are compared whole;
- two stems **match** when they are equal, or when one is the start of the other and the
  shorter has at least :data:`PREFIX_MIN` characters ("open" and "opening", "check" and
  "checkout", "order" and "ordered");
- :data:`STOP_WORDS` (English function words, greetings and courtesies) name nothing: they
  never match a tool, and a message made only of them asks for no tool.
"""

from __future__ import annotations

import re

__all__ = [
    "PREFIX_MIN",
    "STOP_WORDS",
    "content_stems",
    "stem",
    "stems_match",
    "words",
]

PREFIX_MIN = 4
"""The shortest stem that matches a longer one it starts (see the module docstring)."""

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any anything anyone are as at
    be been before being below between both but by can could did do does doing done down
    during each else ever every few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just let like me more most
    much my myself no nor not now of off on once only or other our ours ourselves out over
    own please same shall she should so some something someone such than that the their
    theirs them themselves then there these they this those through to too under until up
    us very was we were what when where which while who whom whose why will with would
    you your yours yourself yourselves i'd i'm i've i'll you're it's that's what's let's
    don't can't won't isn't there's
    hi hello hey hiya thanks thank thx cheers bye goodbye ok okay yes yeah yep no nope sure
    great good fine cool nice well right alright
    want wants need needs know think may might must one ones thing things way
    two three four five six seven eight nine ten eleven twelve dozen twenty thirty forty
    fifty sixty seventy eighty ninety hundred thousand couple pair few several
    same again more less other another both either neither
    """.split()
)
"""English words that name nothing a tool could act on (function words, greetings, thanks,
yes and no, number words, and the verbs of any wish: "want", "need"). A visitor's message made
only of these ("Hello! Who are you?", "Thanks, that is all.") asks for no tool."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words(text: str) -> list[str]:
    """The words of ``text``, casefolded, in order (a tool name's parts are words too:
    ``add_to_cart`` and ``addToCart`` both give ``add``, ``to``, ``cart``)."""
    text = _HUMP.sub(" ", text)
    return [w.casefold().replace("’", "'") for w in _WORD.findall(text)]


def stem(word: str) -> str:
    """``word`` without an English plural ending (Harman's S stemmer, and ``-es`` after a
    sibilant; see the module docstring): ``cakes`` -> ``cake``, ``berries`` -> ``berry``,
    ``boxes`` -> ``box``, ``dishes`` -> ``dish``, ``glass`` and ``bus`` unchanged."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("xes", "zes", "ches", "shes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def content_stems(text: str) -> list[str]:
    """The stems of ``text``'s words that are not :data:`STOP_WORDS`, in order, each once."""
    out: dict[str, None] = {}
    for word in words(text):
        if word not in STOP_WORDS and not word.isdigit():
            out.setdefault(stem(word), None)
    return list(out)


def stems_match(a: str, b: str) -> bool:
    """Whether two stems match: equal, or one starts the other and the shorter has at least
    :data:`PREFIX_MIN` characters."""
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= PREFIX_MIN and long.startswith(short)
