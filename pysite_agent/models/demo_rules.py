"""``demo_rules()``: a keyword-matching stand-in for a model. Not AI, and its name says so.

For a visitor's message it picks the tool whose name and description share the most words with
the message (words are lower-cased, split at non-letters, ``camelCase`` and ``snake_case``; a
plural ``s`` is dropped; small words such as "the", "to", "my" do not count). Multi-word actions
count as one word ("check out", ``check_out`` and ``checkout`` alike; "sign up", "sign in" or
"log in", "sign out" or "log out"), and common synonyms as the same word ("find"/"look" and
"search", "register" and "sign up", "login" and "sign in", "pay"/"purchase" and "check out",
"basket" and "cart", "put" and "add", "delete" and "remove", "rating" and "review"; see
:data:`COMPOUNDS` and :data:`SYNONYMS`). Read-only tools win ties, then the alphabetically first.
A message with steps in order ("add a mug, then check out", "... and then ...", "...; ...") is
taken one step at a time: after each result the next step is routed, until a step is denied or
fails. It fills the arguments from the message by the schema's
property types:

- ``integer``/``number``: numbers in the message, as digits or words ("two", "a dozen"), in the
  order the properties appear; a required one that the message does not give gets its ``default``,
  else its ``minimum``, else 1;
- enums (``enum`` of strings, on a string property): a value named in the message;
- ``boolean``: ``true`` when the property's own name is in the message, if required;
- the first required ``string`` without an enum: the message's remaining words (those that did
  not match the tool, and are not numbers or small words), or the whole message if none remain.

When no tool shares a word with the message it answers in plain words with what the page offers.
After a tool result it answers with that result (or says that the call was denied or failed).
A result marked ``untrusted`` (from a tool with ``untrustedContentHint``, such as reviews) is
never passed off as the site's or the assistant's own words: the answer says where it came from,
``get_reviews returned text from outside the site (not checked): "…"``, and quotes at most
``MAX_UNTRUSTED_CHARS`` characters of it, on one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pysite_agent.core.types import ModelRequest

DEMO_RULES_NAME = "demo rules (not AI)"

STOPWORDS = frozenset(
    """a an the to my me our your of for in on at and or please i you it its this that these
    those with is are be was were what which can could would will do does some any from by all
    into onto up out about as if so than then there here let lets want need like just also
    we us he she they them their his her have has had""".split()
)

FILLERS = frozenset("find show get search look list tell give see check".split())
"""Verbs that pick a tool but never become an argument's text."""

NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "dozen": 12,
    "couple": 2,
    "pair": 2,
}

COMPOUNDS: dict[tuple[str, str], str] = {
    ("check", "out"): "checkout",
    ("sign", "up"): "signup",
    ("sign", "in"): "signin",
    ("log", "in"): "signin",
    ("log", "on"): "signin",
    ("sign", "out"): "signout",
    ("log", "out"): "signout",
    ("log", "off"): "signout",
}
"""Two-word actions read as one word (in messages, tool names and descriptions)."""

SYNONYMS: dict[str, str] = {
    "login": "signin",
    "logon": "signin",
    "logout": "signout",
    "logoff": "signout",
    "register": "signup",
    "registration": "signup",
    "enroll": "signup",
    "enrol": "signup",
    "pay": "checkout",
    "purchase": "checkout",
    "find": "search",
    "look": "search",
    "lookup": "search",
    "browse": "search",
    "basket": "cart",
    "put": "add",
    "delete": "remove",
    "rating": "review",
}
"""Common words for the same action, mapped to one word (after the plural ``s`` is dropped)."""

_OBJECTS = frozenset("me us it them him her".split())
_STEPS = re.compile(r"\s*(?:;|,?\s+and\s+then\b|,\s*then\b|\bthen\b)\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]+|\d+(?:\.\d+)?")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
MAX_ANSWER_CHARS = 600
MAX_UNTRUSTED_CHARS = 160
UNTRUSTED_PREFIX = "{name} returned text from outside the site (not checked): "


def _norm(word: str) -> str:
    w = word.lower()
    if len(w) > 3 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _canon(word: str) -> str:
    return SYNONYMS.get(word, word)


def words(text: str) -> list[str]:
    """The normalized content words of ``text`` (see the module docstring)."""
    text = _CAMEL.sub(r"\1 \2", text)
    tokens = _WORD.findall(text.replace("_", " "))
    out: list[str] = []
    i = 0
    while i < len(tokens):
        pair = (tokens[i].lower(), tokens[i + 1].lower()) if i + 1 < len(tokens) else None
        if pair in COMPOUNDS:
            out.append(COMPOUNDS[pair])
            i += 2
            continue
        if i + 2 < len(tokens) and tokens[i + 1].lower() in _OBJECTS:  # "log me out"
            split = (tokens[i].lower(), tokens[i + 2].lower())
            if split in COMPOUNDS:
                out.append(COMPOUNDS[split])
                i += 3
                continue
        w = tokens[i]
        i += 1
        if w.lower() not in STOPWORDS and (len(w) > 1 or w.isdigit()):
            out.append(_canon(_norm(w)))
    return out


def steps(text: str) -> list[str]:
    """``text`` split into the steps a visitor asked for in order ("..., then ...")."""
    return [part for part in _STEPS.split(text) if part.strip()] or [text]


def _numbers(text: str) -> list[float]:
    out: list[float] = []
    for token in _WORD.findall(text):
        low = token.lower()
        if low in NUMBER_WORDS:
            out.append(float(NUMBER_WORDS[low]))
        elif token[0].isdigit():
            out.append(float(token))
    return out


def _is_read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


