"""Several processes, one limit: the command line with ``--workers 2`` and a second instance
(another machine behind a load balancer), all counting in one real ``redis-server``; Redis
going away mid-run and coming back; the health route reporting the store's state.

Everything runs on 127.0.0.1: redis-server on a free port, a stub upstream in this process,
the proxies as real processes (``python -m pysite_agent.server``).
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ORIGIN, request_body
from redis_server import RedisServer, free_port, redis_binary
from stub_upstream import KEY, MODEL, AppServer, Reply, StubUpstream, base_url, text_reply

from pysite_agent.server import create_proxy_app, with_health

LIMIT = 12
WINDOW_MS = 120_000


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = redis_binary()
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Instance:
    """``python -m pysite_agent.server`` in its own process (with ``workers`` processes)."""

    def __init__(self, stub: StubUpstream, redis: RedisServer, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["OPENAI_API_KEY"] = KEY
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pysite_agent.server",
                "--provider",
                "openai",
                "--model",
                MODEL,
                "--allowed-origin",
                ORIGIN,
                "--port",
                str(self.port),
                "--base-url",
                base_url(stub, "openai"),
                "--rate-limit-max",
                str(LIMIT),
                "--rate-limit-window-ms",
                str(WINDOW_MS),
                "--rate-limit-storage",
                redis.url,
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2, trust_env=False).is_success:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the proxy on {self.url} did not come up")
            time.sleep(0.1)

    def workers(self) -> set[int]:
        """The worker processes' ids (children of the main process; itself without workers)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = {int(pid) for pid in children.read_text().split()} if children.exists() else set()
        # uvicorn's multiprocess mode may keep a helper process (multiprocessing's resource
        # tracker): workers are the children that listen on our port.
        return {pid for pid in found if self.port in _listening_ports(pid)} or {self.process.pid}

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err.decode("utf-8", "replace")


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def _tcp_table() -> list[tuple[int, int, str, str]]:
    """(local port, remote port, state, inode) of every IPv4 TCP socket (/proc/net/tcp)."""
    rows = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
        rows.append((int(local.split(":")[1], 16), int(remote.split(":")[1], 16), state, inode))
    return rows


def _listening_ports(pid: int) -> set[int]:
    inodes = _socket_inodes(pid)
    return {local for local, _, state, inode in _tcp_table() if state == "0A" and inode in inodes}


def _serving_workers(instance: Instance, client_ports: set[int]) -> set[int]:
    """The worker processes holding the server side of our connections to ``instance``."""
    table = _tcp_table()
    holders = set()
    for pid in instance.workers():
        inodes = _socket_inodes(pid)
        for local, remote, _, inode in table:
            if local == instance.port and remote in client_ports and inode in inodes:
                holders.add(pid)
    return holders


@pytest.fixture(scope="module")
def upstream() -> Iterator[StubUpstream]:
    stub = StubUpstream(lambda r: Reply(200, text_reply("openai", "ok"))).start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture(scope="module")
def instances(upstream: StubUpstream, redis: RedisServer) -> Iterator[list[Instance]]:
    """Two instances sharing one Redis: one with two worker processes, one with one."""
    started = [Instance(upstream, redis, workers=2), Instance(upstream, redis, workers=1)]
    try:
        for instance in started:
            instance.wait_until_up()
        assert len(started[0].workers()) == 2, "--workers 2 should start two processes"
        yield started
    finally:
        for instance in started:
            err = instance.stop()
            assert "Traceback" not in err, err


def _post(client: httpx.Client, url: str, bucket: str) -> httpx.Response:
    return client.post(
        url, json=request_body(), headers={"origin": ORIGIN, "cf-connecting-ip": bucket}
    )


def _our_ports(server_port: int) -> set[int]:
    """Local ports of this process's open connections to ``server_port``."""
    inodes = _socket_inodes(os.getpid())
    return {
        local
        for local, remote, state, inode in _tcp_table()
        if remote == server_port and state == "01" and inode in inodes
    }


def _open_spread_connections(instance: Instance) -> httpx.Client:
    """A client with several keep-alive connections to ``instance``, opened at once until at
    least two worker processes hold some of them. Each connection carries one health request
    (the rate limit does not count those)."""
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    for _ in range(8):
        client = httpx.Client(trust_env=False, timeout=10, limits=limits)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda _, c=client: c.get(f"{instance.url}/healthz"), range(8)))
        if len(_serving_workers(instance, _our_ports(instance.port))) >= 2:
            return client
        client.close()
    raise AssertionError("the kernel gave every connection to one worker, eight times")


