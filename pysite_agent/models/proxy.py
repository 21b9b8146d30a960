"""``proxy(url)``: the site's own endpoint, which holds the provider key (docs/models.md).

The only module that does HTTP in the browser (design, "Layers"). Each step POSTs protocol v1
(``pysite_agent/schemas/protocol-v1.schema.json``) with the browser's ``fetch`` (or the injected
``fetch=``, any function ``fetch(url, init) -> response`` with ``status``, ``text()`` and
optionally ``headers.get()``)::

    POST url  {"version": 1, "instructions", "messages", "tools"}
    200       {"type": "tool", "name", "arguments", "id"?, "meta"?} | {"type": "answer", "text"}
    4xx/5xx   {"error": {"code", "message", "upstreamStatus"?}}

Streaming (protocol v1's optional streaming reply): when ``request.on_text`` is set, the
request says ``Accept: text/event-stream, application/json``. A server that streams answers
``200 text/event-stream``: ``delta`` events (``{"text"}``, passed to ``on_text`` as they arrive),
then one ``reply`` (the same JSON as above) or ``error`` (the error body: raised as its HTTP
status would be, e.g. ``upstream-error`` as 502). A stream that ends before either, or breaks
off, is ``model-error``; the text already passed on stays with the caller (the agent marks it
incomplete). A server that answers JSON (an older one) is read as before.

Both directions are validated against the published schema (:mod:`pysite_agent.core.wire`):
a request that does not match is not sent (``model-error``); a 200 reply that does not match is
``bad-reply``.

Status codes -> :class:`~pysite_agent.core.errors.SiteAgentError` codes (consistent with the
server in ``pysite_agent.server``):

- 400 ``bad-request`` -> ``model-error``: the endpoint rejected the request.
- 413 ``payload-too-large`` or ``too-many-messages`` -> trimmed and retried once (below); if
  it comes again, ``model-error``: the conversation is too long; start a new one.
- 403 ``forbidden-origin`` -> ``model-unavailable``: configuration; the site owner adds this
  origin to the server's allowed origins.
- 404, 405, 501 -> ``model-unavailable``: nothing at ``url`` takes the POST (a static host
  answers 501 or 405, a missing route 404), so the message tells the visitor that the assistant
  is not set up on this site yet, and its owner where the proxy server belongs; no status number.
- 429 ``rate-limited`` -> ``model-error``: busy, try again in a moment (``Retry-After`` quoted).
- 502 ``upstream-error``, 504 ``upstream-timeout``, any other status -> ``model-error``; with
  ``upstreamStatus`` 429, 503 or 529 (also in a streamed ``error`` event) the message says the
  model is busy and to try again (``Retry-After`` quoted); with 401 or 403, that the provider did
  not accept the site's key.
- A network failure (``fetch`` rejects) -> ``model-error``: a transient failure like a 502, not
  a missing model (``model-unavailable`` is kept for "no model here until configured").
- An abort -> ``AbortedError`` when ``signal`` aborted, else ``aborted``.

The error body's ``code`` and ``message`` (when it matches the schema) are quoted in the
message.

History budget (:mod:`pysite_agent.core.history`): before each request the conversation is
trimmed to ``max_messages`` messages and ``max_body_bytes`` bytes of body (the server's
defaults, 40 and 65,536): the oldest turns are left out whole (a call never without its
result), the current turn is always sent, and its results are shortened when it alone is too
big; when even that does not fit, the run ends with ``conversation-too-long``. When the server
answers 413 ``too-many-messages`` or ``payload-too-large``, the adapter takes the caps from the
error body's ``limits`` (or, without them, half of what it sent), trims, and retries once. What
was left out goes to ``request.on_trim`` (the agent records a trace ``trim`` step).

Never put a provider key in ``headers``: every visitor can read them. :func:`proxy` refuses the
header names providers use for keys (``x-api-key``, ``x-goog-api-key``, ``api-key``) and values
shaped like provider keys (``sk-...``, ``AIza...``); a site's own session token is fine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pysite_agent import ffi
from pysite_agent.core.errors import ErrorCode, SiteAgentError
from pysite_agent.core.history import Trim, fit_messages, json_bytes
from pysite_agent.core.signals import AbortedError
from pysite_agent.core.sse import ServerSentEvent, SSEParser
from pysite_agent.core.text import well_formed_json
from pysite_agent.core.types import ModelRequest
from pysite_agent.core.validation import NotJsonData
from pysite_agent.core.wire import load_reply_text, not_empty, problems

__all__ = ["ProxyModel", "proxy"]

CREDENTIALS: Final = ("omit", "same-origin", "include")
"""``fetch``'s ``credentials`` modes (Fetch standard, ``RequestCredentials``)."""

