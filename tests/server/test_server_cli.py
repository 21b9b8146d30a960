"""``python -m pysite_agent.server``: the key from the environment, a health route, JSON logs."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from conftest import ORIGIN, request_body
from stub_upstream import KEY, MODEL, Reply, StubUpstream, base_url, tool_reply

from pysite_agent.server.__main__ import build_app, configure_logging, parser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(
    args: list[str], env: dict[str, str], timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pysite_agent.server", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(extra)
    return env


def test_cli_serves_with_the_key_from_the_environment(stub: StubUpstream) -> None:
    stub.responder = lambda r: Reply(200, tool_reply("openai", "add_to_cart", {"product": "mug"}))
    port = _free_port()
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
            "--allowed-origin",
            "http://localhost:8000",
            "--port",
            str(port),
            "--path",
            "/api/agent",
            "--base-url",
            base_url(stub, "openai"),
            "--rate-limit-max",
            "2",
            "--max-tokens",
            "99",
        ],
        env=_env(OPENAI_API_KEY=KEY),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(trust_env=False, timeout=10) as client:
            deadline = time.monotonic() + 15
            while True:
                try:
                    health = client.get(f"{url}/healthz")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise
                    time.sleep(0.05)
            assert health.status_code == 200
            assert health.json() == {"status": "ok", "rateLimitStore": "ok"}
            headers = {"origin": ORIGIN}
            response = client.post(f"{url}/api/agent", json=request_body(), headers=headers)
            assert response.status_code == 200
            assert response.json()["name"] == "add_to_cart"
            assert stub.last().json()["max_completion_tokens"] == 99
            assert (
                client.post(f"{url}/api/agent", json=request_body(), headers=headers).status_code
                == 200
            )
            assert (
                client.post(f"{url}/api/agent", json=request_body(), headers=headers).status_code
                == 429
            )
            assert client.post(f"{url}/other", headers=headers).status_code == 404
            assert (
                client.post(
                    f"{url}/api/agent",
                    json=request_body(),
                    headers={"origin": "http://localhost:8000", "x-forwarded-for": "203.0.113.1"},
                ).status_code
                == 429
            )
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=15)
    assert process.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
    assert KEY not in out and KEY not in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("event") == "request"]
    assert [r["status"] for r in requests] == [200, 200, 429, 429]
    assert all(r["client"] == "127.0.0.1" for r in requests)
    assert all(
        set(r)
        <= {
            "event",
            "method",
            "status",
            "provider",
            "latency_ms",
            "client",
            "code",
            "upstream_status",
        }
        for r in requests
    )
    assert "add two mugs" not in err and "add_to_cart" not in err


def test_cli_refuses_to_start_without_the_key() -> None:
    result = _run(["--provider", "gemini", "--model", MODEL, "--allowed-origin", ORIGIN], _env())
    assert result.returncode != 0
    assert "GEMINI_API_KEY" in result.stderr
    result = _run(
        [
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--allowed-origin",
            ORIGIN,
            "--api-key-env",
            "SITE_KEY",
        ],
        _env(OPENAI_API_KEY=KEY),
    )
    assert result.returncode != 0
    assert "--api-key-env" in result.stderr and KEY not in result.stderr
    result = _run(
        [
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--allowed-origin",
            ORIGIN,
            "--api-key-env",
            KEY,
        ],
        _env(OPENAI_API_KEY=KEY),
    )
    assert result.returncode != 0
    assert KEY not in result.stderr


def test_cli_has_no_key_argument_and_reports_bad_options(tmp_path: Any) -> None:
    result = _run(
        ["--provider", "openai", "--model", MODEL, "--allowed-origin", ORIGIN, "--api-key", KEY],
        _env(),
    )
    assert result.returncode == 2
    assert "unrecognized arguments" in result.stderr
    assert KEY not in result.stderr
    result = _run(
        ["--provider", "openai", "--model", MODEL, "--allowed-origin", ORIGIN, "--api-key", KEY],
        _env(OPENAI_API_KEY="x"),
    )
    assert result.returncode == 2 and KEY not in result.stderr
    result = _run(
        ["--provider", "openai", "--model", MODEL, "--allowed-origin", "https://example.com/"],
        _env(OPENAI_API_KEY=KEY),
    )
    assert result.returncode != 0
    assert "trailing '/'" in result.stderr
    assert KEY not in result.stderr


def test_tool_chooser_fixture_drives_a_whole_step(tool_chooser_proxy: Any) -> None:
    """The fixture the browser demo's end-to-end test uses: a tool call, then an answer."""
    origin = "http://127.0.0.1:8000"
    url = tool_chooser_proxy(
        "add_to_cart",
        {"product": "mug", "quantity": 1},
        allowed_origins=[origin],
        provider="anthropic",
    )
    with httpx.Client(trust_env=False, timeout=10) as client:
        first = client.post(url, json=request_body(), headers={"origin": origin}).json()
        assert first["type"] == "tool" and first["name"] == "add_to_cart"
        assert first["arguments"] == {"product": "mug", "quantity": 1}
        messages = [
            *request_body()["messages"],
            {
                "role": "assistant",
                "toolCall": {
                    "id": first["id"],
                    "name": first["name"],
                    "arguments": first["arguments"],
                },
            },
            {
                "role": "tool",
                "toolCallId": first["id"],
                "name": first["name"],
                "content": "Added 1 mug.",
                "isError": False,
                "untrusted": False,
            },
        ]
        second = client.post(
            url, json=request_body(messages=messages), headers={"origin": origin}
        ).json()
        assert second == {"type": "answer", "text": "Done."}


