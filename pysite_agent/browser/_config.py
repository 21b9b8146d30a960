"""The ``<site-agent>`` element's configuration, read from its attributes and ``options``.

Pure Python (no ``js``), so it is tested on CPython too. The element sends one JSON object
(``options`` already merged over the attributes by name, see ``web/element/element.js``)::

    {"models": "chrome proxy" | ["demo"] | null,   # attribute ``models``
     "proxyUrl": "/api/agent" | null,              # attribute ``proxy-url``
     "localModelUrl": "/models/m.gguf" | null,     # attribute ``local-model-url``
     "localModelSha256": "0c1d…" | null,           # attribute ``local-model-sha256``
     "localModelSize": 144811072 | null,           # option only, bytes
     "localModelMatchTools": true | null,          # option only (default true)
     "localModelGroundArguments": true | null,     # option only (default true)
     "baseUrl": "https://shop.example/" | null,    # the page's base URL (document.baseURI)
     "preApproved": "a, b c" | ["a", "b"] | null,  # attribute ``pre-approved``
     "maxSteps": "6" | 6 | null,                   # attribute ``max-steps``
     "instructions": str | null,
     "toolTimeoutMs": number | null,               # option only, milliseconds
     "maxResultChars": int | null,                 # option only, characters
     "debuggingTools": bool | null}                # attribute ``debugging-tools``

:func:`parse_config` turns it into an :class:`ElementConfig` or raises :class:`ConfigError`
with a message written for the site owner.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODEL_TOKENS = ("chrome", "local", "proxy", "demo")
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
        proxy_url: the proxy endpoint: an ``http:``/``https:`` URL, or a relative URL that
            ``fetch`` resolves against the page (see :func:`check_proxy_url`).
        pre_approved: tool names that skip asking (within the safety rules).
        max_steps: model turns per message, 1 to 50.
        instructions: the site's instructions for the model, or ``None``.
        tool_timeout_ms: per-call timeout in milliseconds.
        max_result_chars: tool results are cut to this many characters.
        debugging_tools: also offer tools annotated ``debugging: true`` (WebMCP, Chrome 156),
            which are hidden from the visitor's agent unless the site opts in.
        local_model_url: the GGUF file of the ``local`` model, resolved against the page.
        local_model_sha256: its sha256 (64 hex digits, lower case), or ``None``.
        local_model_size: its size in bytes, or ``None``.
        local_model_match_tools: the local model's replies call only the tools the visitor
            names (``local_model(match_tools=...)``).
        local_model_ground_arguments: its arguments are grounded in what was said
            (``local_model(ground_arguments=...)``).
    """

    models: tuple[str, ...]
    proxy_url: str | None
    pre_approved: tuple[str, ...]
    max_steps: int
    instructions: str | None
    tool_timeout_ms: int
    max_result_chars: int
    debugging_tools: bool = False
    local_model_url: str | None = None
    local_model_sha256: str | None = None
    local_model_size: int | None = None
    local_model_match_tools: bool = True
    local_model_ground_arguments: bool = True


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
                raise ConfigError(f"{what} must list names as strings, got {reprlib.repr(item)}")
            items.extend(v for v in _SPLIT.split(item.strip()) if v)
    else:
        shown = reprlib.repr(value)
        raise ConfigError(f"{what} must be a string or a list of strings, got {shown}")
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out)


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_EDGES = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
WEB_SCHEMES = ("http", "https")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:80] + "…")


