"""The proxy's options, checked once when the app is built.

Every bad option raises ``ValueError`` (or ``TypeError``) at construction, with a message that
never repeats the API key or the rate-limit storage URI (which may hold a password).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import httpx

from pysite_agent.server._types import Scope

Provider = Literal["anthropic", "openai", "gemini"]
PROVIDERS: Final[tuple[str, ...]] = ("anthropic", "openai", "gemini")

ClientIp = Callable[[Scope], "str | None"]
OnError = Callable[[Any], "Awaitable[None] | None"]

DEFAULT_RATE_LIMIT: Final[Mapping[str, int]] = {"window_ms": 60_000, "max": 20}

DEFAULT_BASE_URLS: Final[Mapping[str, str]] = {
    "anthropic": "https://api.anthropic.com/v1",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
}

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$")


@dataclass(frozen=True)
class RateLimit:
    """``max`` requests per client bucket in any ``window_s`` seconds (a moving window)."""

    window_s: int
    max: int
    storage_uri: str = field(repr=False)


@dataclass(frozen=True)
class Options:
    provider: Provider
    model: str
    api_key: str = field(repr=False)
    allowed_origins: frozenset[str]
    base_url: str
    max_tokens: int
    max_messages: int
    max_tools: int
    max_body_bytes: int
    rate_limit: RateLimit | None
    instructions: str
    allow_client_instructions: bool
    allow_headers: tuple[str, ...]
    timeout_s: float
    body_timeout_s: float
    client_ip: ClientIp
    http_client: httpx.AsyncClient | None = field(repr=False)
    on_error: OnError | None = field(repr=False)


def canonical_origin(entry: object) -> str:
    """The browser's serialisation of an allowed-origin entry (``scheme://host[:port]``).

    Lower-cases scheme and host and drops a default port (browsers never send them). Anything
    that is not exactly an origin fails: ``*``, ``null``, paths (even ``/``), queries,
    fragments, user info, other schemes.

    Raises:
        ValueError: with the entry in the message (origins are not secret).
    """
    if not isinstance(entry, str):
        raise TypeError(f"allowed_origins entries must be strings, not {type(entry).__name__}")
    bad = f"allowed_origins entry {entry!r} is not an origin (scheme://host[:port])"
    if "*" in entry or entry.strip() != entry or not entry:
        raise ValueError(f"{bad}: no wildcards or spaces")
    try:
        parts = urlsplit(entry)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{bad}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError(f"{bad}: the scheme must be http or https")
    if parts.path or parts.query or parts.fragment or entry.endswith(("?", "#")):
        raise ValueError(f"{bad}: remove the path (also a trailing '/'), query or fragment")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError(f"{bad}: no user info")
    host = parts.hostname
    if not host:
        raise ValueError(f"{bad}: no host")
    if ":" in host:  # IPv6 literal
        try:
            host = f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            raise ValueError(f"{bad}: bad IPv6 address") from None
    elif not re.fullmatch(r"[a-z0-9.-]+", host) or ".." in host or host.startswith("."):
        raise ValueError(f"{bad}: the host must be ASCII (use punycode for IDNs)")
    default = 443 if scheme == "https" else 80
    if port is None and parts.netloc.endswith(":"):
        raise ValueError(f"{bad}: empty port")
    if port == 0:
        raise ValueError(f"{bad}: port 0")
    suffix = "" if port in (None, default) else f":{port}"
    return f"{scheme}://{host}{suffix}"


def _positive_int(name: str, value: object, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}")
    return value


def _rate_limit(value: object, storage_uri: object) -> RateLimit | None:
    if value is False or value is None:
        return None
    if value is True:
        value = DEFAULT_RATE_LIMIT
    if not isinstance(value, Mapping):
        raise TypeError("rate_limit must be a dict {'window_ms': int, 'max': int} or False")
    unknown = set(value) - {"window_ms", "max"}
    if unknown:
        raise ValueError(f"rate_limit has unknown keys: {sorted(unknown)}")
    window_ms = _positive_int(
        "rate_limit['window_ms']", value.get("window_ms", DEFAULT_RATE_LIMIT["window_ms"])
    )
    maximum = _positive_int("rate_limit['max']", value.get("max", DEFAULT_RATE_LIMIT["max"]))
    if not isinstance(storage_uri, str) or "://" not in storage_uri:
        raise ValueError("rate_limit_storage must be a storage URI such as memory:// or redis://…")
    # The limits library counts whole seconds: a window is rounded up, never down.
    return RateLimit(window_s=math.ceil(window_ms / 1000), max=maximum, storage_uri=storage_uri)


def _api_key(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("api_key is required (read it from an environment variable or secret)")
    if any(not (0x21 <= ord(c) <= 0x7E) for c in value):
        # A header value with a space, a control character or non-ASCII would be refused by
        # the HTTP library, whose error message would then contain the key.
        raise ValueError("api_key contains characters that cannot be sent in a header")
    return value


def _base_url(provider: str, value: object) -> str:
    if value is None:
        return DEFAULT_BASE_URLS[provider]
    if not isinstance(value, str):
        raise TypeError("base_url must be a string")
    try:
        parts = urlsplit(value)
    except ValueError:
        raise ValueError("base_url is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError("base_url must be an http(s) URL without query or fragment")
    if parts.username is not None or parts.password is not None:
        raise ValueError("base_url must not contain credentials")
    return value.rstrip("/")


def default_client_ip(scope: Scope) -> str | None:
    """``cf-connecting-ip`` (set by Cloudflare), else the ASGI connection's address.

    ``X-Forwarded-For`` is never read: any client can set it. Note that any client can set
    ``cf-connecting-ip`` too when the app is *not* behind Cloudflare: pass ``client_ip`` then.
    """
    for name, value in scope.get("headers", ()):
        if name == b"cf-connecting-ip":
            text: str = value.decode("latin-1").strip()
            if text:
                return text
    client = scope.get("client")
    if client:
        return str(client[0])
    return None


def client_ip_from_header(name: str) -> ClientIp:
    """A ``client_ip`` that reads a header set by a reverse proxy you trust.

    For a list such as ``X-Forwarded-For`` it takes the last entry: the address your own proxy
    appended. Falls back to the ASGI connection's address.
    """
    if not _HEADER_NAME.match(name):
        raise ValueError(f"not a header name: {name!r}")
    wanted = name.lower().encode("latin-1")

    def client_ip(scope: Scope) -> str | None:
        found: str | None = None
        for key, value in scope.get("headers", ()):
            if key == wanted:
                found = value.decode("latin-1")
        if found is not None:
            last = found.split(",")[-1].strip()
            if last:
                return last
        client = scope.get("client")
        return str(client[0]) if client else None

    return client_ip


def build(
    *,
    provider: object,
    model: object,
    api_key: object,
    allowed_origins: object,
    base_url: object,
    max_tokens: object,
    max_messages: object,
    max_tools: object,
    max_body_bytes: object,
    rate_limit: object,
    rate_limit_storage: object,
    instructions: object,
    allow_client_instructions: object,
    allow_headers: object,
    timeout_ms: object,
    body_timeout_ms: object,
    client_ip: object,
    http_client: object,
    on_error: object,
) -> Options:
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}")
    if not isinstance(model, str) or not model:
        raise ValueError("model is required (no default: model IDs change)")
    if not _MODEL.match(model) or ".." in model:
        raise ValueError(f"model {model!r} has characters a model ID does not use")
    key = _api_key(api_key)
    if isinstance(allowed_origins, str) or not isinstance(allowed_origins, Iterable):
        raise TypeError("allowed_origins must be a list of origins")
    origins = frozenset(canonical_origin(o) for o in allowed_origins)
    if not origins:
        raise ValueError("allowed_origins must name at least one origin")
    if instructions is None:
        instructions = ""
    if not isinstance(instructions, str):
        raise TypeError("instructions must be a string")
    if not isinstance(allow_client_instructions, bool):
        raise TypeError("allow_client_instructions must be a bool")
    if isinstance(allow_headers, str) or not isinstance(allow_headers, Iterable):
        raise TypeError("allow_headers must be a list of header names")
    headers: list[str] = ["content-type"]
    for name in allow_headers:
        if not isinstance(name, str) or not _HEADER_NAME.match(name):
            raise ValueError(f"allow_headers: not a header name: {name!r}")
        if name.lower() not in headers:
            headers.append(name.lower())
    if client_ip is None:
        client_ip = default_client_ip
    if not callable(client_ip):
        raise TypeError("client_ip must be a callable (scope) -> str | None")
    if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
        raise TypeError("http_client must be an httpx.AsyncClient")
    if on_error is not None and not callable(on_error):
        raise TypeError("on_error must be a callable")
    return Options(
        provider=provider,  # type: ignore[arg-type]
        model=model,
        api_key=key,
        allowed_origins=origins,
        base_url=_base_url(str(provider), base_url),
        max_tokens=_positive_int("max_tokens", max_tokens),
        max_messages=_positive_int("max_messages", max_messages),
        max_tools=_positive_int("max_tools", max_tools, minimum=0),
        max_body_bytes=_positive_int("max_body_bytes", max_body_bytes),
        rate_limit=_rate_limit(rate_limit, rate_limit_storage),
        instructions=instructions,
        allow_client_instructions=allow_client_instructions,
        allow_headers=tuple(headers),
        timeout_s=_positive_int("timeout_ms", timeout_ms) / 1000,
        body_timeout_s=_positive_int("body_timeout_ms", body_timeout_ms) / 1000,
        client_ip=client_ip,
        http_client=http_client,
        on_error=on_error,
    )
