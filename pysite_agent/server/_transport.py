"""The upstream HTTP transport of the app's own client: httpx's interface, aiohttp underneath.

httpx's default transport (httpcore and h11, in Python) took most of the proxy's CPU time per
request; aiohttp's client parses HTTP in C and needs about a quarter of that CPU per request on
the same loopback stub (``benchmarks/proxy_server.py`` has the end-to-end figures). The app
keeps speaking httpx (requests, responses, exceptions, ``http_client=``), so only this seam
knows aiohttp.

What it keeps from the transport it replaces: one connection pool (``max_connections``) with
keep-alive, no cookies, no redirects, TLS verified with the system's certificates
(``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured by OpenSSL), ``HTTP(S)_PROXY`` / ``NO_PROXY``
from the environment (read at the first request to a host), the body passed on undecoded
(httpx's response decodes it), and aiohttp's errors raised as the httpx exceptions they
correspond to:

==========================================================  ============================
aiohttp                                                      httpx
==========================================================  ============================
``ConnectionTimeoutError``                                   ``ConnectTimeout``
``SocketTimeoutError``, ``ServerTimeoutError``, timeouts     ``ReadTimeout``
``ClientConnectorError`` (refused, DNS, proxy unreachable)   ``ConnectError``
``ServerDisconnectedError``, ``ClientPayloadError``,         ``RemoteProtocolError``
``ClientResponseError`` (a broken or cut-off answer)
any other ``ClientError`` or ``OSError``                     ``ReadError``
==========================================================  ============================
"""

from __future__ import annotations

import contextlib
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx

# aiohttp adds these unless told not to; the app sets its own accept and user-agent, and
# asks for no compression (small JSON replies; no CPU spent inflating them).
_SKIP_AUTO_HEADERS = ("Accept-Encoding", "User-Agent")
_DROPPED = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(_text(exc)) from exc
    except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
        raise httpx.ReadTimeout(_text(exc)) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(_text(exc)) from exc
    except (
        aiohttp.ServerDisconnectedError,
        aiohttp.ClientPayloadError,
        aiohttp.ClientResponseError,
    ) as exc:
        raise httpx.RemoteProtocolError(_text(exc)) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise httpx.ReadError(_text(exc)) from exc


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Body(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx reads it: chunks as they arrive."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def aclose(self) -> None:
        # Read to the end: the connection goes back to the pool; else it is closed (a reply
        # abandoned half-way, e.g. when the browser went away during a streamed answer).
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends requests with one ``aiohttp.ClientSession``.

    Args:
        max_connections: connections open at once, all hosts together.
        keepalive_s: how long an idle connection is kept for the next request.

    The session is made on the first request (aiohttp needs the running event loop) and
    closed by :meth:`aclose`.
    """

    def __init__(self, *, max_connections: int = 256, keepalive_s: float = 5.0) -> None:
        self._max_connections = max_connections
        self._keepalive_s = keepalive_s
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, tuple[str | None, aiohttp.BasicAuth | None]] = {}
        self._timeouts: tuple[float | None, aiohttp.ClientTimeout] | None = None

    def _proxy_for(self, url: httpx.URL) -> tuple[str | None, aiohttp.BasicAuth | None]:
        """The egress proxy for ``url`` from ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY``
        and ``NO_PROXY`` (any case), as httpx reads them; looked up once per origin."""
        origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
        found = self._proxies.get(origin)
        if found is None:
            found = (None, None)
            proxies = urllib.request.getproxies()
            chosen = proxies.get(url.scheme) or proxies.get("all")
            if chosen and not urllib.request.proxy_bypass(url.host):
                parsed = urllib.parse.urlsplit(chosen if "://" in chosen else f"http://{chosen}")
                auth = None
                if parsed.username is not None:
                    auth = aiohttp.BasicAuth(
                        urllib.parse.unquote(parsed.username),
                        urllib.parse.unquote(parsed.password or ""),
                    )
                host = parsed.netloc.rsplit("@", 1)[-1]
                found = (f"{parsed.scheme}://{host}", auth)
            self._proxies[origin] = found
        return found

    def _timeout(self, connect_s: float | None) -> aiohttp.ClientTimeout:
        """The connection timeout only: the app bounds every call with its own deadline, and a
        read timeout would re-arm a timer for every chunk received."""
        if self._timeouts is None or self._timeouts[0] != connect_s:
            self._timeouts = (connect_s, aiohttp.ClientTimeout(total=None, sock_connect=connect_s))
        return self._timeouts[1]

    def _make_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            keepalive_timeout=self._keepalive_s,
            ssl=ssl.create_default_context(),
        )
        # Not trust_env: aiohttp would then look up netrc and the proxy variables in a thread
        # for every request (two thread hops, most of its time here); the proxy variables are
        # read once instead (:meth:`_proxy_for`).
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # a provider's cookies are never kept
            auto_decompress=False,
            skip_auto_headers=_SKIP_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=None),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._session is None:
            self._session = self._make_session()
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in request.headers.raw
            if k.lower() not in _DROPPED
        ]
        proxy, proxy_auth = self._proxy_for(request.url)
        with _as_httpx_errors():
            response = await self._session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                proxy=proxy,
                proxy_auth=proxy_auth,
                timeout=self._timeout(timeouts.get("connect")),
            )
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_Body(response),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
