"""``python -m pysite_agent demo``: bad ports and hosts get a clear message, not a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pysite_agent", "demo", "--no-build", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("port", ["-1", "65536", "70000", "eighty"])
def test_ports_outside_0_65535_are_refused(port: str) -> None:
    result = demo("--port", port)
    assert result.returncode == 2
    assert "is not a TCP port: use a whole number from 0 to 65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unresolvable_host_is_a_host_problem() -> None:
    result = demo("--host", "no-such-host.invalid", "--port", "0")
    assert result.returncode == 2
    assert "cannot resolve the host 'no-such-host.invalid'" in result.stderr
    assert "--port" not in result.stderr and "Traceback" not in result.stderr
    result = demo("--host", "203.0.113.7", "--port", "0")  # TEST-NET-3: never this machine
    assert result.returncode == 2
    assert "is not an address of this machine" in result.stderr


def test_a_port_in_use_is_a_port_problem() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        result = demo("--port", port)
    assert result.returncode == 2
    assert f"port {port} is already in use on 127.0.0.1: pass another --port" in result.stderr