PROVIDER_KEY_HEADERS: Final = frozenset({"x-api-key", "x-goog-api-key", "api-key"})
"""Header names that carry a provider key (Anthropic, Gemini, Azure OpenAI): refused."""

_PROVIDER_KEY_VALUE = re.compile(
    r"(?:^|[\s:])(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,})"
)
"""Values shaped like OpenAI/Anthropic (``sk-...``) or Google (``AIza...``) keys: refused."""

_STATUS: Final[Mapping[int, tuple[ErrorCode, str]]] = {
    400: ("model-error", "The model endpoint rejected the request"),
    403: (
        "model-unavailable",
        "The model endpoint refused this page's origin; the site owner must add it to the "
        "server's allowed origins",
    ),
    413: (
        "model-error",
        "The conversation is too long for the model endpoint; start a new conversation",
    ),
    429: ("model-error", "The model endpoint is busy; try again in a moment"),
    502: ("model-error", "The model provider behind the endpoint failed"),
    504: ("model-error", "The model provider behind the endpoint did not answer in time"),
}


BUSY_UPSTREAM: Final = frozenset({429, 503, 529})
"""``upstreamStatus`` values that mean the provider is busy (rate limited, unavailable,
Anthropic's overloaded): the visitor reads "the model is busy; try again" (docs/server.md)."""


def _check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("proxy(headers=...) names and values must be strings")
        if name.strip().lower() in PROVIDER_KEY_HEADERS or _PROVIDER_KEY_VALUE.search(value):
            raise ValueError(
                f"proxy(headers=...): {name!r} looks like a model provider's API key. Never put "
                "a provider key in the browser: every visitor can read it. Keep it on your "
                "server (the endpoint adds it)."
            )
        out[name] = value
    return out


STREAM_ACCEPT: Final = "text/event-stream, application/json"
"""The ``Accept`` header when a streaming reply is wanted (protocol v1, streaming)."""

_NOT_SET_UP: Final = frozenset({404, 405, 501})
"""Statuses that mean nothing at ``url`` takes the POST: no proxy server there."""

_STREAM_ERROR_STATUS: Final[Mapping[str, int]] = {
    "upstream-timeout": 504,
    "upstream-error": 502,
    "internal-error": 500,
    "rate-limited": 429,
}
"""An ``error`` event's code -> the HTTP status that code has when it is not streamed."""


def _is_event_stream(response: Any) -> bool:
    kind = _header(response, "content-type") or ""
    return kind.split(";", 1)[0].strip().lower() == "text/event-stream"


def _chunk_bytes(value: Any) -> bytes:
    """A body chunk as bytes: a JS ``Uint8Array`` (Pyodide), or bytes-like (fakes)."""
    if value is None:
        return b""
    to_bytes = getattr(value, "to_bytes", None)
    if callable(to_bytes) and ffi.is_js(value):
        return bytes(to_bytes())
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _header(response: Any, name: str) -> str | None:
    headers = ffi.field(response, "headers")
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        for key, value in headers.items():
            if str(key).lower() == name:
                return str(value)
        return None
    try:
        value = headers.get(name)
    except Exception:  # noqa: BLE001 - a header we cannot read is a header we do not have
        return None
    return None if ffi.is_none(value) else str(value)


DEFAULT_MAX_MESSAGES: Final = 40
"""Messages per request until the server says otherwise (the server's default cap)."""

DEFAULT_MAX_BODY_BYTES: Final = 65_536
"""Request body bytes until the server says otherwise (the server's default cap)."""

_TOO_LARGE: Final = frozenset({"too-many-messages", "payload-too-large"})


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"proxy({name}=...) must be a positive integer")
    return value


