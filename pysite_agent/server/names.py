"""Tool names as a provider accepts them, and back.

WebMCP allows names up to 128 characters of ``[A-Za-z0-9_.-]``; providers accept fewer
(letters, digits, ``_`` and ``-``, at most 64 characters; Gemini: at most 63, starting with a
letter or ``_``). :class:`NameMap` gives every name of one request a provider name such that
the mapping is one-to-one:

- a name the provider accepts keeps itself, and these are reserved first, so no rewritten name
  can take a name that a tool really has;
- any other name becomes its sanitised form, or (when that is taken or too long) a shortened
  form with a hash of the original, or a numbered variant of that;
- mapping back turns a handed-out name into its one original; any other name the model writes
  comes back unchanged, so it can only name the tool that really has that name (or none: the
  browser refuses names that are not tools).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class NameRule:
    """What a provider accepts as a tool name."""

    max_length: int
    must_start_with_letter: bool

    def accepts(self, name: str) -> bool:
        if not 1 <= len(name) <= self.max_length or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            return False
        return not self.must_start_with_letter or name[0].isalpha() or name[0] == "_"


ANTHROPIC_NAMES = NameRule(max_length=64, must_start_with_letter=False)
OPENAI_NAMES = NameRule(max_length=64, must_start_with_letter=False)
GEMINI_NAMES = NameRule(max_length=63, must_start_with_letter=True)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class NameMap:
    """A one-to-one map between the request's tool names and provider names."""

    def __init__(self, rule: NameRule, names: Iterable[str]) -> None:
        self._rule = rule
        self._to_provider: dict[str, str] = {}
        self._to_original: dict[str, str] = {}
        ordered = list(dict.fromkeys(names))
        for name in ordered:
            if rule.accepts(name):
                self._bind(name, name)
        for name in ordered:
            if name not in self._to_provider:
                self._bind(name, self._invent(name))

    def _bind(self, original: str, provider: str) -> None:
        self._to_provider[original] = provider
        self._to_original[provider] = original

    def _invent(self, name: str) -> str:
        rule = self._rule
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"
        if rule.must_start_with_letter and not (base[0].isalpha() or base[0] == "_"):
            base = f"_{base}"
        candidates = [base] if len(base) <= rule.max_length else []
        hashed = f"{base[: rule.max_length - 9]}_{_digest(name)}"
        candidates.append(hashed)
        for candidate in candidates:
            if candidate not in self._to_original:
                return candidate
        n = 2
        while True:
            suffix = f"_{n}"
            candidate = f"{hashed[: rule.max_length - len(suffix)]}{suffix}"
            if candidate not in self._to_original:
                return candidate
            n += 1

    def provider(self, original: str) -> str:
        """The provider name of a name in the map (``KeyError`` for others)."""
        return self._to_provider[original]

    def original(self, provider_name: str) -> str:
        """The tool name behind a provider name the model chose.

        A name the map did not hand out comes back unchanged: it is either exactly one tool's
        real name or no tool's, and the browser refuses names that are not tools.
        """
        return self._to_original.get(provider_name, provider_name)

    def repeated_name(self, provider_name: str) -> str:
        """``provider_name``, or the provider name it repeats when it is one handed-out name
        written two or more times over and no tool has it as its own name (a stream that
        resent the name in every chunk, joined by a reader that appended each piece)."""
        if provider_name in self._to_original or not provider_name:
            return provider_name
        for name in self._to_original:
            times, rest = divmod(len(provider_name), len(name))
            if times >= 2 and not rest and provider_name == name * times:
                return name
        return provider_name

    def __len__(self) -> int:
        return len(self._to_provider)