def check_proxy_url(value: Any, base_url: Any = None, what: str = "proxy-url") -> str | None:
    """``proxy-url`` checked: ``None`` when blank, else the URL the element may ``fetch``.

    Read as browsers read URLs (WHATWG URL Standard): C0 controls and spaces at either end
    are ignored, and tabs and newlines anywhere are removed, so ``"java\tscript:"`` is the
    ``javascript:`` scheme. Allowed: an absolute ``http:`` or ``https:`` URL with a host, or a
    relative URL (``/api/agent``, ``api/agent``, ``//host/path``), which ``fetch`` resolves
    against the page and which therefore has the page's scheme; when ``base_url`` (the page's
    ``document.baseURI``) is given, that scheme must be ``http``/``https`` too. Every other
    scheme (``javascript:``, ``data:``, ``file:``, ``blob:``, ...) is refused.

    Raises:
        ConfigError: not a string, another scheme, an http(s) URL without a host, or a
            relative URL on a page that is not served over http(s).
    """
    if _blank(value):
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{what} must be a URL string, got {reprlib.repr(value)}")
    url = value.strip(_EDGES).translate(_TAB_NEWLINE)
    if not url:
        return None
    scheme = _SCHEME.match(url)
    if scheme is not None:
        name = scheme.group(1).lower()
        if name not in WEB_SCHEMES:
            raise ConfigError(
                f"{what} must be an http(s) URL or a relative URL such as /api/agent; "
                f"{name}: URLs are not allowed (got {_shown(value)})"
            )
        rest = url[scheme.end() :].replace("\\", "/")
        host = rest[2:].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
        if not rest.startswith("//") or not host:
            raise ConfigError(f"{what} {_shown(value)} has no host; write {name}://host/path")
        return url
    if isinstance(base_url, str) and base_url:
        page = _SCHEME.match(base_url.strip(_EDGES))
        page_scheme = page.group(1).lower() if page else ""
        if page_scheme not in WEB_SCHEMES:
            raise ConfigError(
                f"{what} {_shown(value)} is relative, and this page's address is not "
                f"http(s) ({page_scheme or 'no scheme'}:); serve the page over http(s) or give "
                "an absolute http(s) URL"
            )
    return url


def _integer(value: Any, what: str, default: int, low: int, high: int | None) -> int:
    if _blank(value):
        return default
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ConfigError(f"{what} must be a whole number, got {reprlib.repr(value)}")
        number = int(text)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int):
        raise ConfigError(f"{what} must be a whole number, got {reprlib.repr(value)}")
    if number < low or (high is not None and number > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"{what} must be {bounds}, got {number}")
    return number


def parse_config(raw: Mapping[str, Any]) -> ElementConfig:
    """Check the element's merged settings (shape in the module docstring).

    Raises:
        ConfigError: an unknown model name, ``proxy`` without a proxy URL, a proxy URL that is
            neither http(s) nor relative (:func:`check_proxy_url`), a ``max-steps`` outside
            1..50, a non-positive timeout, or a value of the wrong type.
    """
    proxy_url = check_proxy_url(raw.get("proxyUrl"), raw.get("baseUrl"))

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
    local_url, local_sha, local_size = _local_model(raw, "local" in tokens)

    instructions = raw.get("instructions")
    if _blank(instructions):
        instructions = None
    elif not isinstance(instructions, str):
        raise ConfigError(f"instructions must be text, got {reprlib.repr(instructions)}")

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
        debugging_tools=_flag(raw.get("debuggingTools"), "debugging-tools"),
        local_model_url=local_url,
        local_model_sha256=local_sha,
        local_model_size=local_size,
        local_model_match_tools=_flag(
            raw.get("localModelMatchTools"), "localModelMatchTools", True
        ),
        local_model_ground_arguments=_flag(
            raw.get("localModelGroundArguments"), "localModelGroundArguments", True
        ),
    )


_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def _local_model(raw: Mapping[str, Any], used: bool) -> tuple[str | None, str | None, int | None]:
    """``local-model-url`` (resolved against ``baseUrl`` when relative), ``local-model-sha256``
    and ``localModelSize``, checked; all ``None`` when ``local`` is not in ``models``."""
    if not used:
        return None, None, None
    value = raw.get("localModelUrl")
    if _blank(value):
        raise ConfigError(
            'models includes "local" but local-model-url is not set (the GGUF file the site '
            "hosts, e.g. /models/SmolLM2-135M-Instruct.Q8_0.gguf)"
        )
    if not isinstance(value, str):
        raise ConfigError(f"local-model-url must be a URL string, got {reprlib.repr(value)}")
    url = check_proxy_url(value, raw.get("baseUrl"), "local-model-url")
    if url is None:  # pragma: no cover - not blank, checked above
        raise ConfigError("local-model-url is empty")
    base = raw.get("baseUrl")
    if isinstance(base, str) and base and not _SCHEME.match(url):
        from urllib.parse import urljoin

        url = urljoin(base, url)
    sha = raw.get("localModelSha256")
    if _blank(sha):
        sha = None
    elif not isinstance(sha, str) or not _SHA256.fullmatch(sha.strip()):
        shown = reprlib.repr(sha)
        raise ConfigError(f"local-model-sha256 must be 64 hexadecimal digits, got {shown}")
    else:
        sha = sha.strip().lower()
    size = raw.get("localModelSize")
    if size is not None:
        size = _integer(size, "localModelSize", 0, 1, None)
    return url, sha, size


def _flag(value: Any, what: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{what} must be true or false, got {reprlib.repr(value)}")
