"""Which of the page's tools the visitor's words name: a shortlist for a small model.

Pure Python (no ``js``). A model of a hundred million parameters picks a tool mostly by its
place in the list (measured with SmolLM2-135M: the first listed tool for nearly every request,
docs/local-model.md, "Tool choice"). It reads the visitor's words well enough to fill a tool's
arguments, not to choose among tools. So the site's own model is given a shortlist, as agents
with many tools retrieve the relevant ones before the model chooses: the tools whose words the
visitor used (:func:`shortlist`). The prompt still lists every tool (it is the same prefix on
every step, which llama.cpp reuses); the shortlist narrows what the reply's grammar allows, and
an answer is always allowed.

**Scores.** A tool's words are its name, title and description, and its arguments' names,
titles, descriptions and string ``enum`` values (:func:`tool_stems`). Each content word of the
visitor's latest message (:func:`~pysite_agent.models.local_words.content_stems`) that matches
one of a tool's words (:func:`~pysite_agent.models.local_words.stems_match`) adds its inverse
document frequency over the listed tools, ``log(1 + n / df)`` (a word that every tool has
weighs least; K. Spärck Jones, "A statistical interpretation of term specificity", 1972).

**The shortlist** (:func:`shortlist`): the tools scoring at least :data:`NEAR_BEST` of the best
score; every tool when no tool scores (the model chooses as before); no tool at all when the
message has no content words ("Hello! Who are you?", "Thanks, that is all.": an answer). A
message with no content words that replies to a question the model asked ("How many?" "3",
"Shall I add it?" "yes") is read as the visitor's latest message that has some. In every
case the tools that already ran for this message, or that the visitor denied for it, are
left out ("add a mug and then check out": after the mug, the checkout; after "add two mugs"
ran or was denied, an answer): a small model otherwise proposes the same action again.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.models.local_words import PREFIX_MIN, content_stems, stem, words

__all__ = [
    "NEAR_BEST",
    "Shortlist",
    "shortlist",
    "tool_scores",
    "tool_stems",
]

NEAR_BEST = 0.75
"""A tool stays on the shortlist when its score is at least this share of the best one (so
two tools the message names about equally both stay, for the model to choose)."""

_MAX_TEXT = 4000
"""Characters of a tool's texts (or of the message) read; the rest adds nothing a short
message could match."""

_MAX_WORDS = 200
"""Content words of a message scored."""


def _texts(schema: Any, depth: int = 0) -> list[str]:
    """Argument names, titles, descriptions and string enum values of an input schema."""
    out: list[str] = []
    if not isinstance(schema, Mapping) or depth > 4:
        return out
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in props.items():
            out.append(str(key))
            out.extend(_texts(sub, depth + 1))
    for key in ("title", "description"):
        if isinstance(schema.get(key), str):
            out.append(schema[key])
    enum = schema.get("enum")
    if isinstance(enum, list):
        out.extend(v for v in enum if isinstance(v, str))
    items = schema.get("items")
    if isinstance(items, Mapping):
        out.extend(_texts(items, depth + 1))
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                out.extend(_texts(branch, depth + 1))
    return out


def tool_stems(tool: Mapping[str, Any]) -> frozenset[str]:
    """The stems of a tool's words: its name, title, description, and its arguments' names,
    titles, descriptions and string enum values (``$ref`` targets are not followed)."""
    parts = [str(tool.get(k) or "") for k in ("name", "title", "description")]
    parts += _texts(tool.get("inputSchema"))
    text = " ".join(parts)[:_MAX_TEXT]
    return frozenset(stem(w) for w in words(text))


def tool_scores(message: str, tools: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each listed tool's score for ``message`` (module docstring), by tool name; 0.0 for a
    tool none of the message's content words match. Each word is looked up in an index of the
    tools' stems (exact, then the stems it starts or that start it), so many long tools cost
    little more than a few."""
    names = [str(t.get("name", "")) for t in tools]
    index: dict[str, set[int]] = {}
    for i, tool in enumerate(tools):
        for own in tool_stems(tool):
            index.setdefault(own, set()).add(i)
    ordered = sorted(index)
    scores = dict.fromkeys(names, 0.0)
    for word in content_stems(message[:_MAX_TEXT])[:_MAX_WORDS]:
        having: set[int] = set(index.get(word, ()))
        if len(word) >= PREFIX_MIN:  # tool stems it starts ("check" -> "checkout")
            at = bisect.bisect_left(ordered, word)
            while at < len(ordered) and ordered[at].startswith(word):
                having |= index[ordered[at]]
                at += 1
        for end in range(PREFIX_MIN, len(word)):  # tool stems that start it ("open" <- "opening")
            having |= index.get(word[:end], set())
        if having:
            weight = math.log(1 + len(tools) / len(having))
            for i in having:
                scores[names[i]] += weight
    return scores


class Shortlist:
    """What :func:`shortlist` decided.

    Attributes:
        names: the tools the reply may call, in the page's order (empty: an answer only).
        reason: ``"matched"`` (the visitor's words name these tools), ``"no-match"`` (no
            tool's words were used: every tool), ``"no-content"`` (no content words: an
            answer only) or ``"no-message"`` (no visitor message: every tool); in each, less
            the tools that ran or were denied since the visitor's latest message.
        scores: each tool's score (:func:`tool_scores`).
    """

    def __init__(self, names: list[str], reason: str, scores: dict[str, float]) -> None:
        self.names = names
        self.reason = reason
        self.scores = scores

    def __repr__(self) -> str:
        return f"Shortlist({self.names!r}, {self.reason!r})"


def shortlist(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> Shortlist:
    """The tools the visitor's latest message names (see the module docstring).

    Args:
        messages: the conversation (protocol v1's message shapes).
        tools: the page's tools ``{name, title?, description?, inputSchema?}``.

    Returns:
        A :class:`Shortlist`. Never raises for JSON data.
    """
    names = [str(t.get("name", "")) for t in tools]
    settled = _settled_since_visitor(messages)
    open_names = [name for name in names if name not in settled]
    message = _request_text(messages)
    if message is None:
        return Shortlist(open_names, "no-message", {})
    if not content_stems(message[:_MAX_TEXT]):
        return Shortlist([], "no-content", {})
    scores = tool_scores(message, tools)
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return Shortlist(open_names, "no-match", scores)
    kept = [name for name in open_names if scores.get(name, 0.0) >= NEAR_BEST * best]
    return Shortlist(kept, "matched", scores)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _request_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The visitor's latest message; when it has no content words and answers a question the
    model asked just before it, the latest earlier visitor message that has some."""
    visitor = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not visitor:
        return None
    latest = _text(messages[visitor[-1]])
    if content_stems(latest[:_MAX_TEXT]) or not _answers_a_question(messages, visitor[-1]):
        return latest
    for i in reversed(visitor[:-1]):
        earlier = _text(messages[i])
        if content_stems(earlier[:_MAX_TEXT]):
            return earlier
    return latest


def _answers_a_question(messages: Sequence[Mapping[str, Any]], at: int) -> bool:
    """Whether the message before ``at`` is the model's answer, and it asked something."""
    if at == 0:
        return False
    before = messages[at - 1]
    return before.get("role") == "assistant" and "?" in _text(before)


def _settled_since_visitor(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tools that ran without error, or that the visitor denied, since the visitor's
    latest message."""
    settled: set[str] = set()
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        if message.get("role") == "tool" and (message.get("denied") or not message.get("isError")):
            settled.add(str(message.get("name", "")))
    return settled
