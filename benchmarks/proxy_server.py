"""Benchmark the proxy against calling the stub upstream directly (loopback only, bounded).

    .venv/bin/python benchmarks/proxy_server.py            # the full run (a few minutes)
    .venv/bin/python benchmarks/proxy_server.py --quick    # fewer requests
    .venv/bin/python benchmarks/proxy_server.py --compare-with ../old-checkout

Processes on 127.0.0.1: a stub upstream (uvicorn, answers an OpenAI-shaped tool call at once),
the proxy (``python -m pysite_agent.server`` under uvicorn, OpenAI provider, rate limit on with a
limit far above the load), with ``--compare-with DIR`` a second proxy run from another checkout
(the code before a change, same interpreter and packages), and this load generator (asyncio +
httpx).

The machine is shared, so its load changes from second to second. Every comparison is therefore
made in the same time slices: at one client the requests go in turn to the stub, the proxy (and
the other proxy), one after the other, and the latencies of each are compared (median, p99;
"added" is the proxy's minus the stub's); at 16 and 64 clients the targets take turns in short
blocks, several rounds, and the throughput of each is its requests over its own time. The CPU
time the proxy process used per request (from /proc, user + system) is reported too: unlike
latency it hardly depends on the load. Then 10,000 requests through the proxy at 16 clients,
reading its RSS before and after. Errors are counted (any answer but 200). Load averages are
recorded at the start and the end. Not a test and not run in CI. Results are printed and
written to ``benchmarks/results/proxy_server.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ORIGIN = "http://localhost:8000"
KEY = "sk-bench-not-a-real-key-000000000000"
DEADLINE_S = 420  # the whole run stops here, whatever is left

REQUEST = {
    "version": 1,
    "instructions": "You are an assistant embedded in a web page.",
    "messages": [{"role": "user", "content": "add two mugs to my cart"}],
    "tools": [
        {
            "name": "add_to_cart",
            "description": "Add a product to the cart.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "product": {"type": "string"},
                    "quantity": {"type": "integer", "minimum": 1},
                },
                "required": ["product"],
            },
        }
    ],
}
UPSTREAM_REPLY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "add_to_cart",
                                "arguments": '{"product": "mug", "quantity": 2}',
                            },
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
).encode()


async def stub_app(scope: Any, receive: Any, send: Any) -> None:
    """The stub upstream: reads the body, answers the recorded tool call."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(UPSTREAM_REPLY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": UPSTREAM_REPLY})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url, timeout=1, trust_env=False)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not come up") from None
            time.sleep(0.05)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    """User + system CPU time of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Target:
    """Where requests go: the stub directly, or a proxy; with what it measured."""

    def __init__(self, name: str, url: str, body: bytes, headers: dict[str, str], pid: int):
        self.name, self.url, self.body, self.headers, self.pid = name, url, body, headers, pid
        self.reset()

    def reset(self) -> None:
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.elapsed_s = 0.0
        self.cpu_s = 0.0

    async def send(self, client: httpx.AsyncClient) -> None:
        started = time.perf_counter()
        try:
            response = await client.post(self.url, content=self.body, headers=self.headers)
            kind = "" if response.status_code == 200 else str(response.status_code)
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
        self.latencies.append((time.perf_counter() - started) * 1000)
        if kind:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def summary(self) -> dict[str, Any]:
        done = sorted(self.latencies)
        n = len(done)
        return {
            "requests": n,
            "errors": sum(self.errors.values()),
            "error_kinds": dict(self.errors),
            "rps": round(n / self.elapsed_s, 1) if self.elapsed_s else None,
            "median_ms": round(statistics.median(done), 3),
            "p99_ms": round(done[min(n - 1, int(n * 0.99))], 3),
            "cpu_ms_per_request": round(self.cpu_s * 1000 / n, 3),
        }


def client(connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(trust_env=False, timeout=30, limits=limits)


async def one_client(targets: list[Target], rounds: int) -> None:
    """One client; each round sends one request to each target in turn."""
    clients = {t.name: client(1) for t in targets}
    try:
        for t in targets:
            for _ in range(20):  # open the connection, warm up
                await t.send(clients[t.name])
            t.reset()
        for _ in range(rounds):
            for t in targets:
                cpu = cpu_s(t.pid)
                started = time.perf_counter()
                await t.send(clients[t.name])
                t.elapsed_s += time.perf_counter() - started
                t.cpu_s += cpu_s(t.pid) - cpu
    finally:
        for c in clients.values():
            await c.aclose()


async def many_clients(targets: list[Target], clients_n: int, rounds: int, block: int) -> None:
    """``clients_n`` clients; each round sends ``block`` requests to each target in turn."""
    clients = {t.name: client(clients_n) for t in targets}
    try:
        for t in targets:
            await blast(t, clients[t.name], clients_n, clients_n * 4)  # open, warm up
            t.reset()
        for _ in range(rounds):
            for t in targets:
                cpu = cpu_s(t.pid)
                started = time.perf_counter()
                await blast(t, clients[t.name], clients_n, block)
                t.elapsed_s += time.perf_counter() - started
                t.cpu_s += cpu_s(t.pid) - cpu
    finally:
        for c in clients.values():
            await c.aclose()


async def blast(t: Target, c: httpx.AsyncClient, clients_n: int, total: int) -> None:
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await t.send(c)

    await asyncio.gather(*(worker() for _ in range(clients_n)))


def start_proxy(port: int, stub_port: int, source: Path | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pysite_agent.server",
            "--provider",
            "openai",
            "--model",
            "bench",
            "--allowed-origin",
            ORIGIN,
            "--port",
            str(port),
            "--base-url",
            f"http://127.0.0.1:{stub_port}/v1",
            "--rate-limit-window-ms",
            "1000",
            "--rate-limit-max",
            "1000000",
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=source,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve-stub", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer requests per level")
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="DIR",
        help="also run the proxy from this checkout (e.g. a git worktree of an older commit)",
    )
    args = parser.parse_args()
    if args.serve_stub:
        import uvicorn

        uvicorn.run(
            stub_app, host="127.0.0.1", port=args.serve_stub, log_level="warning", access_log=False
        )
        return 0

    run_started = time.monotonic()
    load_at_start = os.getloadavg()
    print(
        f"load average at start: {load_at_start[0]:.2f} (1 min), {os.cpu_count()} CPUs", flush=True
    )
    stub_port, proxy_port, other_port = free_port(), free_port(), free_port()
    stub = subprocess.Popen([sys.executable, __file__, "--serve-stub", str(stub_port)])
    processes = [stub, start_proxy(proxy_port, stub_port, None)]
    if args.compare_with:
        processes.append(start_proxy(other_port, stub_port, args.compare_with.resolve()))
    results: dict[str, Any] = {"levels": [], "memory": {}}
    try:
        wait_for(f"http://127.0.0.1:{stub_port}/", stub)
        wait_for(f"http://127.0.0.1:{proxy_port}/healthz", processes[1])
        if args.compare_with:
            wait_for(f"http://127.0.0.1:{other_port}/healthz", processes[2])
        proxy_body = json.dumps(REQUEST).encode()
        # What the proxy sends upstream for this request, so the direct calls carry the same.
        direct_body = json.dumps(
            {
                "model": "bench",
                "messages": [
                    {"role": "system", "content": REQUEST["instructions"]},
                    *REQUEST["messages"],
                ],
                "max_completion_tokens": 1024,
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "add_to_cart",
                            "description": "Add a product to the cart.",
                            "parameters": REQUEST["tools"][0]["inputSchema"],
                        },
                    }
                ],  # type: ignore[index]
                "tool_choice": "auto",
                "parallel_tool_calls": False,
            }
        ).encode()
        json_headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
        proxy_headers = {"content-type": "application/json", "origin": ORIGIN}
        stub_url = f"http://127.0.0.1:{stub_port}/v1/chat/completions"
        targets = [
            Target("direct", stub_url, direct_body, json_headers, stub.pid),
            Target(
                "proxy",
                f"http://127.0.0.1:{proxy_port}/",
                proxy_body,
                proxy_headers,
                processes[1].pid,
            ),
        ]
        if args.compare_with:
            targets.append(
                Target(
                    "before",
                    f"http://127.0.0.1:{other_port}/",
                    proxy_body,
                    proxy_headers,
                    processes[2].pid,
                )
            )
        scale = 4 if args.quick else 1
        plan = [(1, 2000 // scale, 1), (16, 6, 400), (64, 3, 400)]
        for clients_n, rounds, block in plan:
            if time.monotonic() - run_started > DEADLINE_S:
                break
            for t in targets:
                t.reset()
            if clients_n == 1:
                asyncio.run(one_client(targets, rounds))
            else:
                asyncio.run(many_clients(targets, clients_n, rounds, block // scale))
            level: dict[str, Any] = {"clients": clients_n, "load_average": os.getloadavg()}
            direct = targets[0].summary()
            level["direct"] = direct
            line = (
                f"{clients_n:>3} clients (load {level['load_average'][0]:.1f}): direct "
                f"{direct['rps']} req/s, median {direct['median_ms']} ms, "
                f"p99 {direct['p99_ms']} ms, stub CPU {direct['cpu_ms_per_request']} ms/request"
            )
            for t in targets[1:]:
                through = t.summary()
                through["added_median_ms"] = round(through["median_ms"] - direct["median_ms"], 3)
                through["added_p99_ms"] = round(through["p99_ms"] - direct["p99_ms"], 3)
                through["throughput_vs_direct"] = round(through["rps"] / direct["rps"], 3)
                level[t.name] = through
                line += (
                    f"\n      {t.name}: {through['rps']} req/s "
                    f"({through['throughput_vs_direct']:.0%} of direct), median "
                    f"{through['median_ms']} ms, p99 {through['p99_ms']} ms, added median "
                    f"{through['added_median_ms']} ms, p99 {through['added_p99_ms']} ms, "
                    f"CPU {through['cpu_ms_per_request']} ms/request, errors "
                    f"{through['errors']} {through['error_kinds']}"
                )
            results["levels"].append(level)
            print(line, flush=True)
        total = 2500 if args.quick else 10_000
        proxy = targets[1]
        proxy.reset()
        before = rss_kb(proxy.pid)
        with_clients = client(16)
        started = time.perf_counter()
        asyncio.run(blast_and_close(proxy, with_clients, 16, total))
        proxy.elapsed_s = time.perf_counter() - started
        after = rss_kb(proxy.pid)
        run = proxy.summary()
        results["memory"] = {
            "requests": run["requests"],
            "errors": run["errors"],
            "rss_before_kb": before,
            "rss_after_kb": after,
            "rps": run["rps"],
        }
        print(
            f"memory over {run['requests']} requests (16 clients): RSS {before} kB -> {after} kB "
            f"({after - before:+d} kB), errors {run['errors']}, {run['rps']} req/s",
            flush=True,
        )
        results["cpus"] = os.cpu_count()
        results["load_average_at_start"] = load_at_start
        results["load_average"] = os.getloadavg()
        results["python"] = sys.version.split()[0]
        print(f"load average at end: {results['load_average'][0]:.2f}", flush=True)
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "proxy_server.json").write_text(json.dumps(results, indent=2))
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


async def blast_and_close(t: Target, c: httpx.AsyncClient, clients_n: int, total: int) -> None:
    async with c:
        await blast(t, c, clients_n, total)


if __name__ == "__main__":
    sys.exit(main())
