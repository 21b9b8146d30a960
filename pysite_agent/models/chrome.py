"""``chrome_built_in()``: Chrome's on-device model through the Prompt API (``LanguageModel``).

The only module that touches ``LanguageModel`` (design, "Layers"); every JS crossing goes through
:mod:`pysite_agent.ffi`, and ``language_model=`` takes any object with the same methods
(tests pass a fake that follows the documented API). The tool-use shape is Chrome's, behind the
flag ``prompt-api-tool-use``, as Google's public demo uses it
(https://github.com/GoogleChromeLabs/web-ai-demos, ``prompt-api-tool-use``).

How a step works (the Prompt API explainer, https://github.com/webmachinelearning/prompt-api;
quoted section names are its headings):

1. **Availability** ("Testing availability"): ``LanguageModel.availability({expectedInputs,
   expectedOutputs})`` with ``[{type: "text", languages}]``. ``"downloadable"``/``"downloading"``
   -> ``SiteAgentError("model-download-required")`` (the adapter never downloads by itself: the
   visitor starts it with :meth:`ChromeBuiltIn.prepare` from a click); ``"unavailable"`` (or no
   ``LanguageModel`` at all) -> ``model-unavailable``.
2. **Native tool use or a constraint**, chosen once by feature tests: native when the page has
   ``LanguageModelToolCall``, ``LanguageModelToolSuccess`` and ``LanguageModelToolError`` and
   ``availability()`` with the ``tool-call``/``tool-response`` types says ``"available"``;
   ``responseConstraint`` ("Structured output") otherwise.
3. **Sessions** ("Session persistence and cloning"): one *base session* per page, tool list and
   conversation, made with ``LanguageModel.create({initialPrompts: [{role: "system", content:
   instructions}], expectedInputs, expectedOutputs, tools?, signal})`` and never prompted
   itself; each step prompts a ``clone()`` of it, destroyed after the step. The base is made
   again when the instructions or the tools change, and destroyed by :meth:`ChromeBuiltIn.reset`
   (the agent's ``reset()``), when the page is hidden (``visibilitychange``), and by
   :meth:`ChromeBuiltIn.close`.
4. **The input fits the context** ("Tokenization, context window length limits, and
   overflow"): the prompt is cut as :func:`build_prompt` says, measured with
   ``measureContextUsage()`` and cut again until it takes at most ``CONTEXT_SHARE`` of what the
   session has left (``contextWindow - contextUsage``). When the browser still fires
   ``contextoverflow``, later steps send less (``last_cut`` says so).
5. **Native**: the tools are declared at ``create()`` as ``{name, description, inputSchema}``
   (no ``execute``: the page runs tools, through the agent and its rules); the conversation is
   sent as messages: visitor text, answers, each call as an assistant ``{type: "tool-call",
   value: new LanguageModelToolCall({callID, name, arguments})}`` and its result as a user
   ``{type: "tool-response", value: new LanguageModelToolSuccess({callID, name, result:
   [{type: "text" | "object", value}]})}`` or ``new LanguageModelToolError({callID, name,
   errorMessage})`` (errors and denials). Plain objects are rejected by Chrome, and a ``null``
   anywhere in a result ends the turn: a result that is a JSON object is sent as ``object``
   with :func:`strip_nulls` applied; every other result (and every untrusted one, still in its
   fence) as ``text``. ``promptStreaming()`` gives text chunks and ``{type: "tool-call",
   value}`` parts (``callID`` is empty): the first call is the reply, any others are refused
   (not run, as the proxy does; :attr:`ChromeBuiltIn.last_refused`).
6. **Constraint**: ``session.prompt(text, {responseConstraint, signal})`` (or
   ``promptStreaming`` when ``request.on_text`` is set), where the constraint is a JSON Schema
   ``anyOf`` with one branch ``{type: "answer", text}`` and one branch per tool ``{type: "tool",
   name: <const NAME>, arguments: <its inputSchema, $ref inlined>}`` (:func:`inline_refs`;
   recursion cut at ``REF_DEPTH``). The prompt ``text`` lists each tool with its argument
   structure (:func:`argument_structure`), the conversation and the reply format. The reply
   text is parsed as JSON into protocol v1's reply shape
   (:func:`pysite_agent.core.wire.parse_reply`); text that is not JSON or not a reply ->
   ``bad-reply``.
7. **Streaming**: ``request.on_text`` receives answer text as it is written: natively, the
   text chunks before any tool call; with a constraint, only once the reply is known to be an
   answer (:class:`AnswerStream`), never tool-call JSON.

The rules stay the agent's: the adapter returns one reply; the agent checks the arguments and
asks the visitor before anything runs (README, "The safety rules").

The prompt ``text`` holds at most ``max_prompt_chars`` characters (code points). The current
turn (the latest visitor message and the calls and results after it) is always shown; long
tool results are shortened (head kept, the cut marked) before older messages are dropped, and
the tool list is shortened before the current turn is: :func:`build_prompt` gives the exact
order (the native messages follow the same plan). The prompt says what was cut;
``ChromeBuiltIn.last_cut`` holds the same notes.

Errors ("Error handling"; DOMException names mapped by :data:`pysite_agent.ffi.ERROR_TABLE`):
``QuotaExceededError`` -> ``model-error`` "too long", ``NotSupportedError`` ->
``model-unavailable``, ``NotReadableError``/``SyntaxError`` -> ``model-error``, ``AbortError`` ->
``aborted``; in :meth:`ChromeBuiltIn.prepare`, ``NotAllowedError`` (no recent user activation)
-> ``model-download-required`` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pysite_agent import ffi
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.history import Trim, current_turn_start, cut_text
from pysite_agent.core.signals import AbortedError, AbortSignal
from pysite_agent.core.types import Availability, ModelRequest, canonical_json
from pysite_agent.core.validation import InvalidSchemaError, validator_for
from pysite_agent.core.wire import parse_reply
from pysite_agent.models.base import AVAILABILITY_VALUES

__all__ = ["ChromeBuiltIn", "build_prompt", "chrome_built_in", "response_constraint"]

MIN_PROMPT_CHARS = 1000
"""``max_prompt_chars`` must be at least this (room for the tools and the reply format)."""

TOOL_DESCRIPTION_CHARS = 300
"""Each tool's description is cut to this many characters in the prompt (less when crowded)."""

MIN_BLOCK_CHARS = 200
"""The current turn's messages are not shortened below this many characters (see
:func:`build_prompt`)."""