class ProxyModel:
    """A model behind the site's endpoint (protocol v1). See the module docstring.

    Attributes:
        url: the endpoint (absolute, or relative to the page).
        credentials: ``fetch``'s credentials mode.
        max_messages: messages per request (lowered when the server tells a smaller cap).
        max_body_bytes: request body bytes (lowered when the server tells a smaller cap).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        credentials: str = "same-origin",
        fetch: Any = None,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        if not isinstance(url, str) or not url.strip():
            raise ValueError("proxy(url): url must be a non-empty string, e.g. '/api/agent'")
        if credentials not in CREDENTIALS:
            raise ValueError(f"proxy(credentials=...): use one of {', '.join(CREDENTIALS)}")
        if fetch is not None and not callable(fetch):
            raise TypeError("proxy(fetch=...): fetch must be callable")
        self.url = url
        self.credentials = credentials
        self.max_messages = _positive("max_messages", max_messages)
        self.max_body_bytes = _positive("max_body_bytes", max_body_bytes)
        self._headers = _check_headers(headers)
        self._fetch = fetch

    @property
    def name(self) -> str:
        return f"proxy ({self.url})"

    def _fetcher(self) -> Any:
        if self._fetch is not None:
            return self._fetch
        fetch = ffi.global_object("fetch")
        if fetch is None:
            raise SiteAgentError(
                "model-unavailable", "There is no fetch() here; pass proxy(url, fetch=...)."
            )
        return fetch

    def _fit(self, request: ModelRequest) -> tuple[dict[str, Any], Trim | None]:
        # Lone surrogates (page text, tool results) become U+FFFD: JSON sent as UTF-8 cannot
        # hold them (pysite_agent.core.text, docs/boundaries.md).
        body = well_formed_json(request.to_json())
        overhead = json_bytes({**body, "messages": []})
        messages, trim = fit_messages(
            body["messages"],
            max_messages=self.max_messages,
            max_bytes=self.max_body_bytes,
            overhead_bytes=overhead,
        )
        body["messages"] = messages
        found = problems("protocol-v1", body, "request")
        if found:
            raise SiteAgentError(
                "model-error",
                "The request does not match protocol v1, so it was not sent: " + "; ".join(found),
            )
        return body, trim

    def _lower_caps(self, text: Any, sent: dict[str, Any], sent_bytes: int) -> bool:
        """Take the caps from a "too large" answer; ``False`` when it is not one."""
        try:
            body = json.loads(text) if isinstance(text, str) and text else None
        except ValueError:
            body = None
        if body is None or problems("protocol-v1", body, "errorBody"):
            return False
        error = body["error"]
        if error["code"] not in _TOO_LARGE:
            return False
        limits = error.get("limits", {})
        max_messages = limits.get("maxMessages")
        max_bytes = limits.get("maxBodyBytes")
        if error["code"] == "too-many-messages" and max_messages is None:
            max_messages = max(1, len(sent["messages"]) // 2)
        if error["code"] == "payload-too-large" and max_bytes is None:
            max_bytes = max(1, sent_bytes // 2)
        if max_messages is not None:
            self.max_messages = min(self.max_messages, max_messages)
        if max_bytes is not None:
            self.max_body_bytes = min(self.max_body_bytes, max_bytes)
        return True

    async def respond(self, request: ModelRequest) -> dict[str, Any]:
        """Trim the history to the caps, POST the request, return the validated reply.

        On a 413 ``too-many-messages`` or ``payload-too-large`` answer, the caps it tells are
        applied and the request is trimmed and sent once more (module docstring).

        Returns:
            The reply dict (``{"type": "tool", ...}`` or ``{"type": "answer", "text"}``).

        Raises:
            SiteAgentError: ``model-error``, ``model-unavailable``, ``bad-reply``, ``aborted``
                (table in the module docstring) or ``conversation-too-long``.
            AbortedError: ``request.signal`` aborted while the request was in flight.
        """
        body, trim = self._fit(request)
        for attempt in (1, 2):
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
            outcome = await self._post(text, request)
            if isinstance(outcome, dict):  # a streamed reply, already checked
                reply = outcome
                break
            status, reply_text, response = outcome
            if status == 200:
                reply = self._reply(reply_text)
                break
            retry = (
                attempt == 1
                and status == 413
                and self._lower_caps(reply_text, body, len(text.encode("utf-8")))
            )
            if retry:
                sent_messages = len(body["messages"])
                body, trim = self._fit(request)
                # Only worth a retry when the new caps left something out.
                retry = json_bytes(body) < len(text.encode("utf-8")) or (
                    len(body["messages"]) < sent_messages
                )
            if not retry:
                raise self._error(status, reply_text, _header(response, "retry-after"))
        if trim is not None and request.on_trim is not None:
            with contextlib.suppress(Exception):  # recording must not break the run
                request.on_trim(trim)
        return reply

    async def _post(
        self, text: str, request: ModelRequest
    ) -> dict[str, Any] | tuple[int, Any, Any]:
        """POST ``text``: a streamed reply (checked), or ``(status, body text, response)``."""
        fetch = self._fetcher()
        signal = request.signal
        on_text = request.on_text
        with ffi.JsAbortLink(signal, for_js=ffi.is_js(fetch)) as link:
            init = {
                "method": "POST",
                "headers": {
                    **self._headers,
                    "content-type": "application/json",
                    "accept": STREAM_ACCEPT if on_text is not None else "application/json",
                },
                "body": text,
                "credentials": self.credentials,
                "signal": link.signal,
            }
            arg = ffi.to_js(init) if ffi.is_js(fetch) else ffi.plain_copy(init)
            try:
                response = await ffi.call_abortable(link, ffi.maybe_await(fetch(self.url, arg)))
                status = ffi.field(response, "status")
                if on_text is not None and status == 200 and _is_event_stream(response):
                    return await self._read_stream(response, link, on_text)
                reply_text = await ffi.call_abortable(link, ffi.maybe_await(response.text()))
            except (asyncio.CancelledError, SiteAgentError):
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised as the project's error
                raise self._failure(exc, signal, "reach") from None
        if not isinstance(status, int):
            raise SiteAgentError(
                "model-error", f"The model endpoint gave no HTTP status ({status!r})."
            )
        return status, reply_text, response

    def _failure(self, exc: BaseException, signal: Any, doing: str) -> BaseException:
        """The project's error for a failed ``fetch`` or body read (``doing``: what failed)."""
        if signal is not None and signal.aborted:
            return AbortedError(signal.reason)
        if ffi.error_name(exc) == "AbortError":
            return SiteAgentError("aborted", "The request to the model endpoint was stopped.")
        what = (
            f"Could not reach the model endpoint {self.url}"
            if doing == "reach"
            else f"The model endpoint's stream broke off ({self.url})"
        )
        return SiteAgentError("model-error", f"{what}: {ffi.from_js_error(exc)}")

    async def _read_stream(
        self, response: Any, link: ffi.JsAbortLink, on_text: Callable[[str], None]
    ) -> dict[str, Any]:
        """Read protocol v1's streaming reply (server-sent events) to its ``reply``.

        ``delta`` text goes to ``on_text`` as it arrives; ``reply`` is checked against the
        schema and returned; ``error`` raises as the matching HTTP status would (502/504);
        a stream that ends without either is ``model-error``. Unknown event names are
        skipped (later additions). The body is read with ``response.body.getReader()``
        (Fetch standard; ``read()`` gives ``{done, value}`` with ``value`` a ``Uint8Array``),
        or with ``response.text()`` when there is no body stream. The reader is cancelled
        when reading stops early, so the connection closes.
        """
        parser = SSEParser()
        stream = ffi.field(response, "body")
        reader = None if stream is None else stream.getReader()
        finished = False
        try:
            if reader is None:
                whole = await ffi.call_abortable(link, ffi.maybe_await(response.text()))
                for event in parser.feed(str(whole)):
                    reply = self._stream_event(event, on_text)
                    if reply is not None:
                        finished = True
                        return reply
            else:
                while True:
                    chunk = await ffi.call_abortable(link, ffi.maybe_await(reader.read()))
                    if ffi.field(chunk, "done"):
                        finished = True
                        break
                    for event in parser.feed_bytes(_chunk_bytes(ffi.field(chunk, "value"))):
                        reply = self._stream_event(event, on_text)
                        if reply is not None:
                            return reply
        finally:
            if reader is not None and not finished:
                with contextlib.suppress(Exception):  # best effort: the stream may be gone
                    await ffi.maybe_await(reader.cancel())
        raise SiteAgentError(
            "model-error", "The model endpoint's stream ended before its reply (cut off)."
        )

    def _stream_event(
        self, event: ServerSentEvent, on_text: Callable[[str], None]
    ) -> dict[str, Any] | None:
        if event.event == "delta":
            try:
                data = json.loads(event.data)
            except ValueError:
                data = None
            text = data.get("text") if isinstance(data, dict) else None
            if not isinstance(text, str) or not text or len(data) != 1:
                raise SiteAgentError(
                    "bad-reply",
                    f"The model endpoint sent a delta that is not {{text}}: {event.data[:200]!r}",
                )
            on_text(text)
            return None
        if event.event == "reply":
            return self._reply(event.data)
        if event.event == "error":
            try:
                body = json.loads(event.data)
            except ValueError:
                body = None
            code = body.get("error", {}).get("code") if isinstance(body, dict) else None
            status = _STREAM_ERROR_STATUS.get(code if isinstance(code, str) else "", 502)
            raise self._error(status, event.data, None, streamed=True)
        return None

    def _reply(self, text: Any) -> dict[str, Any]:
        try:
            value = load_reply_text(text if isinstance(text, str) else str(text))
        except NotJsonData as exc:
            raise SiteAgentError(
                "bad-reply",
                f"The model endpoint's reply is not JSON data ({str(exc)[:120]}): "
                f"{str(text)[:200]!r}",
            ) from None
        found = problems("protocol-v1", value, "reply")
        if found:
            raise SiteAgentError(
                "bad-reply",
                "The model endpoint's reply does not match protocol v1: " + "; ".join(found),
            )
        return not_empty(value)

    def _error(
        self, status: int, text: Any, retry_after: str | None, *, streamed: bool = False
    ) -> SiteAgentError:
        if status in _NOT_SET_UP and not streamed:
            return SiteAgentError(
                "model-unavailable",
                f"The assistant is not set up on this site yet: no model server answers at "
                f"{self.url} (the site owner runs the proxy server there, or chooses other "
                "models).",
            )
        code, sentence = _STATUS.get(
            status,
            ("model-error", "The model endpoint failed"),
        )
        detail = ""
        upstream: Any = None
        try:
            body = json.loads(text) if isinstance(text, str) and text else None
        except ValueError:
            body = None
        if body is not None and not problems("protocol-v1", body, "errorBody"):
            error = body["error"]
            detail = f"{error['code']}: {error['message']}"
            upstream = error.get("upstreamStatus")
            if upstream is not None:
                detail += f" (provider status {upstream})"
        if upstream in BUSY_UPSTREAM:
            code, sentence = "model-error", "The model is busy; try again in a moment"
        elif upstream in (401, 403):
            code, sentence = (
                "model-error",
                "The model provider did not accept this site's key; tell the site owner",
            )
        where = "during the answer" if streamed else f"HTTP {status}"
        message = f"{sentence} ({where}" + (f", {detail})" if detail else ")")
        busy = status == 429 or upstream in BUSY_UPSTREAM
        if busy and retry_after and retry_after.strip().isdigit():
            message += f"; retry after {int(retry_after)} s"
        return SiteAgentError(code, message + ".")


def proxy(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    credentials: str = "same-origin",
    fetch: Any = None,
    max_messages: int = DEFAULT_MAX_MESSAGES,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> ProxyModel:
    """The site's endpoint as a model adapter (protocol v1; see the module docstring).

    Args:
        url: the endpoint, e.g. ``"/api/agent"``.
        headers: extra request headers (e.g. the site's own CSRF token). Never a provider key.
        credentials: ``"same-origin"`` (default), ``"include"`` or ``"omit"`` (``fetch``'s
            credentials mode).
        fetch: ``fetch(url, init)`` to use instead of the browser's (tests, custom agents).
        max_messages: messages per request (default 40, the server's default cap).
        max_body_bytes: request body size in bytes (default 65,536, the server's default).

    Raises:
        ValueError: an empty ``url``, an unknown ``credentials`` mode, a header that looks
            like a provider key, or a cap that is not a positive integer.
        TypeError: ``fetch`` is not callable, or a header is not a string.
    """
    return ProxyModel(
        url,
        headers=headers,
        credentials=credentials,
        fetch=fetch,
        max_messages=max_messages,
        max_body_bytes=max_body_bytes,
    )
