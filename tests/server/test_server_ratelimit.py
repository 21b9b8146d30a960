"""Rate limiting: in memory, and shared by two instances through a real redis-server."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import ORIGIN, Proxy, request_body
from redis_server import RedisServer, free_port, redis_binary
from stub_upstream import KEY, MODEL, AppServer, Reply, StubUpstream, base_url, text_reply

from pysite_agent.server import InternalError, create_proxy_app


def ok(stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, text_reply("openai", "ok"))


def test_429_after_max_in_the_window_then_free_again(proxy: Any, stub: StubUpstream) -> None:
    ok(stub)
    p: Proxy = proxy(rate_limit={"window_ms": 2000, "max": 3})
    statuses = [p.post(request_body()).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    refused = p.post(request_body())
    assert refused.status_code == 429
    assert refused.json() == {
        "error": {
            "code": "rate-limited",
            "message": f"Too many requests. Try again in {refused.headers['retry-after']} seconds.",
        }
    }
    assert refused.headers["retry-after"] in ("1", "2")
    assert refused.headers["access-control-allow-origin"] == ORIGIN
    assert "retry-after" in refused.headers["access-control-expose-headers"]
    assert len(stub.requests) == 3  # a refused request never reaches upstream
    # Another client has its own bucket.
    assert p.post(request_body(), headers={"cf-connecting-ip": "198.51.100.1"}).status_code == 200
    # Preflights and other origins do not count.
    for _ in range(5):
        p.client.options(p.url, headers={"origin": ORIGIN})
        p.post(request_body(), origin="https://evil.example")
    time.sleep(2.1)  # a moving window: all three hits have left it
    assert p.post(request_body()).status_code == 200


def test_default_rate_limit_is_20_a_minute(proxy: Any, stub: StubUpstream) -> None:
    ok(stub)
    p: Proxy = proxy(rate_limit=True)
    headers = {"cf-connecting-ip": "192.0.2.20"}
    statuses = [p.post(request_body(), headers=headers).status_code for _ in range(21)]
    assert statuses == [200] * 20 + [429]
    retry = int(p.post(request_body(), headers=headers).headers["retry-after"])
    assert 50 <= retry <= 60


def test_bad_requests_count_too(proxy: Any, stub: StubUpstream) -> None:
    p: Proxy = proxy(rate_limit={"window_ms": 60_000, "max": 2})
    assert p.post(None, raw=b"junk").status_code == 400
    assert p.post(None, raw=b"junk").status_code == 400
    assert p.post(None, raw=b"junk").status_code == 429


def test_rate_limit_off(proxy: Any, stub: StubUpstream) -> None:
    ok(stub)
    p: Proxy = proxy(rate_limit=False)
    assert all(p.post(request_body()).status_code == 200 for _ in range(25))


def test_window_rounds_up_to_whole_seconds() -> None:
    app = create_proxy_app(
        provider="openai",
        model=MODEL,
        api_key=KEY,
        allowed_origins=[ORIGIN],
        rate_limit={"window_ms": 1500, "max": 1},
    )
    assert app._options.rate_limit is not None
    assert app._options.rate_limit.window_s == 2


# Redis: several instances share one count.


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(redis_binary(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _instance(stub: StubUpstream, storage: str, **options: Any) -> AppServer:
    app = create_proxy_app(
        provider="openai",
        model=MODEL,
        api_key=KEY,
        allowed_origins=[ORIGIN],
        base_url=base_url(stub, "openai"),
        rate_limit_storage=storage,
        **options,
    )
    return AppServer(app)


def _post(client: httpx.Client, server: AppServer, ip: str) -> httpx.Response:
    return client.post(
        f"{server.url}/",
        json=request_body(),
        headers={"origin": ORIGIN, "cf-connecting-ip": ip},
    )


def test_two_instances_share_the_count_in_redis(redis_url: str, stub: StubUpstream) -> None:
    ok(stub)
    limit = {"window_ms": 3000, "max": 4}
    with (
        _instance(stub, redis_url, rate_limit=limit) as one,
        _instance(stub, redis_url, rate_limit=limit) as two,
        httpx.Client(trust_env=False, timeout=10) as client,
    ):
        ip = f"203.0.113.{int(time.time()) % 200}"
        statuses = [_post(client, server, ip).status_code for server in (one, two, one, two)]
        assert statuses == [200, 200, 200, 200]
        refused = _post(client, two, ip)
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 3
        assert _post(client, one, ip).status_code == 429
        assert _post(client, one, "198.51.100.99").status_code == 200
        # In memory, each instance would have counted alone.
        with _instance(stub, "memory://", rate_limit=limit) as three:
            assert _post(client, three, ip).status_code == 200
        time.sleep(3.1)
        assert _post(client, two, ip).status_code == 200


def test_async_prefixed_uri_works_too(redis_url: str, stub: StubUpstream) -> None:
    ok(stub)
    storage = redis_url.replace("redis://", "async+redis://")
    with (
        _instance(stub, storage, rate_limit={"window_ms": 1000, "max": 1}) as server,
        httpx.Client(trust_env=False, timeout=10) as client,
    ):
        ip = "192.0.2.77"
        assert _post(client, server, ip).status_code == 200
        assert _post(client, server, ip).status_code == 429


def _unreachable_store() -> str:
    return f"redis://:{KEY}@127.0.0.1:{free_port()}/0"  # nothing listens; a password in it


def test_unreachable_store_at_run_time_fails_closed_and_is_reported_by_kind(
    stub: StubUpstream,
) -> None:
    """A store that stops answering after start-up: 500, reported as "unreachable"."""
    ok(stub)
    errors: list[Any] = []
    app = create_proxy_app(
        provider="openai",
        model=MODEL,
        api_key=KEY,
        allowed_origins=[ORIGIN],
        base_url=base_url(stub, "openai"),
        rate_limit_storage=_unreachable_store(),
        rate_limit=True,
        on_error=errors.append,
    )

    async def post() -> httpx.Response:
        # No lifespan here: the start-up check does not run, as when the store goes away later.
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
            return await client.post(
                "/",
                json=request_body(),
                headers={"origin": ORIGIN, "cf-connecting-ip": "192.0.2.1"},
            )

    response = asyncio.run(post())
    assert response.status_code == 500
    assert response.json() == {"error": {"code": "internal-error", "message": "Internal error."}}
    assert KEY not in response.text
    assert stub.requests == []
    [error] = errors
    assert isinstance(error, InternalError)
    assert error.message == "rate-limit store unreachable"
    assert KEY not in error.detail and KEY not in error.trace and KEY not in str(error)


def test_the_default_log_names_the_store_problem(
    stub: StubUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_proxy_app(
        provider="openai",
        model=MODEL,
        api_key=KEY,
        allowed_origins=[ORIGIN],
        base_url=base_url(stub, "openai"),
        rate_limit_storage=_unreachable_store(),
        rate_limit=True,
    )

    async def post() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
            response = await client.post("/", json=request_body(), headers={"origin": ORIGIN})
            return response.status_code

    with caplog.at_level(logging.WARNING, logger="pysite_agent.server"):
        assert asyncio.run(post()) == 500
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
    assert any(line.get("message") == "rate-limit store unreachable" for line in lines), lines
    assert KEY not in caplog.text


def test_unreachable_store_fails_the_start_up_with_a_message_naming_it(stub: StubUpstream) -> None:
    app = create_proxy_app(
        provider="openai",
        model=MODEL,
        api_key=KEY,
        allowed_origins=[ORIGIN],
        base_url=base_url(stub, "openai"),
        rate_limit_storage=_unreachable_store(),
        rate_limit=True,
    )
    sent: list[dict[str, Any]] = []

    async def lifespan() -> None:
        messages = [{"type": "lifespan.startup"}]

        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(app({"type": "lifespan"}, receive, send), 15)

    asyncio.run(lifespan())
    [failed] = sent
    assert failed["type"] == "lifespan.startup.failed"
    assert failed["message"].startswith("rate-limit store unreachable: the 'redis' store")
    assert KEY not in failed["message"]


def test_a_reachable_store_passes_the_start_up_check(redis_url: str, stub: StubUpstream) -> None:
    ok(stub)
    with (
        _instance(stub, redis_url, rate_limit={"window_ms": 1000, "max": 5}) as server,
        httpx.Client(trust_env=False, timeout=10) as client,
    ):
        assert _post(client, server, "192.0.2.50").status_code == 200