REPLY_FORMAT = (
    "Reply with exactly one JSON object: "
    '{"type": "tool", "name": "<tool name>", "arguments": {...}} to call one tool, or '
    '{"type": "answer", "text": "..."} to answer the visitor.'
)

_PREPARE_ERRORS: Mapping[str, ffi.ErrorRule] = {
    "NotAllowedError": ffi.ErrorRule(
        "model-download-required",
        "Chrome starts the model download only right after a click: call prepare() from a "
        "user gesture (for example the download button's click handler).",
    ),
}


REF_DEPTH = 3
"""A recursive ``$ref`` is inlined at most this many times along one path of the schema; below
that it becomes ``{}`` (any value). The core still checks the arguments against the tool's real
schema before anything runs (README rule 1)."""

SIGNATURE_CHARS = 200
"""Each tool's argument structure is written in at most this many characters in the prompt."""

NULL_PLACEHOLDER = "(null)"
"""In a tool result sent as an object (native tool use), a ``null`` array item becomes this
string; keys whose value is ``null`` are removed (Chrome ends the turn on a ``null`` anywhere in
a tool result)."""


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    """The local target of ``ref`` (``#`` or ``#/a/b`` with ``~0``/``~1`` escapes), or ``None``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def inline_refs(schema: Mapping[str, Any], *, max_depth: int = REF_DEPTH) -> dict[str, Any]:
    """``schema`` with every local ``$ref`` replaced by its target, so a model (or Chrome's
    ``responseConstraint``) sees the whole argument structure.

    - ``$ref`` targets are JSON pointers into the schema itself (``#/$defs/x``,
      ``#/definitions/x``, ``#``); keywords next to a ``$ref`` are kept over the target's.
    - A ``$ref`` seen more than ``max_depth`` times on one path (a recursive schema, e.g. a tree)
      becomes ``{}``; a remote or dangling ``$ref`` becomes ``{}`` too.
    - ``$defs``, ``definitions``, ``$schema``, ``$id``, ``$anchor`` and ``$comment`` are dropped.

    The result is plain JSON data; the input is not changed.
    """
    root = schema
    dropped = {"$defs", "definitions", "$schema", "$id", "$anchor", "$comment", "$dynamicAnchor"}

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _pointer(root, ref)
            rest = {k: v for k, v in node.items() if k != "$ref" and k not in dropped}
            if not isinstance(target, Mapping) or seen.count(ref) >= max_depth:
                return walk(rest, seen) if rest else {}
            merged = {**walk(target, (*seen, ref)), **walk(rest, seen)}
            return merged
        return {str(k): walk(v, seen) for k, v in node.items() if k not in dropped}

    out = walk(json.loads(json.dumps(schema, default=str)), ())
    return out if isinstance(out, dict) else {}


def _constraint_schema(schema: Any) -> dict[str, Any]:
    """A tool's ``inputSchema`` for the constraint or a native declaration: references inlined
    (:func:`inline_refs`); ``{"type": "object"}`` when it is missing, invalid or not an object
    schema (the core still validates the arguments before anything runs)."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    try:
        validator_for(schema)
    except InvalidSchemaError:
        return {"type": "object"}
    plain = inline_refs(schema)
    if plain.get("type") not in (None, "object"):
        return {"type": "object"}
    return plain


def _type_text(schema: Any, depth: int) -> str:
    """A short, readable type for one argument (``string``, ``"S"|"M"``, ``integer[]``,
    ``{a: string, b?: number}``)."""
    if not isinstance(schema, Mapping):
        return "any"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in enum[:12]) + (
            "|…" if len(enum) > 12 else ""
        )
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return " or ".join(_type_text(b, depth) for b in branches[:4])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" or "items" in schema:
        return _type_text(schema.get("items"), depth) + "[]"
    if kind == "object" or "properties" in schema:
        if depth >= 3 or not isinstance(schema.get("properties"), Mapping):
            return "object"
        return "{" + _fields_text(schema, depth + 1) + "}"
    text = str(kind) if isinstance(kind, str) else "any"
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and isinstance(high, int | float):
        text += f" {low}..{high}"
    elif isinstance(low, int | float):
        text += f" >= {low}"
    elif isinstance(high, int | float):
        text += f" <= {high}"
    return text


