"""Benchmark the proxy against calling the stub upstream directly (loopback only, bounded).

    .venv/bin/python benchmarks/proxy_server.py            # the full run (about a minute)
    .venv/bin/python benchmarks/proxy_server.py --quick    # fewer requests

Three processes on 127.0.0.1: a stub upstream (uvicorn, answers an OpenAI-shaped tool call at
once), the proxy (``python -m pysite_agent.server`` under uvicorn, OpenAI provider, rate limit
on with a limit far above the load), and this load generator (asyncio + httpx, N clients each
sending requests back to back). For 1, 16 and 64 clients it measures requests per second and
latency, first straight to the stub, then through the proxy; "added" latency is the difference
of the two. Then it sends 10,000 requests through the proxy and reads the proxy's RSS before
and after. Errors are counted (any answer but 200). Not a test and not run in CI.
Results are printed and written to ``benchmarks/results/proxy_server.json``.
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
DEADLINE_S = 240  # the whole run stops here, whatever is left

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


async def load(
    url: str, body: bytes, headers: dict[str, str], clients: int, total: int
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    kinds: dict[str, int] = {}
    remaining = total
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(trust_env=False, timeout=30, limits=limits) as client:

        async def worker() -> None:
            nonlocal remaining, errors
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                try:
                    response = await client.post(url, content=body, headers=headers)
                    ok = response.status_code == 200
                    kind = str(response.status_code)
                except httpx.HTTPError as exc:
                    ok = False
                    kind = type(exc).__name__
                if not ok:
                    kinds[kind] = kinds.get(kind, 0) + 1
                latencies.append((time.perf_counter() - started) * 1000)
                errors += 0 if ok else 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": errors,
        "error_kinds": kinds,
        "rps": round(len(latencies) / elapsed, 1),
        "median_ms": round(statistics.median(latencies), 3),
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve-stub", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer requests per level")
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
    stub_port, proxy_port = free_port(), free_port()
    stub = subprocess.Popen([sys.executable, __file__, "--serve-stub", str(stub_port)])
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    proxy = subprocess.Popen(
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
            str(proxy_port),
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
    )
    results: dict[str, Any] = {"levels": [], "memory": {}}
    try:
        stub_url = f"http://127.0.0.1:{stub_port}/v1/chat/completions"
        proxy_url = f"http://127.0.0.1:{proxy_port}/"
        wait_for(f"http://127.0.0.1:{stub_port}/", stub)
        wait_for(f"http://127.0.0.1:{proxy_port}/healthz", proxy)
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
        asyncio.run(load(proxy_url, proxy_body, proxy_headers, 4, 300))  # warm up
        asyncio.run(load(stub_url, direct_body, json_headers, 4, 300))
        per_level = {1: 1000, 16: 3000, 64: 4000}
        if args.quick:
            per_level = {k: v // 4 for k, v in per_level.items()}
        for clients, total in per_level.items():
            if time.monotonic() - run_started > DEADLINE_S:
                break
            direct = asyncio.run(load(stub_url, direct_body, json_headers, clients, total))
            through = asyncio.run(load(proxy_url, proxy_body, proxy_headers, clients, total))
            level = {
                "clients": clients,
                "direct": direct,
                "proxy": through,
                "added_median_ms": round(through["median_ms"] - direct["median_ms"], 3),
                "added_p99_ms": round(through["p99_ms"] - direct["p99_ms"], 3),
            }
            results["levels"].append(level)
            print(
                f"{clients:>3} clients: direct {direct['rps']:>7} req/s "
                f"(median {direct['median_ms']} ms, p99 {direct['p99_ms']} ms) | proxy "
                f"{through['rps']:>7} req/s (median {through['median_ms']} ms, "
                f"p99 {through['p99_ms']} ms, errors {through['errors']} "
                f"{through['error_kinds']}) | added median "
                f"{level['added_median_ms']} ms, p99 {level['added_p99_ms']} ms",
                flush=True,
            )
        total = 2500 if args.quick else 10_000
        before = rss_kb(proxy.pid)
        run = asyncio.run(load(proxy_url, proxy_body, proxy_headers, 16, total))
        after = rss_kb(proxy.pid)
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
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "proxy_server.json").write_text(json.dumps(results, indent=2))
    finally:
        for process in (proxy, stub):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