def test_one_limit_across_worker_processes_and_instances(
    instances: list[Instance], upstream: StubUpstream
) -> None:
    workers2, single = instances
    bucket = "198.51.100.21"
    spread = _open_spread_connections(workers2)
    other = httpx.Client(trust_env=False, timeout=10)
    try:
        before = len(upstream.requests)
        jobs = [(spread, workers2.url) if i % 3 else (other, single.url) for i in range(30)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda job: _post(job[0], job[1], bucket), jobs))
        statuses = [a.status_code for a in answers]
        # Exactly LIMIT requests pass, whichever process counted them, even when they arrive
        # at the same time: the moving window is one atomic script in Redis.
        assert statuses.count(200) == LIMIT, statuses
        assert statuses.count(429) == 30 - LIMIT, statuses
        assert len(upstream.requests) - before == LIMIT
        for answer in answers:
            if answer.status_code == 429:
                assert answer.json()["error"]["code"] == "rate-limited"
                assert 1 <= int(answer.headers["retry-after"]) <= WINDOW_MS // 1000
        # Both instances refuse the bucket now; another bucket is free everywhere.
        assert _post(other, single.url, bucket).status_code == 429
        assert _post(spread, workers2.url, bucket).status_code == 429
        assert _post(other, single.url, "198.51.100.22").status_code == 200
    finally:
        spread.close()
        other.close()


def test_redis_going_away_fails_closed_then_recovers(
    instances: list[Instance], redis: RedisServer
) -> None:
    workers2, single = instances
    bucket = "198.51.100.31"
    with httpx.Client(trust_env=False, timeout=10) as client:
        for instance in instances:
            assert _post(client, f"{instance.url}/", bucket).status_code == 200
            health = client.get(f"{instance.url}/healthz")
            assert (health.status_code, health.json()) == (
                200,
                {"status": "ok", "rateLimitStore": "ok"},
            )
        redis.stop()
        try:
            for instance in instances * 2:
                started = time.monotonic()
                refused = _post(client, f"{instance.url}/", bucket)
                # Fails closed, at once: no request passes uncounted, none hangs.
                assert refused.status_code == 500
                assert refused.json() == {
                    "error": {"code": "internal-error", "message": "Internal error."}
                }
                assert time.monotonic() - started < 5
                health = client.get(f"{instance.url}/healthz")
                assert (health.status_code, health.json()) == (
                    503,
                    {"status": "unavailable", "rateLimitStore": "unreachable"},
                )
            for instance in instances:
                assert instance.process.poll() is None  # no crash
                assert len(instance.workers()) == (2 if instance is workers2 else 1)
        finally:
            redis.start()
        # Back: each instance reconnects by itself.
        for instance in instances:
            deadline = time.monotonic() + 15
            while client.get(f"{instance.url}/healthz").status_code != 200:
                assert time.monotonic() < deadline, "the proxy did not see Redis come back"
                time.sleep(0.1)
        # Redis kept nothing (no persistence): the window starts over, and holds exactly.
        statuses = [
            _post(client, f"{instances[i % 2].url}/", bucket).status_code for i in range(LIMIT + 2)
        ]
        assert statuses == [200] * LIMIT + [429, 429]


def test_a_store_that_stops_answering_does_not_hold_requests(upstream: StubUpstream) -> None:
    # A host that accepts connections but never answers (a hung store, dropped packets):
    # each request gives up within the store timeout and fails closed.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections complete in the backlog; nothing ever answers
    port = silent.getsockname()[1]
    try:
        app = create_proxy_app(
            provider="openai",
            model=MODEL,
            api_key=KEY,
            allowed_origins=[ORIGIN],
            base_url=base_url(upstream, "openai"),
            rate_limit_storage=f"redis://127.0.0.1:{port}/0",
        )
        # No lifespan: the start-up check would refuse this store before any request.
        server = AppServer(with_health(app), lifespan="off")
        with server, httpx.Client(trust_env=False, timeout=20) as c:
            started = time.monotonic()
            refused = _post(c, f"{server.url}/", "198.51.100.41")
            assert refused.status_code == 500
            assert time.monotonic() - started < 8
            started = time.monotonic()
            health = c.get(f"{server.url}/healthz")
            assert health.status_code == 503
            assert health.json()["rateLimitStore"] == "unreachable"
            assert time.monotonic() - started < 8
            server.call(app.aclose())
    finally:
        silent.close()


def test_workers_option(capsys: pytest.CaptureFixture[str]) -> None:
    from pysite_agent.server.__main__ import parser

    base = ["--provider", "openai", "--model", MODEL, "--allowed-origin", ORIGIN]
    assert parser().parse_args(base).workers == 1
    assert parser().parse_args([*base, "--workers", "4"]).workers == 4
    for bad in ("0", "-1", "65", "two"):
        with pytest.raises(SystemExit):
            parser().parse_args([*base, "--workers", bad])
        assert "is not a number of workers: use 1 to 64" in capsys.readouterr().err


def test_workers_counting_alone_are_named(upstream: StubUpstream) -> None:
    # With memory:// every worker counts alone: the command says so at start.
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = KEY
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pysite_agent.server",
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--allowed-origin",
            ORIGIN,
            "--port",
            str(port),
            "--base-url",
            base_url(upstream, "openai"),
            "--workers",
            "2",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2, trust_env=False)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.1)
        assert health.json() == {"status": "ok", "rateLimitStore": "ok"}
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    text = err.decode()
    assert '"event": "rate-limit-per-worker"' in text
    assert "each of the 2 workers counts alone with memory://" in text
    assert KEY not in text
