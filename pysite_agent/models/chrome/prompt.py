"""The prompt plan: what one step's prompt text shows, and what is cut to fit.

Pure (no JS): :func:`build_prompt` writes the prompt for a model asked under a constraint (the
tool list, the conversation, the reply format); :func:`plan_prompt` is the plan behind it (which
messages are shown, each whole or cut), which an adapter that sends messages instead of one
text (Chrome's native tool use) follows too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysite_agent.core.history import current_turn_start, cut_text
from pysite_agent.models.chrome.schema import argument_structure

__all__ = [
    "MIN_BLOCK_CHARS",
    "REPLY_FORMAT",
    "SIGNATURE_CHARS",
    "TOOL_DESCRIPTION_CHARS",
    "PromptLayout",
    "PromptPlan",
    "build_prompt",
    "plan_prompt",
    "render_message",
]

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

SIGNATURE_CHARS = 200
"""Each tool's argument structure is written in at most this many characters in the prompt."""


def cut(text: str, limit: int) -> str:
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
            head += cut(argument_structure(tool.get("inputSchema")), limit)
        head += f" ({title})" if isinstance(title, str) and title else ""
        description = str(tool.get("description") or "")
        if description_chars > 0 and description:
            head += ": " + cut(" ".join(description.split()), description_chars)
        lines.append(head)
    return "\n".join(lines)


def render_message(message: Mapping[str, Any]) -> str:
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


@dataclass(frozen=True)
class PromptLayout:
    """Where the reply format goes and how tools are listed (Chrome's model: the defaults).

    Attributes:
        reply_format: the reply format's line.
        format_first: the line goes right after the tool list, before the conversation (the
            prompt then ends with the conversation's last message: everything before it is the
            same on every step of a run, which a prompt cache reuses); else it closes the
            prompt.
        signatures: each tool is listed with its argument structure and title (else its name
            and description only, which the budget may still shorten).
    """

    reply_format: str = REPLY_FORMAT
    format_first: bool = False
    signatures: bool = True


class PromptPlan:
    """The prompt under construction: which messages are shown, each whole or cut to a limit,
    and how the tool list is written. ``size()`` is exactly ``len(text())``."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        older: list[int],
        current: list[int],
        dropped: int,
        layout: PromptLayout | None = None,
    ) -> None:
        self.layout = layout or PromptLayout()
        self.tools = tools
        self.full = {i: render_message(messages[i]) for i in (*older, *current)}
        self.results = {i for i in self.full if messages[i].get("role") == "tool"}
        self.older = older  # shown older messages, oldest first
        self.current = current  # the current turn: the visitor's message and what followed
        self.dropped = dropped  # older messages not shown
        self.skipped: list[int] = []  # current-turn messages not shown
        self.limits: dict[int, int] = {}  # message index -> characters it is cut to
        self.description_chars = TOOL_DESCRIPTION_CHARS
        self.titles = self.layout.signatures
        self.tools_limit: int | None = None
        self._tools_cache: tuple[tuple[int, bool, int | None], str] | None = None

    def block(self, i: int) -> str:
        limit = self.limits.get(i)
        return self.full[i] if limit is None else cut(self.full[i], limit)

    def shown(self) -> list[int]:
        return [*self.older, *(i for i in self.current if i not in self.skipped)]

    def tools_text(self) -> str:
        key = (self.description_chars, self.titles, self.tools_limit)
        if self._tools_cache is None or self._tools_cache[0] != key:
            text = _tools_text(self.tools, self.description_chars, titles=self.titles)
            if self.tools_limit is not None:
                text = cut(text, self.tools_limit)
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
        titles_cut = self.layout.signatures and not self.titles
        if self.tools and (self.description_chars < TOOL_DESCRIPTION_CHARS or titles_cut):
            notes.append("tool descriptions shortened")
        if self.tools_limit is not None:
            notes.append("tool list cut")
        return notes

    def parts(self) -> list[str]:
        parts = [self.tools_text(), ""]
        if self.layout.format_first:
            parts.extend([self.layout.reply_format, ""])
        notes = self.notes()
        if notes:
            parts.append(f"[Conversation cut to fit: {'; '.join(notes)}.]")
        parts.append("Conversation so far:")
        parts.extend(self.block(i) for i in self.shown())
        if not self.layout.format_first:
            parts.extend(["", self.layout.reply_format])
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
    layout: PromptLayout | None = None,
) -> tuple[str, list[str]]:
    """The prompt text for one step, and notes on what was cut (empty when nothing was).

    See :func:`plan_prompt` for the order in which things are cut, and :class:`PromptLayout`
    for ``layout``."""
    prompt = plan_prompt(
        messages,
        tools,
        max_history=max_history,
        max_prompt_chars=max_prompt_chars,
        layout=layout,
    )
    return prompt.text(), prompt.notes()


def plan_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    max_history: int,
    max_prompt_chars: int,
    layout: PromptLayout | None = None,
) -> PromptPlan:
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
    reply format always closes the prompt, or follows the tool list (``layout``).
    """
    n = len(messages)
    start = current_turn_start(messages)
    latest_user = start if start < n else -1
    current = list(range(start, n))
    room = max(0, max_history - len(current))
    older = list(range(max(0, start - room), start))
    prompt = PromptPlan(messages, tools, older, current, start - len(older), layout)

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
