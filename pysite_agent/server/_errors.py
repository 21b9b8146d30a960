"""Errors the proxy reports, and the redaction that keeps the key out of them.

Exception tree (what ``on_error`` receives)::

    ProxyError                 any failure worth a log line; never carries the API key
    ├── UpstreamError          the provider failed: error status, unreadable or unusable reply,
    │   │                      connection refused or broken (client: 502 upstream-error)
    │   └── UpstreamTimeout    no complete reply within ``timeout_ms`` (client: 504)
    └── InternalError          a bug or a broken rate-limit store (client: 500 internal-error)

Clients never see these: they get a fixed, generic message and at most the upstream status code.
"""

from __future__ import annotations

import traceback
from typing import Final

REDACTED: Final = "[redacted]"


class Redactor:
    """Replaces every occurrence of the secret in a text."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def __repr__(self) -> str:
        return "Redactor(...)"

    def __call__(self, text: str) -> str:
        if self._secret and self._secret in text:
            return text.replace(self._secret, REDACTED)
        return text


class ProxyError(Exception):
    """A failure the proxy reports to ``on_error``.

    Attributes:
        provider: ``anthropic``, ``openai`` or ``gemini``.
        status: the HTTP status the client received.
        code: the protocol error code the client received.
        upstream_status: the provider's HTTP status, when there was one.
        detail: for your logs: the provider's error body (first 2,000 characters) or the
            original exception's type and message. Redacted; may contain provider text.
        trace: the original exception's formatted traceback, redacted ("" when none).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int,
        code: str,
        upstream_status: int | None = None,
        detail: str = "",
        trace: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.code = code
        self.upstream_status = upstream_status
        self.detail = detail
        self.trace = trace

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, provider={self.provider!r}, "
            f"status={self.status}, upstream_status={self.upstream_status})"
        )


class UpstreamError(ProxyError):
    """The provider answered with an error, or with a reply that cannot be used."""


class UpstreamTimeout(UpstreamError):
    """The provider did not answer completely within ``timeout_ms``."""


class InternalError(ProxyError):
    """An unexpected failure inside the proxy (or its rate-limit store)."""


def describe(exc: BaseException, redact: Redactor) -> tuple[str, str]:
    """``(type: message, traceback)`` of an exception, both redacted."""
    detail = redact(f"{type(exc).__name__}: {exc}")[:2000]
    trace = redact("".join(traceback.format_exception(exc)))
    return detail, trace


MAX_RETRY_AFTER_S: Final = 3600
"""The longest wait passed on from a provider's ``Retry-After`` (longer ones are cut to it)."""


def retry_after_header(value: str, *, now: float | None = None) -> bytes | None:
    """A provider's ``Retry-After`` as whole seconds to pass on, or ``None`` when it is neither.

    Both forms of RFC 9110, section 10.2.3: delay seconds (``"120"``) and an HTTP date
    (``"Wed, 21 Oct 2026 07:28:00 GMT"``, read with :func:`email.utils.parsedate_to_datetime`;
    a date in the past is ``0``). The result is bounded to 0..:data:`MAX_RETRY_AFTER_S`.
    ``now`` is the Unix time (default: the clock).
    """
    import time
    from email.utils import parsedate_to_datetime

    text = value.strip()
    if text.isascii() and text.isdigit():
        seconds = int(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = max(0, int(when.timestamp() - (time.time() if now is None else now) + 0.999))
    return str(min(seconds, MAX_RETRY_AFTER_S)).encode("ascii")
