"""Per-client rate limit on the ``limits`` library's moving window.

The storage comes from a URI: ``memory://`` (one process) or a shared store such as
``redis://host:6379/0`` so that several instances count together. ``redis://`` URIs use the
``redis`` package (``pip install 'pysite-agent[server,redis]'``).
"""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItemPerSecond
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from pysite_agent.server._options import RateLimit

NAMESPACE = "pysite-agent"
STORE_TIMEOUT_S = 1.0


IPV6_PREFIX = 64
"""IPv6 clients are counted per /64: one end site (a home, a phone) gets a whole /64 and can
pick any address in it (RFC 4291 section 2.5.1, RFC 6177), so counting per address would let
a client pass any limit by rotating its host bits."""


def client_bucket(address: str) -> str:
    """The rate-limit bucket of a client address.

    IPv4: the address. IPv6: its /64 network (``2001:db8:1:2::/64``), with a zone (``%eth0``)
    or brackets dropped. An IPv4-mapped IPv6 address (``::ffff:192.0.2.1``, what a dual-stack
    socket reports for an IPv4 client) is that IPv4 client. Text that is not an address is its
    own bucket.
    """
    import ipaddress

    text = address.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)


UNREACHABLE = "rate-limit store unreachable"
FAILED = "rate-limit store error"


class StoreProblem(Exception):
    """The rate-limit store cannot be used. ``str(exc)`` names the kind of problem
    (:data:`UNREACHABLE` or :data:`FAILED`) and the store by its scheme only (the URI may hold
    a password)."""

    def __init__(self, kind: str, scheme: str, detail: str) -> None:
        super().__init__(f"{kind}: the {scheme!r} store ({detail})")
        self.kind = kind


def problem_kind(exc: BaseException) -> str:
    """:data:`UNREACHABLE` for connection failures and timeouts (builtin ones, or a store
    client's own, such as redis-py's ``ConnectionError``), else :data:`FAILED`."""
    for cls in type(exc).__mro__:
        if cls in (OSError, ConnectionError, TimeoutError) or any(
            word in cls.__name__ for word in ("Connection", "Timeout")
        ):
            return UNREACHABLE
    return FAILED


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: int = 0


def _async_uri(uri: str) -> tuple[str, dict[str, Any]]:
    scheme = uri.split("://", 1)[0].lower()
    if not scheme.startswith("async+"):
        uri = f"async+{uri}"
        scheme = f"async+{scheme}"
    options: dict[str, Any] = {}
    if scheme.startswith(("async+redis", "async+rediss")):
        options["implementation"] = "redispy"
        # A store that stops answering (a host gone, packets dropped) must not hold requests
        # open: each connection attempt and each command gives up after this long (the URI's
        # own socket_timeout / socket_connect_timeout, if given, win).
        options["socket_connect_timeout"] = STORE_TIMEOUT_S
        options["socket_timeout"] = STORE_TIMEOUT_S
    return uri, options


class Limiter:
    def __init__(self, config: RateLimit) -> None:
        uri, options = _async_uri(config.storage_uri)
        try:
            storage = storage_from_string(uri, **options)
        except Exception as exc:  # noqa: BLE001 - any failure: the URI must not leak
            # The URI may hold a password: name only its scheme.
            scheme = uri.split("://", 1)[0]
            raise ValueError(
                f"rate_limit_storage: cannot use a {scheme!r} store ({type(exc).__name__})"
            ) from None
        self._scheme = uri.split("://", 1)[0].removeprefix("async+")
        self._storage = storage
        self._strategy = MovingWindowRateLimiter(storage)
        self._item = RateLimitItemPerSecond(config.max, config.window_s, namespace=NAMESPACE)
        self._window_s = config.window_s

    async def hit(self, bucket: str) -> Decision:
        """Count one request for ``bucket``; raises whatever the store raises."""
        if await self._strategy.hit(self._item, "ip", bucket):
            return Decision(True)
        stats = await self._strategy.get_window_stats(self._item, "ip", bucket)
        wait = math.ceil(stats.reset_time - time.time())
        return Decision(False, max(1, min(wait, self._window_s)))

    async def check(self) -> None:
        """Ask the store whether it answers (start-up check).

        Raises:
            StoreProblem: it does not answer, or its check fails.
        """
        try:
            healthy = self._storage.check()
            if inspect.isawaitable(healthy):
                healthy = await healthy
        except Exception as exc:  # noqa: BLE001 - reported by kind, never with the URI
            raise StoreProblem(problem_kind(exc), self._scheme, type(exc).__name__) from None
        if not healthy:
            raise StoreProblem(UNREACHABLE, self._scheme, "its health check failed")

    def problem(self, exc: BaseException) -> StoreProblem:
        """``exc``, raised by the store while counting, as a :class:`StoreProblem`."""
        return StoreProblem(problem_kind(exc), self._scheme, type(exc).__name__)

    async def aclose(self) -> None:
        """Close the store's client connections, where the store has any (Redis)."""
        # The limits library has no close(); its Redis stores keep a redis-py client on a
        # "bridge". Close it if it is there, so no connection outlives the event loop.
        bridge = getattr(self._storage, "bridge", None)
        client = getattr(bridge, "storage", None)
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()