def test_cli_body_timeout_option_and_quiet_httpx_logging() -> None:
    base = ["--provider", "openai", "--model", MODEL, "--allowed-origin", ORIGIN]
    assert parser().parse_args(base).body_timeout_ms == 10_000
    assert build_app(
        parser().parse_args([*base, "--body-timeout-ms", "500"]), {"OPENAI_API_KEY": KEY}
    )
    with pytest.raises(SystemExit, match="body_timeout_ms"):
        build_app(parser().parse_args([*base, "--body-timeout-ms", "0"]), {"OPENAI_API_KEY": KEY})
    # httpx logs every upstream call at INFO; the app's own line is enough.
    names = ("pysite_agent.server", "httpx", "httpcore")
    saved = [
        (
            logging.getLogger(n).level,
            logging.getLogger(n).handlers[:],
            logging.getLogger(n).propagate,
        )
        for n in names
    ]
    try:
        configure_logging("info")
        assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
        assert logging.getLogger("httpx").isEnabledFor(logging.WARNING)
        assert logging.getLogger("pysite_agent.server").isEnabledFor(logging.INFO)
        configure_logging("debug")
        assert logging.getLogger("httpx").isEnabledFor(logging.DEBUG)
    finally:
        for n, (level, handlers, propagate) in zip(names, saved, strict=True):
            logging.getLogger(n).setLevel(level)
            logging.getLogger(n).handlers[:] = handlers
            logging.getLogger(n).propagate = propagate


BASE = ["--provider", "openai", "--model", MODEL, "--allowed-origin", ORIGIN]


@pytest.mark.parametrize("port", ["-1", "65536", "99999", "http", "80.5"])
def test_cli_refuses_ports_outside_0_65535(port: str) -> None:
    result = _run([*BASE, "--port", port], _env(OPENAI_API_KEY=KEY))
    assert result.returncode == 2
    assert "is not a TCP port: use a whole number from 0 to 65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_reports_an_unresolvable_host_as_a_host_problem() -> None:
    result = _run([*BASE, "--host", "no-such-host.invalid"], _env(OPENAI_API_KEY=KEY))
    assert result.returncode != 0
    assert "cannot resolve the host 'no-such-host.invalid'" in result.stderr
    assert "port" not in result.stderr.split("resolve the host", 1)[1].split(":")[0]
    assert "Traceback" not in result.stderr
    # An address that is not this machine's is a host problem too (TEST-NET-3, never local).
    result = _run([*BASE, "--host", "203.0.113.7"], _env(OPENAI_API_KEY=KEY))
    assert result.returncode != 0
    assert "is not an address of this machine" in result.stderr


def test_cli_reports_a_port_in_use_as_a_port_problem() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = _run([*BASE, "--port", port], _env(OPENAI_API_KEY=KEY))
    assert result.returncode != 0
    assert f"port {port} is already in use on 127.0.0.1" in result.stderr


def test_cli_fails_fast_when_the_rate_limit_store_is_unreachable() -> None:
    storage = f"redis://:{KEY}@127.0.0.1:{_free_port()}/0"  # nothing listens; a password in it
    started = time.monotonic()
    result = _run(
        [*BASE, "--port", str(_free_port()), "--rate-limit-storage", storage],
        _env(OPENAI_API_KEY=KEY),
    )
    assert result.returncode != 0
    assert time.monotonic() - started < 15
    assert "rate-limit store unreachable: the 'redis' store" in result.stderr
    assert KEY not in result.stderr + result.stdout