class DemoRules:
    """The demo-rules model (see the module docstring). Its ``name`` is fixed."""

    @property
    def name(self) -> str:
        return DEMO_RULES_NAME

    async def availability(self) -> str:
        return "available"

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        messages = list(request.messages)
        last = messages[-1] if messages else {"role": "user", "content": ""}
        if last.get("role") == "tool":
            following = self._next_step(messages, last)
            if following is not None:
                reply = self._route(following, request.tools)
                if reply["type"] == "tool":
                    return reply
            return {"type": "answer", "text": self._after_result(last)}
        text = str(last.get("content", ""))
        return self._route(steps(text)[0], request.tools)

    def _next_step(
        self, messages: Sequence[Mapping[str, Any]], last: Mapping[str, Any]
    ) -> str | None:
        """The visitor's next step after ``last`` (a result), or ``None`` when it was the last
        one, or when the call was denied or failed (the visitor hears about it first)."""
        if last.get("denied") or last.get("isError"):
            return None
        done = 0
        for message in reversed(messages):
            if message.get("role") == "user":
                asked = steps(str(message.get("content", "")))
                return asked[done] if done < len(asked) else None
            if message.get("role") == "tool":
                done += 1
        return None

    def _after_result(self, result: Mapping[str, Any]) -> str:
        name = result.get("name", "the tool")
        content = str(result.get("content", ""))
        content = re.sub(r"</?untrusted-data[^>]*>", "", content).strip()
        if len(content) > MAX_ANSWER_CHARS:
            content = content[:MAX_ANSWER_CHARS] + "…"
        if result.get("denied"):
            return f"I did not run {name}: it was not allowed."
        if result.get("untrusted") is True:
            quoted = " ".join(content.split())
            if len(quoted) > MAX_UNTRUSTED_CHARS:
                quoted = quoted[:MAX_UNTRUSTED_CHARS].rstrip() + "…"
            failed = " (it reported an error)" if result.get("isError") else ""
            return UNTRUSTED_PREFIX.format(name=name) + f'"{quoted}"{failed}'
        if result.get("isError"):
            return f"{name} did not work: {content}"
        return f"{name}: {content}"

    def _route(self, text: str, tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        message_words = set(words(text))
        best: tuple[int, int, str] | None = None
        chosen: Mapping[str, Any] | None = None
        for tool in tools:
            name = str(tool.get("name", ""))
            tool_words = set(words(name)) | set(words(str(tool.get("description", ""))))
            score = len(message_words & tool_words)
            if score == 0:
                continue
            read_only = _is_read_only(tool)
            rank = (score, 1 if read_only else 0, name)
            if (
                best is None
                or (rank[0], rank[1]) > (best[0], best[1])
                or ((rank[0], rank[1]) == (best[0], best[1]) and name < best[2])
            ):
                best, chosen = rank, tool
        if chosen is None:
            return {"type": "answer", "text": self._no_tool(tools)}
        return {
            "type": "tool",
            "name": chosen["name"],
            "arguments": self._arguments(text, chosen),
        }

    def _no_tool(self, tools: Sequence[Mapping[str, Any]]) -> str:
        if not tools:
            return "This page has no tools I can use, so I can't do that here."
        offers = "; ".join(
            str(t.get("title") or t.get("name"))
            + (f" ({t['description']})" if t.get("description") else "")
            for t in tools[:8]
        )
        return f"I can't match that to anything this page offers. It offers: {offers}."

    def _arguments(self, text: str, tool: Mapping[str, Any]) -> dict[str, Any]:
        schema = tool.get("inputSchema")
        props: Mapping[str, Any] = {}
        required: list[str] = []
        if isinstance(schema, Mapping):
            if isinstance(schema.get("properties"), Mapping):
                props = schema["properties"]
            if isinstance(schema.get("required"), list):
                required = [r for r in schema["required"] if isinstance(r, str)]
        numbers = _numbers(text)
        lowered = text.lower()
        tool_words = set(words(str(tool.get("name", "")))) | set(
            words(str(tool.get("description", "")))
        )
        args: dict[str, Any] = {}
        used: set[str] = set()
        string_key: str | None = None
        for key, spec in props.items():
            if not isinstance(spec, Mapping):
                continue
            kind = spec.get("type")
            enum = spec.get("enum")
            if isinstance(enum, list) and enum:
                for value in enum:
                    if isinstance(value, str) and re.search(
                        r"\b" + re.escape(value.lower()) + r"\b", lowered
                    ):
                        args[key] = value
                        used.update(words(value))
                        break
                continue
            if kind in ("integer", "number"):
                if numbers:
                    value = numbers.pop(0)
                    args[key] = int(value) if kind == "integer" else value
                elif key in required:
                    fallback = spec.get("default", spec.get("minimum", 1))
                    args[key] = int(fallback) if kind == "integer" else fallback
            elif kind == "boolean":
                if key in required:
                    args[key] = bool(set(words(key)) & set(words(text)))
            elif kind == "string" and key in required and string_key is None:
                string_key = key
        if string_key is not None:
            rest = [
                token
                for token in _WORD.findall(text)
                if token.lower() not in STOPWORDS
                and token.lower() not in NUMBER_WORDS
                and token.lower() not in FILLERS
                and len(token) > 1
                and not token[0].isdigit()
                and _canon(_norm(token)) not in tool_words
                and _canon(_norm(token)) not in used
            ]
            if rest:  # nothing left to name it: no guess (the call is invalid, never a card)
                args[string_key] = " ".join(rest)
        return args


def demo_rules() -> DemoRules:
    """The demo-rules model: keyword matching over tool names and descriptions, not AI.

    Its ``name`` is ``"demo rules (not AI)"`` and cannot be changed, so a page can never present
    it as a real model.
    """
    return DemoRules()