def _fields_text(schema: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    parts = []
    for name, sub in properties.items():
        mark = "" if name in required_names else "?"
        parts.append(f"{name}{mark}: {_type_text(sub, depth)}")
    return ", ".join(parts)


def argument_structure(schema: Any) -> str:
    """The arguments of a tool in one line, for the prompt: ``(product: string, quantity?:
    integer >= 1)``; ``?`` marks an optional argument, ``[]`` an array, ``a|b`` the allowed
    values. References are inlined first (:func:`inline_refs`)."""
    plain = _constraint_schema(schema)
    return "(" + _fields_text(plain, 1) + ")"


def strip_nulls(value: Any) -> Any:
    """``value`` without ``null``: keys whose value is ``None`` are removed, ``None`` items in
    lists become :data:`NULL_PLACEHOLDER` (native tool use: Chrome ends the turn on a ``null``
    anywhere in a tool result)."""
    if isinstance(value, Mapping):
        return {str(k): strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [NULL_PLACEHOLDER if v is None else strip_nulls(v) for v in value]
    return value


def response_constraint(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``responseConstraint`` for ``tools`` (definitions ``{name, inputSchema, ...}``):
    ``{"anyOf": [answer branch, one tool branch per tool]}``; each tool's ``arguments`` is its
    ``inputSchema`` with references inlined (:func:`inline_refs`)."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"type": {"const": "answer"}, "text": {"type": "string"}},
            "required": ["type", "text"],
            "additionalProperties": False,
        }
    ]
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            continue
        branches.append(
            {
                "type": "object",
                "properties": {
                    "type": {"const": "tool"},
                    "name": {"const": name},
                    "arguments": _constraint_schema(tool.get("inputSchema")),
                },
                "required": ["type", "name", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


def _cut(text: str, limit: int) -> str:
    """The history budget's cut (:func:`pysite_agent.core.history.cut_text`)."""
    return cut_text(text, limit)


def _tools_text(
    tools: Sequence[Mapping[str, Any]], description_chars: int, *, titles: bool = True
) -> str:
    if not tools:
        return "There are no tools on this page now: answer the visitor."
    lines = ["Tools on this page (call at most one per reply):"]
    for tool in tools:
        name = str(tool.get("name", ""))
        title = tool.get("title") if titles else None
        head = f"- {name}"
        if titles:  # the argument structure goes with the titles (names only: neither)
            limit = min(SIGNATURE_CHARS, max(description_chars, 60))
            head += _cut(argument_structure(tool.get("inputSchema")), limit)
        head += f" ({title})" if isinstance(title, str) and title else ""
        description = str(tool.get("description") or "")
        if description_chars > 0 and description:
            head += ": " + _cut(" ".join(description.split()), description_chars)
        lines.append(head)
    return "\n".join(lines)


def _render(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    if role == "user":
        return f"Visitor: {message.get('content', '')}"
    if role == "assistant" and isinstance(message.get("toolCall"), Mapping):
        call = message["toolCall"]
        args = json.dumps(call.get("arguments"), ensure_ascii=False, default=str)
        return f"You called the tool {call.get('name')} with {args}"
    if role == "assistant":
        return f"You answered: {message.get('content', '')}"
    if role == "tool":
        state = " (denied, not run)" if message.get("denied") else ""
        if not state and message.get("isError"):
            state = " (error)"
        return f"Result of {message.get('name')}{state}: {message.get('content', '')}"
    return json.dumps(message, ensure_ascii=False, default=str)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


class _Prompt:
    """The prompt under construction: which messages are shown, each whole or cut to a limit,
    and how the tool list is written. ``size()`` is exactly ``len(text())``."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        older: list[int],
        current: list[int],
        dropped: int,
    ) -> None:
        self.tools = tools
        self.full = {i: _render(messages[i]) for i in (*older, *current)}
        self.results = {i for i in self.full if messages[i].get("role") == "tool"}
        self.older = older  # shown older messages, oldest first
        self.current = current  # the current turn: the visitor's message and what followed
        self.dropped = dropped  # older messages not shown
        self.skipped: list[int] = []  # current-turn messages not shown
        self.limits: dict[int, int] = {}  # message index -> characters it is cut to
        self.description_chars = TOOL_DESCRIPTION_CHARS
        self.titles = True
        self.tools_limit: int | None = None
        self._tools_cache: tuple[tuple[int, bool, int | None], str] | None = None

    def block(self, i: int) -> str:
        limit = self.limits.get(i)
        return self.full[i] if limit is None else _cut(self.full[i], limit)

    def shown(self) -> list[int]:
        return [*self.older, *(i for i in self.current if i not in self.skipped)]

    def tools_text(self) -> str:
        key = (self.description_chars, self.titles, self.tools_limit)
        if self._tools_cache is None or self._tools_cache[0] != key:
            text = _tools_text(self.tools, self.description_chars, titles=self.titles)
            if self.tools_limit is not None:
                text = _cut(text, self.tools_limit)
            self._tools_cache = (key, text)
        return self._tools_cache[1]

    def notes(self) -> list[str]:
        notes = []
        if self.dropped:
            notes.append(f"{_plural(self.dropped, 'earlier message')} not shown")
        if self.skipped:
            count = len(self.skipped)
            what = "earlier call or result" if count == 1 else "earlier calls and results"
            notes.append(f"{count} {what} for the visitor's latest message not shown")
        results = sum(1 for i in self.limits if i in self.results and i not in self.skipped)
        if results:
            notes.append(f"{_plural(results, 'long tool result')} shortened")
        others = sum(1 for i in self.limits if i not in self.results and i not in self.skipped)
        user = self.current[0] if self.current else -1
        if user in self.limits:
            notes.append("the visitor's latest message shortened")
            others -= 1
        if others:
            notes.append(f"{_plural(others, 'other long message')} shortened")
        if self.tools and (self.description_chars < TOOL_DESCRIPTION_CHARS or not self.titles):
            notes.append("tool descriptions shortened")
        if self.tools_limit is not None:
            notes.append("tool list cut")
        return notes

    def parts(self) -> list[str]:
        parts = [self.tools_text(), ""]
        notes = self.notes()
        if notes:
            parts.append(f"[Conversation cut to fit: {'; '.join(notes)}.]")
        parts.append("Conversation so far:")
        parts.extend(self.block(i) for i in self.shown())
        parts.extend(["", REPLY_FORMAT])
        return parts

    def size(self) -> int:
        parts = self.parts()
        return sum(len(p) for p in parts) + len(parts) - 1

    def text(self) -> str:
        return "\n".join(self.parts())


def build_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    max_history: int,
    max_prompt_chars: int,
) -> tuple[str, list[str]]:
    """The prompt text for one step, and notes on what was cut (empty when nothing was).

    See :func:`_plan` for the order in which things are cut."""
    prompt = _plan(messages, tools, max_history=max_history, max_prompt_chars=max_prompt_chars)
    return prompt.text(), prompt.notes()


def _plan(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    max_history: int,
    max_prompt_chars: int,
) -> _Prompt:
    """The prompt text for one step, and notes on what was cut (empty when nothing was).

    The prompt is the tool list (each tool's argument structure, :func:`argument_structure`,
    cut to ``SIGNATURE_CHARS``, and its description cut to ``TOOL_DESCRIPTION_CHARS``), the
    conversation, and the reply format. The **current turn** is the latest visitor message and
    every message after it (the calls the model made for it and their results): it is always
    shown, whatever ``max_history`` says, and it is the last thing to be cut. Older messages
    fill ``max_history`` (counting the current turn); the ones before are not shown. With no
    visitor message at all, every message counts as older.

    When the prompt is longer than ``max_prompt_chars`` code points, it is made to fit in this
    order, each step only as far as needed and stopping as soon as it fits:

    1. a tool list longer than half of ``max_prompt_chars`` gets shorter descriptions (halved
       each time) until it is at most half;
    2. long tool results are shortened: older results to ``max_prompt_chars // 8`` characters,
       the current turn's to ``max_prompt_chars // 3``, older ones first;
    3. older messages are dropped, oldest first;
    4. the tool list is shortened further: shorter descriptions (and argument structures),
       then names only;
    5. the current turn's earlier calls and results (all but the latest call and result) are
       shortened further, earliest first, to ``MIN_BLOCK_CHARS`` each;
    6. those earlier calls and results are left out, earliest first (a result never without
       its call);
    7. the latest call and result are shortened, to ``MIN_BLOCK_CHARS`` each at the least;
    8. the visitor's latest message is shortened, to ``MIN_BLOCK_CHARS`` at the least;
    9. the tool list is cut at its end.

    A shortened text keeps its head and ends with ``[… cut N characters]``. The prompt says
    what was cut (``[Conversation cut to fit: …]``), and the notes returned say the same. The
    reply format always closes the prompt.
    """
    n = len(messages)
    start = current_turn_start(messages)
    latest_user = start if start < n else -1
    current = list(range(start, n))
    room = max(0, max_history - len(current))
    older = list(range(max(0, start - room), start))
    prompt = _Prompt(messages, tools, older, current, dropped=start - len(older))

    def over() -> int:
        return prompt.size() - max_prompt_chars

    def shorten(indices: Sequence[int], floor: int) -> None:
        for i in indices:
            for _ in range(3):  # again if the notes line grew with this cut
                excess = over()
                if excess <= 0:
                    return
                length = len(prompt.block(i))
                if length <= floor:
                    break
                prompt.limits[i] = max(floor, length - excess)

    def fewer_descriptions(until: Callable[[], bool]) -> None:
        while not until() and (prompt.description_chars > 0 or prompt.titles):
            if prompt.description_chars > 0:
                prompt.description_chars = (
                    prompt.description_chars // 2 if prompt.description_chars > 20 else 0
                )
            else:
                prompt.titles = False

    if over() <= 0:
        return prompt
    # 1. a tool list over half of the prompt
    half = max_prompt_chars // 2
    fewer_descriptions(lambda: len(prompt.tools_text()) <= half or over() <= 0)
    # 2. long tool results, older ones first
    shorten([i for i in older if i in prompt.results], max(MIN_BLOCK_CHARS, max_prompt_chars // 8))
    shorten(
        [i for i in current if i in prompt.results], max(MIN_BLOCK_CHARS, max_prompt_chars // 3)
    )
    # 3. older messages, oldest first
    while over() > 0 and prompt.older:
        prompt.limits.pop(prompt.older.pop(0), None)
        prompt.dropped += 1
    # 4. the tool list, further
    fewer_descriptions(lambda: over() <= 0)
    # 5. the current turn's earlier calls and results, earliest first
    steps = current[1:] if latest_user >= 0 else current
    earlier, latest = steps[:-2], steps[-2:]
    shorten(earlier, MIN_BLOCK_CHARS)
    # 6. the current turn's earlier calls and results, left out, earliest first
    for i in earlier:
        if over() <= 0:
            break
        prompt.skipped.append(i)
    first = next((i for i in steps if i not in prompt.skipped), None)
    if prompt.skipped and first in earlier and first in prompt.results:
        prompt.skipped.append(first)  # never a result without its call
    # 7. the latest call and result; 8. the visitor's message
    shorten(latest, MIN_BLOCK_CHARS)
    if latest_user >= 0:
        shorten([latest_user], MIN_BLOCK_CHARS)
    # 9. the tool list, cut at the end
    for _ in range(3):  # the notes line may grow by a few characters once
        excess = over()
        if excess <= 0:
            break
        prompt.tools_limit = max(0, len(prompt.tools_text()) - excess)
    return prompt


def _parse(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        text = str(text)
    try:
        value = json.loads(text)
    except ValueError:
        snippet = text[:200]
        raise SiteAgentError(
            "bad-reply", f"Chrome's model replied with text that is not JSON: {snippet!r}"
        ) from None
    return dict(parse_reply(value))


_ANSWER_HEAD = re.compile(r'\s*\{\s*"type"\s*:\s*"answer"\s*,\s*"text"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AnswerStream:
    """Answer text out of a ``responseConstraint`` reply while it streams.

    The reply is JSON. Text is passed on only once the reply is known to be an answer: it
    starts ``{"type": "answer", "text": "`` (white space allowed). Then each :meth:`feed`
    returns the newly decoded characters of ``text`` (JSON escapes decoded; an escape cut
    between two chunks waits for the next one), and nothing after the closing quote. A reply
    that starts any other way (a tool call, or the keys in another order) gives no text: its
    answer, if any, arrives whole with the final reply.
    """

    def __init__(self) -> None:
        self._raw = ""
        self._pos = -1  # index in _raw where the undecoded part of the text starts; -1: not yet
        self._closed = False
        self._refused = False

    def feed(self, chunk: str) -> str:
        if self._refused or self._closed:
            return ""
        self._raw += chunk
        if self._pos < 0:
            match = _ANSWER_HEAD.match(self._raw)
            if match is None:
                if not _could_become_answer(self._raw):
                    self._refused = True
                return ""
            self._pos = match.end()
        out: list[str] = []
        raw, i = self._raw, self._pos
        while i < len(raw):
            char = raw[i]
            if char == '"':
                self._closed = True
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape continues in the next chunk
            code = raw[i + 1]
            if code == "u":
                if i + 6 > len(raw):
                    break
                digits = raw[i + 2 : i + 6]
                try:
                    point = int(digits, 16)
                except ValueError:
                    self._refused = True
                    break
                if 0xD800 <= point < 0xDC00:  # a surrogate pair: wait for its second half
                    if i + 12 > len(raw):
                        break
                    try:
                        low = int(raw[i + 8 : i + 12], 16)
                    except ValueError:
                        self._refused = True
                        break
                    out.append(chr(0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
                out.append(chr(point))
                i += 6
                continue
            out.append(_ESCAPES.get(code, code))
            i += 2
        self._pos = i
        return "".join(out)


def _could_become_answer(raw: str) -> bool:
    """Whether ``raw`` may still grow into the answer head (it is a prefix of one)."""
    probe = raw.lstrip()
    template = '{"type":"answer","text":"'
    squeezed = re.sub(r"\s+", "", probe)
    return template.startswith(squeezed[: len(template)]) or squeezed.startswith(template)


TOOL_TYPE_NAMES = ("LanguageModelToolCall", "LanguageModelToolSuccess", "LanguageModelToolError")
"""The Prompt API's tool-use classes (behind Chrome's ``prompt-api-tool-use`` flag): native tool
use needs all three."""

CONTEXT_SHARE = 0.8
"""The prompt may take at most this share of the context the session has left
(``contextWindow - contextUsage``); the rest is room for the reply."""


class ChromeBuiltIn:
    """Chrome's on-device model (Prompt API). See the module docstring for the protocol.

    Attributes:
        languages: BCP 47 codes for ``expectedInputs``/``expectedOutputs`` (Chrome supports
            ``en``, ``es``, ``ja``).
        max_history: messages of the conversation sent per step.
        max_prompt_chars: the most code points per prompt text (system instructions not counted).
        last_cut: what the latest prompt left out (notes; empty when nothing).
        last_mode: ``"native"`` or ``"constraint"``: how the latest step asked for a tool.
        last_refused: names of the tool calls of the latest reply that were refused (a reply
            with several calls: only the first is used).
        sessions_created: how many times ``LanguageModel.create()`` was called for steps.
    """

    def __init__(
        self,
        languages: Iterable[str] = ("en",),
        max_history: int = 12,
        max_prompt_chars: int = 6000,
        *,
        language_model: Any = None,
        tool_use: bool | None = None,
        tool_types: Mapping[str, Any] | None = None,
        document: Any = None,
    ) -> None:
        if isinstance(languages, str):
            languages = (languages,)
        langs = tuple(languages)
        if not langs or not all(isinstance(lang, str) and lang for lang in langs):
            raise ValueError("languages must be a non-empty list of language codes, e.g. ['en']")
        if isinstance(max_history, bool) or not isinstance(max_history, int) or max_history < 1:
            raise ValueError("max_history must be a positive integer")
        if (
            isinstance(max_prompt_chars, bool)
            or not isinstance(max_prompt_chars, int)
            or max_prompt_chars < MIN_PROMPT_CHARS
        ):
            raise ValueError(f"max_prompt_chars must be an integer >= {MIN_PROMPT_CHARS}")
        if tool_use not in (None, True, False):
            raise ValueError("tool_use must be None (feature test), True or False")
        self.languages = langs
        self.max_history = max_history
        self.max_prompt_chars = max_prompt_chars
        self.last_cut: list[str] = []
        self.last_mode: str | None = None
        self.last_refused: list[str] = []
        self.sessions_created = 0
        self._language_model = language_model
        self._tool_use = tool_use
        self._tool_types = dict(tool_types) if tool_types is not None else None
        self._document = document
        self._why_unavailable = ""
        self._native: bool | None = None  # the feature test's answer, once known
        self._base: Any = None  # the base session: system prompt (and tools, native)
        self._base_key: str | None = None
        self._visibility: ffi.OwnedCallback | None = None
        self._visibility_target: Any = None
        self._budget_scale = 1.0  # lowered after the browser reported a context overflow

    @property
    def name(self) -> str:
        return "chrome built-in"

    def _lm(self) -> Any:
        if self._language_model is not None:
            return self._language_model
        return ffi.global_object("LanguageModel")

    def _options(self, native: bool = False) -> dict[str, Any]:
        expected: list[dict[str, Any]] = [{"type": "text", "languages": list(self.languages)}]
        if not native:
            return {"expectedInputs": expected, "expectedOutputs": [dict(e) for e in expected]}
        return {
            "expectedInputs": [*expected, {"type": "tool-call"}, {"type": "tool-response"}],
            "expectedOutputs": [dict(expected[0]), {"type": "tool-call"}],
        }

    @staticmethod
    def _arg(lm: Any, value: Any) -> Any:
        return ffi.to_js(value) if ffi.is_js(lm) else ffi.plain_copy(value)

    async def availability(self) -> Availability:
        """``LanguageModel.availability(options)``; ``"unavailable"`` when there is no
        ``LanguageModel``, when it raises (e.g. ``NotSupportedError`` for the languages), or
        when it answers something unknown."""
        lm = self._lm()
        if lm is None:
            self._why_unavailable = "this browser has no LanguageModel (Chrome's Prompt API)"
            return "unavailable"
        try:
            value = await ffi.maybe_await(lm.availability(self._arg(lm, self._options())))
        except Exception as exc:  # noqa: BLE001 - a failing probe means "not usable here"
            self._why_unavailable = f"LanguageModel.availability() failed: {ffi.from_js_error(exc)}"
            return "unavailable"
        if value not in AVAILABILITY_VALUES:
            self._why_unavailable = f"LanguageModel.availability() said {value!r}"
            return "unavailable"
        self._why_unavailable = f"LanguageModel.availability() said {value!r}"
        return value  # type: ignore[no-any-return]

    async def _check(self) -> Any:
        state = await self.availability()
        if state in ("downloadable", "downloading"):
            raise SiteAgentError(
                "model-download-required",
                "Chrome's on-device model must be downloaded first "
                f"({self._why_unavailable}); start it from a click (prepare()).",
            )
        if state != "available":
            raise SiteAgentError(
                "model-unavailable",
                f"Chrome's on-device model is not available here: {self._why_unavailable}.",
            )
        return self._lm()

    # -- native tool use: the feature test ------------------------------------------------

    def _types(self) -> dict[str, Any] | None:
        """The three tool-use classes (injected, or the page's globals), or ``None``."""
        if self._tool_types is not None:
            found = {n: self._tool_types.get(n) for n in TOOL_TYPE_NAMES}
        elif self._language_model is None:
            found = {n: ffi.global_object(n) for n in TOOL_TYPE_NAMES}
        else:
            return None
        return found if all(v is not None for v in found.values()) else None

    async def _uses_native(self, lm: Any) -> bool:
        """Whether this browser offers native tool use (Prompt API "Tool use"): the three
        classes exist, and ``availability()`` with the ``tool-call``/``tool-response`` types
        says ``"available"``. ``tool_use=False`` turns it off; the answer is kept."""
        if self._tool_use is False:
            return False
        if self._native is not None:
            return self._native
        native = False
        if self._types() is not None:
            try:
                state = await ffi.maybe_await(lm.availability(self._arg(lm, self._options(True))))
                native = state == "available"
            except Exception:  # noqa: BLE001 - refused: tool use is not offered here
                native = False
        self._native = native
        return native

    # -- sessions --------------------------------------------------------------------------

    def _declarations(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for tool in tools:
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                continue
            description = str(tool.get("description") or "")
            title = tool.get("title")
            if isinstance(title, str) and title and title not in description:
                description = f"{title}. {description}" if description else title
            out.append(
                {
                    "name": name,
                    "description": description,
                    "inputSchema": strip_nulls(_constraint_schema(tool.get("inputSchema"))),
                }
            )
        return out

    async def _base_session(
        self, lm: Any, request: ModelRequest, native: bool, link: ffi.JsAbortLink
    ) -> Any:
        """The base session for these instructions and tools: created once (per page, tool
        revision and conversation), cloned for each step, never prompted itself."""
        declarations = self._declarations(request.tools) if native else []
        key = canonical_json(
            [native, request.instructions, declarations or list(request.tools), self.languages]
        )
        if self._base is not None and self._base_key == key:
            return self._base
        self._drop_sessions()
        options: dict[str, Any] = {
            "initialPrompts": [{"role": "system", "content": request.instructions}],
            **self._options(native),
        }
        if native and declarations:
            options["tools"] = declarations
        self.sessions_created += 1
        # Its own signal, tied to the step's only while create() runs: aborting create()'s
        # signal later would also destroy the session, and the base outlives the step.
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(lm)) as own:
            if link.aborted:
                own.abort("aborted")
            options["signal"] = own.signal
            base = await ffi.call_abortable(own, ffi.maybe_await(lm.create(self._arg(lm, options))))
        self._base, self._base_key = base, key
        self._watch_visibility()
        return base

    async def _step_session(
        self, lm: Any, request: ModelRequest, native: bool, link: ffi.JsAbortLink
    ) -> Any:
        """A clone of the base session for one step (a new base when the clone fails because
        the browser dropped the base, e.g. ``InvalidStateError``)."""
        for attempt in (1, 2):
            base = await self._base_session(lm, request, native, link)
            clone = ffi.field(base, "clone")
            if not callable(clone):
                raise SiteAgentError(
                    "model-error", "The browser's LanguageModel session has no clone()."
                )
            try:
                return await ffi.call_abortable(
                    link,
                    ffi.maybe_await(base.clone(self._arg(lm, {"signal": link.signal}))),
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt == 2 or ffi.error_name(exc) == "AbortError":
                    raise
                self._drop_sessions()
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop_sessions(self) -> None:
        base, self._base, self._base_key = self._base, None, None
        _destroy(base)

    def reset(self) -> None:
        """A new conversation: the base session is destroyed; the next step creates one."""
        self._drop_sessions()

    def close(self) -> None:
        """Destroy the sessions and stop following the page's visibility (idempotent)."""
        self._drop_sessions()
        owned, target = self._visibility, self._visibility_target
        self._visibility = self._visibility_target = None
        if owned is not None:
            with contextlib.suppress(Exception):
                target.removeEventListener("visibilitychange", owned.value)
            owned.destroy()

    def _watch_visibility(self) -> None:
        """Destroy the sessions when the page is hidden (``visibilitychange`` on the page's
        ``document``, or the injected one): a hidden page should not hold the model."""
        if self._visibility is not None:
            return
        target = self._document
        if target is None and self._language_model is None:
            target = ffi.global_object("document")
        if target is None or not callable(ffi.field(target, "addEventListener")):
            return

        def changed(*_event: Any) -> None:
            if ffi.field(target, "visibilityState") == "hidden":
                self._drop_sessions()

        owned = ffi.callback(changed, target)
        target.addEventListener("visibilitychange", owned.value)
        self._visibility, self._visibility_target = owned, target

    # -- one step --------------------------------------------------------------------------

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        """One step: a clone of the base session, one prompt, the parsed reply.

        With native tool use (Prompt API "Tool use"; found by feature tests) the step streams
        the conversation as messages with ``tool-call``/``tool-response`` parts and reads
        ``tool-call`` parts from ``promptStreaming()``; otherwise it prompts with a
        ``responseConstraint`` (see the module docstring). ``request.on_text`` (when set)
        receives the answer text as it is written.

        Returns:
            ``{"type": "tool", "name", "arguments"}`` or ``{"type": "answer", "text"}``.

        Raises:
            SiteAgentError: ``model-download-required``, ``model-unavailable``, ``model-error``,
                ``bad-reply`` or ``aborted`` (see the module docstring).
            AbortedError: ``request.signal`` aborted while the browser worked.
        """
        lm = await self._check()
        # Without tools there is nothing to declare, and a session made without tools takes no
        # tool content: such a step (e.g. after the page removed its tools) uses the constraint.
        native = bool(self._declarations(request.tools)) and await self._uses_native(lm)
        self.last_mode = "native" if native else "constraint"
        self.last_refused = []
        on_text = request.on_text
        signal = request.signal
        session: Any = None
        overflow: ffi.OwnedCallback | None = None
        overflowed = False
        stage = "LanguageModel.create()"
        with ffi.JsAbortLink(signal, for_js=ffi.is_js(lm)) as link:
            try:
                session = await self._step_session(lm, request, native, link)

                def on_overflow(*_event: Any) -> None:
                    nonlocal overflowed
                    overflowed = True

                if callable(ffi.field(session, "addEventListener")):
                    overflow = ffi.callback(on_overflow, session)
                    session.addEventListener("contextoverflow", overflow.value)
                stage = "measureContextUsage()"
                constraint = None if native else response_constraint(request.tools)
                prompt_input = await self._fitted_input(
                    lm, session, request, native, link, constraint
                )
                stage = "promptStreaming()" if native or on_text else "prompt()"
                options: dict[str, Any] = {"signal": link.signal}
                if constraint is not None:
                    options["responseConstraint"] = constraint
                if native:
                    reply = await self._native_reply(
                        lm, session, prompt_input, options, link, on_text
                    )
                elif on_text is not None:
                    stream = AnswerStream()

                    def forward(chunk: Any) -> None:
                        if isinstance(chunk, str):
                            text = stream.feed(chunk)
                            if text:
                                on_text(text)

                    chunks = await self._read_stream(
                        lm, session, prompt_input, options, link, forward
                    )
                    reply = _parse("".join(c for c in chunks if isinstance(c, str)))
                else:
                    text = await ffi.call_abortable(
                        link,
                        ffi.maybe_await(session.prompt(prompt_input, self._arg(lm, options))),
                    )
                    reply = _parse(text)
            except (asyncio.CancelledError, SiteAgentError):
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                raise _mapped(exc, signal, stage) from None
            finally:
                if overflow is not None:
                    with contextlib.suppress(Exception):
                        session.removeEventListener("contextoverflow", overflow.value)
                    overflow.destroy()
                _destroy(session)
        if overflowed:
            # The browser dropped the oldest context to make room: send less from now on.
            self._budget_scale = max(0.25, self._budget_scale * 0.75)
            self.last_cut.append("the browser reported a context overflow (contextoverflow)")
        if self.last_cut and request.on_trim is not None:
            with contextlib.suppress(Exception):  # recording must not break the step
                request.on_trim(Trim("prompt-chars", notes=tuple(self.last_cut)))
        return reply

    async def _fitted_input(
        self,
        lm: Any,
        session: Any,
        request: ModelRequest,
        native: bool,
        link: ffi.JsAbortLink,
        constraint: Mapping[str, Any] | None,
    ) -> Any:
        """The step's input, trimmed until it fits the session's context window: measured with
        ``measureContextUsage()`` against ``CONTEXT_SHARE`` of ``contextWindow -
        contextUsage`` when the session has them (Prompt API "Context window"); the prompt text
        is cut as :func:`build_prompt` says, from ``max_prompt_chars`` down to
        ``MIN_PROMPT_CHARS`` at the least."""
        chars = max(MIN_PROMPT_CHARS, int(self.max_prompt_chars * self._budget_scale))
        measure = ffi.field(session, "measureContextUsage")
        window = ffi.field(session, "contextWindow")
        used = ffi.field(session, "contextUsage")
        room: float | None = None
        if callable(measure) and isinstance(window, int | float) and math.isfinite(window):
            room = (window - (used if isinstance(used, int | float) else 0)) * CONTEXT_SHARE
        measure_options: dict[str, Any] = {"signal": link.signal}
        if constraint is not None:
            measure_options["responseConstraint"] = constraint
        fitted: str | None = None
        for _ in range(5):
            prompt_input, self.last_cut = self._input(lm, request, native, chars)
            if fitted is not None:
                self.last_cut.append(fitted)
            if room is None:
                return prompt_input
            need = await ffi.call_abortable(
                link,
                ffi.maybe_await(
                    session.measureContextUsage(prompt_input, self._arg(lm, measure_options))
                ),
            )
            if not isinstance(need, int | float) or need <= room:
                return prompt_input
            if chars <= MIN_PROMPT_CHARS:
                self.last_cut.append("still too long for the model's context window")
                return prompt_input
            chars = max(MIN_PROMPT_CHARS, int(chars * room / need * 0.9))
            fitted = f"cut to {chars} characters to fit the model's context window"
        return prompt_input

    def _input(
        self, lm: Any, request: ModelRequest, native: bool, chars: int
    ) -> tuple[Any, list[str]]:
        if not native:
            return build_prompt(
                request.messages,
                request.tools,
                max_history=self.max_history,
                max_prompt_chars=chars,
            )
        plan = _plan(request.messages, [], max_history=self.max_history, max_prompt_chars=chars)
        notes = plan.notes()
        messages: list[dict[str, Any]] = []
        if notes:
            messages.append(
                {"role": "user", "content": f"[Conversation cut to fit: {'; '.join(notes)}.]"}
            )
        shown = plan.shown()
        types = self._types() or {}
        for position, i in enumerate(shown):
            message = request.messages[i]
            limit = plan.limits.get(i)
            previous = request.messages[shown[position - 1]] if position > 0 else None
            following = request.messages[shown[position + 1]] if position + 1 < len(shown) else None
            messages.append(self._native_message(lm, types, message, limit, previous, following))
        return (ffi.to_js(messages) if ffi.is_js(lm) else messages), notes

    def _native_message(
        self,
        lm: Any,
        types: Mapping[str, Any],
        message: Mapping[str, Any],
        limit: int | None,
        previous: Mapping[str, Any] | None,
        following: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """One protocol v1 message as a Prompt API message: text, or a ``tool-call`` /
        ``tool-response`` part made with the browser's classes (plain objects are rejected)."""
        role = message.get("role")
        call = message.get("toolCall")
        if role == "assistant" and isinstance(call, Mapping):
            arguments = call.get("arguments")
            if not isinstance(arguments, Mapping):
                arguments = {"value": arguments}
            answered = following is not None and following.get("role") == "tool"
            if not answered:
                return {"role": "assistant", "content": _cut(_render(message), limit or 10**9)}
            value = _construct(
                types["LanguageModelToolCall"],
                {
                    "callID": str(call.get("id") or ""),
                    "name": str(call.get("name") or ""),
                    "arguments": strip_nulls(dict(arguments)),
                },
            )
            return {"role": "assistant", "content": [{"type": "tool-call", "value": value}]}
        if role == "tool":
            content = str(message.get("content", ""))
            if limit is not None:
                overhead = len(_render(message)) - len(content)
                content = _cut(content, max(MIN_BLOCK_CHARS, limit - overhead))
            called = previous is not None and isinstance(previous.get("toolCall"), Mapping)
            if not called:
                return {
                    "role": "user",
                    "content": _cut(_render({**message, "content": content}), 10**9),
                }
            init: dict[str, Any] = {
                "callID": str(message.get("toolCallId") or message.get("id") or ""),
                "name": str(message.get("name") or ""),
            }
            if previous is not None:
                init["callID"] = str(previous["toolCall"].get("id") or init["callID"])
            if message.get("isError") or message.get("denied"):
                state = "Denied by the visitor, not run: " if message.get("denied") else ""
                value = _construct(
                    types["LanguageModelToolError"], {**init, "errorMessage": state + content}
                )
            else:
                value = _construct(
                    types["LanguageModelToolSuccess"],
                    {**init, "result": [_result_item(content, bool(message.get("untrusted")))]},
                )
            return {"role": "user", "content": [{"type": "tool-response", "value": value}]}
        text = str(message.get("content", ""))
        if limit is not None:
            text = _cut(text, max(MIN_BLOCK_CHARS, limit - (len(_render(message)) - len(text))))
        return {"role": "assistant" if role == "assistant" else "user", "content": text}

    async def _read_stream(
        self,
        lm: Any,
        session: Any,
        prompt_input: Any,
        options: Mapping[str, Any],
        link: ffi.JsAbortLink,
        on_chunk: Callable[[Any], None],
    ) -> list[Any]:
        """``promptStreaming(input, options)`` read to its end with ``getReader()``; each
        chunk (a string, or a ``{type: "tool-call", value}`` part) goes to ``on_chunk``."""
        stream = session.promptStreaming(prompt_input, self._arg(lm, dict(options)))
        stream = await ffi.maybe_await(stream)
        reader = stream.getReader()
        chunks: list[Any] = []
        try:
            while True:
                item = await ffi.call_abortable(link, ffi.maybe_await(reader.read()))
                if ffi.field(item, "done"):
                    break
                chunk = ffi.field(item, "value")
                chunks.append(chunk)
                on_chunk(chunk)
        except BaseException:
            with contextlib.suppress(Exception):
                reader.releaseLock()
            raise
        return chunks

    async def _native_reply(
        self,
        lm: Any,
        session: Any,
        prompt_input: Any,
        options: Mapping[str, Any],
        link: ffi.JsAbortLink,
        on_text: Callable[[str], None] | None,
    ) -> dict[str, Any]:
        """Read a native-tool-use reply: text chunks and ``tool-call`` parts (Prompt API
        "Tool use"). The first call is the reply; the others are refused (not run, not shown
        to the model again; their names are in :attr:`last_refused`). Text is passed to
        ``on_text`` as it arrives, until the first call."""
        calls: list[Any] = []
        texts: list[str] = []

        def take(chunk: Any) -> None:
            if isinstance(chunk, str):
                texts.append(chunk)
                if on_text is not None and not calls and chunk:
                    on_text(chunk)
            elif ffi.field(chunk, "type") == "tool-call":
                calls.append(ffi.field(chunk, "value"))

        await self._read_stream(lm, session, prompt_input, options, link, take)
        if not calls:
            return {"type": "answer", "text": "".join(texts)}
        first, *rest = calls
        self.last_refused = [str(ffi.field(c, "name") or "") for c in rest]
        name = ffi.field(first, "name")
        arguments = ffi.json_to_py(ffi.field(first, "arguments"))
        if not isinstance(name, str) or not name:
            raise SiteAgentError("bad-reply", "Chrome's model called a tool without a name.")
        return {"type": "tool", "name": name, "arguments": {} if arguments is None else arguments}

    async def prepare(
        self,
        on_progress: Callable[[float], Any] | None = None,
        signal: AbortSignal | Any = None,
    ) -> None:
        """Download the on-device model (must run from a user gesture, e.g. a click).

        Calls ``LanguageModel.create({monitor, signal, ...})`` and forwards each
        ``downloadprogress`` event's ``loaded`` (a fraction, 0.0 to 1.0) to ``on_progress``.
        Returns when the model is ready; does nothing but report ``1.0`` when it already is.
        ``signal`` is a core :class:`AbortSignal` or a JS ``AbortSignal``.

        Raises:
            SiteAgentError: ``model-unavailable`` (nothing to download on this device);
                ``model-download-required`` when Chrome refuses (``NotAllowedError``: not called
                from a user gesture); ``model-error`` for a failed download (``NetworkError``);
                ``aborted``.
            AbortedError: ``signal`` aborted during the download.
        """
        state = await self.availability()
        if state == "available":
            if on_progress is not None:
                on_progress(1.0)
            return
        if state == "unavailable":
            raise SiteAgentError(
                "model-unavailable",
                f"Chrome's on-device model cannot be downloaded here: {self._why_unavailable}.",
            )
        lm = self._lm()
        core_signal, release = ffi.signal_from_js(signal)
        target: Any = None

        def progress(event: Any) -> None:
            loaded = ffi.field(event, "loaded")
            if on_progress is None or not isinstance(loaded, int | float):
                return
            with contextlib.suppress(Exception):  # a UI callback must not break the download
                on_progress(min(1.0, max(0.0, float(loaded))))

        progress_cb = ffi.callback(progress, lm)

        def monitor(m: Any) -> None:
            nonlocal target
            target = m
            m.addEventListener("downloadprogress", progress_cb.value)

        monitor_cb = ffi.callback(monitor, lm)
        session: Any = None
        try:
            with ffi.JsAbortLink(core_signal, for_js=ffi.is_js(lm)) as link:
                options = {**self._options(), "monitor": monitor_cb.value, "signal": link.signal}
                try:
                    session = await ffi.call_abortable(
                        link, ffi.maybe_await(lm.create(self._arg(lm, options)))
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                    raise _mapped(
                        exc, core_signal, "LanguageModel.create()", _PREPARE_ERRORS
                    ) from None
        finally:
            if target is not None:
                with contextlib.suppress(Exception):
                    target.removeEventListener("downloadprogress", progress_cb.value)
            progress_cb.destroy()
            monitor_cb.destroy()
            release()
            _destroy(session)


def _mapped(
    exc: BaseException,
    signal: AbortSignal | None,
    what: str,
    overrides: Mapping[str, ffi.ErrorRule] | None = None,
) -> BaseException:
    if signal is not None and signal.aborted and ffi.error_name(exc) == "AbortError":
        return AbortedError(signal.reason)
    return ffi.site_error(exc, what=what, overrides=overrides)


def _construct(cls: Any, init: Mapping[str, Any]) -> Any:
    """``new cls(init)`` for a JS class (its init as a plain JS object), ``cls(init)`` for a
    Python one (test fakes)."""
    if ffi.is_js(cls):
        return cls.new(ffi.to_js(dict(init)))
    return cls(ffi.plain_copy(dict(init)))


def _result_item(content: str, untrusted: bool) -> dict[str, Any]:
    """A tool result for ``LanguageModelToolSuccess``: ``{type: "object", value}`` when the
    text is a JSON object (``null`` removed, :func:`strip_nulls`), else ``{type: "text",
    value}``. Untrusted results stay text, inside their fence (README rule 6)."""
    if not untrusted and content.lstrip().startswith("{"):
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return {"type": "object", "value": strip_nulls(value)}
    return {"type": "text", "value": content}


def _destroy(session: Any) -> None:
    if session is None:
        return
    destroy = ffi.field(session, "destroy")
    if callable(destroy):
        with contextlib.suppress(Exception):  # already destroyed, or the page is going away
            session.destroy()


def chrome_built_in(
    languages: Iterable[str] = ("en",),
    max_history: int = 12,
    max_prompt_chars: int = 6000,
    *,
    language_model: Any = None,
    tool_use: bool | None = None,
    tool_types: Mapping[str, Any] | None = None,
    document: Any = None,
) -> ChromeBuiltIn:
    """Chrome's on-device model (Prompt API ``LanguageModel``) as a model adapter.

    Args:
        languages: language codes for ``expectedInputs``/``expectedOutputs`` (default ``en``).
        max_history: messages of the conversation sent per step (default 12).
        max_prompt_chars: the most characters (code points) of prompt text per step
            (default 6000, at least 1000).
        language_model: the ``LanguageModel`` object (default: the page's global one).
        tool_use: ``None`` (default) uses native tool use when the feature tests find it
            (Prompt API "Tool use"), ``False`` always uses ``responseConstraint``, ``True``
            asks for native tool use but still falls back when the browser lacks it.
        tool_types: ``{"LanguageModelToolCall", "LanguageModelToolSuccess",
            "LanguageModelToolError"}`` classes (default: the page's globals; with an injected
            ``language_model`` and no ``tool_types``, native tool use is off).
        document: where ``visibilitychange`` is followed (default: the page's ``document``
            when ``language_model`` is the page's own).

    Raises:
        ValueError: empty ``languages``, ``max_history`` < 1, ``max_prompt_chars`` < 1000,
            ``tool_use`` not ``None``/``True``/``False``.
    """
    return ChromeBuiltIn(
        languages,
        max_history,
        max_prompt_chars,
        language_model=language_model,
        tool_use=tool_use,
        tool_types=tool_types,
        document=document,
    )
