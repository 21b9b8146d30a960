"""The ``<site-agent>`` element's configuration, read from its attributes and ``options``.

Pure Python (no ``js``), so it is tested on CPython too. The element sends one JSON object
(``options`` already merged over the attributes by name, see ``web/element.js``)::

    {"models": "chrome proxy" | ["demo"] | null,   # attribute ``models``
     "proxyUrl": "/api/agent" | null,              # attribute ``proxy-url``
     "preApproved": "a, b c" | ["a", "b"] | null,  # attribute ``pre-approved``
     "maxSteps": "6" | 6 | null,                   # attribute ``max-steps``
     "instructions": str | null,
     "toolTimeoutMs": number | null,               # option only, milliseconds
     "maxResultChars": int | null}                 # option only, characters

:func:`parse_config` turns it into an :class:`ElementConfig` or raises :class:`ConfigError`
with a message written for the site owner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODEL_TOKENS = ("chrome", "proxy", "demo")
"""The names the ``models`` attribute accepts, in any order (that order is the fallback order)."""

DEFAULT_MAX_STEPS = 6
DEFAULT_TOOL_TIMEOUT_MS = 30_000
DEFAULT_MAX_RESULT_CHARS = 4_000
_SPLIT = re.compile(r"[\s,]+")


class ConfigError(ValueError):
    """A configuration the element cannot use; the message is shown to the site owner."""


@dataclass(frozen=True, slots=True)
class ElementConfig:
    """The element's settings, checked.

    Attributes:
        models: model names from :data:`MODEL_TOKENS`, in fallback order (never empty).
        proxy_url: the proxy endpoint (any URL ``fetch`` accepts, relative ones included).
        pre_approved: tool names that skip asking (within the safety rules).
        max_steps: model turns per message, 1 to 50.
        instructions: the site's instructions for the model, or ``None``.
        tool_timeout_ms: per-call timeout in milliseconds.
        max_result_chars: tool results are cut to this many characters.
    """

    models: tuple[str, ...]
    proxy_url: str | None
    pre_approved: tuple[str, ...]
    max_steps: int
    instructions: str | None
    tool_timeout_ms: int
    max_result_chars: int


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _names(value: Any, what: str) -> tuple[str, ...]:
    if _blank(value):
        return ()
    if isinstance(value, str):
        items = [v for v in _SPLIT.split(value.strip()) if v]
    elif isinstance(value, list | tuple):
        items = []
        for item in value:
            if not isinstance(item, str):
                raise ConfigError(f"{what} must list names as strings, got {item!r}")
            items.extend(v for v in _SPLIT.split(item.strip()) if v)
    else:
        raise ConfigError(f"{what} must be a string or a list of strings, got {value!r}")
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out)


def _integer(value: Any, what: str, default: int, low: int, high: int | None) -> int:
    if _blank(value):
        return default
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ConfigError(f"{what} must be a whole number, got {value!r}")
        number = int(text)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int):
        raise ConfigError(f"{what} must be a whole number, got {value!r}")
    if number < low or (high is not None and number > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"{what} must be {bounds}, got {number}")
    return number


def parse_config(raw: Mapping[str, Any]) -> ElementConfig:
    """Check the element's merged settings (shape in the module docstring).

    Raises:
        ConfigError: an unknown model name, ``proxy`` without a proxy URL, a ``max-steps``
            outside 1..50, a non-positive timeout, or a value of the wrong type.
    """
    proxy_url = raw.get("proxyUrl")
    if _blank(proxy_url):
        proxy_url = None
    elif not isinstance(proxy_url, str):
        raise ConfigError(f"proxy-url must be a URL string, got {proxy_url!r}")
    else:
        proxy_url = proxy_url.strip()

    tokens = tuple(t.lower() for t in _names(raw.get("models"), "models"))
    if not tokens:
        tokens = ("chrome", "proxy") if proxy_url else ("chrome",)
    unknown = [t for t in tokens if t not in MODEL_TOKENS]
    if unknown:
        raise ConfigError(
            f"models: unknown model name(s) {', '.join(unknown)}; use any of "
            f'{", ".join(MODEL_TOKENS)} (for example models="chrome proxy")'
        )
    if "proxy" in tokens and proxy_url is None:
        raise ConfigError('models includes "proxy" but proxy-url is not set')

    instructions = raw.get("instructions")
    if _blank(instructions):
        instructions = None
    elif not isinstance(instructions, str):
        raise ConfigError(f"instructions must be text, got {instructions!r}")

    return ElementConfig(
        models=tokens,
        proxy_url=proxy_url,
        pre_approved=_names(raw.get("preApproved"), "pre-approved"),
        max_steps=_integer(raw.get("maxSteps"), "max-steps", DEFAULT_MAX_STEPS, 1, 50),
        instructions=instructions,
        tool_timeout_ms=_integer(
            raw.get("toolTimeoutMs"), "toolTimeoutMs", DEFAULT_TOOL_TIMEOUT_MS, 1, None
        ),
        max_result_chars=_integer(
            raw.get("maxResultChars"), "maxResultChars", DEFAULT_MAX_RESULT_CHARS, 1, None
        ),
    )
