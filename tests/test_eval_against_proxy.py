"""The eval command as the README and docs/server.md show it, against this project's own
proxy, and what it scores and how it exits.

The documented pair of commands, on a free port instead of 8787 (other programs may hold it)::

    python examples/proxy_server.py --fake-model
    python -m pysite_agent eval CASES.json --proxy http://127.0.0.1:8787/ --json report.json
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aio import run

from pysite_agent.__main__ import main
from pysite_agent.agent.evals import run_eval

ROOT = Path(__file__).resolve().parents[1]
DEMO_SET = ROOT / "examples" / "demo-shop-evals.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def example_proxy() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "examples" / "proxy_server.py"),
            "--fake-model",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}healthz", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("examples/proxy_server.py did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_the_documented_pair_of_commands_works(
    example_proxy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(["eval", str(DEMO_SET), "--proxy", example_proxy, "--json", str(out)])
    printed = capsys.readouterr()
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["total"]["errors"] == 0, printed.err
    assert [c.get("error") for c in report["cases"]] == [None] * len(report["cases"])
    assert report["total"]["toolChoice"] >= 0.5  # the fake model is the demo rules
    assert code == 0
    assert "forbidden-origin" not in printed.out + printed.err


def test_the_pair_can_be_run_again_and_again_without_the_rate_limit(
    example_proxy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The module's proxy already served the run above; three more in the same minute stay under
    # the fake model's limit (the default 20 a minute would refuse them with 429).
    for attempt in range(3):
        out = tmp_path / f"report{attempt}.json"
        code = main(["eval", str(DEMO_SET), "--proxy", example_proxy, "--json", str(out)])
        printed = capsys.readouterr()
        assert code == 0, printed.err
        assert json.loads(out.read_text(encoding="utf-8"))["total"]["errors"] == 0


def test_an_origin_the_proxy_does_not_allow_fails_the_run_and_says_what_to_do(
    example_proxy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["eval", str(DEMO_SET), "--proxy", example_proxy, "--origin", "https://elsewhere.example"]
    )
    err = capsys.readouterr().err
    assert code != 0
    assert "--origin" in err and "error" in err


def test_a_run_where_cases_error_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()  # nothing listens there: every case errors
    code = main(["eval", str(DEMO_SET), "--proxy", f"http://127.0.0.1:{port}/", "--timeout-s", "2"])
    assert code != 0
    assert "error" in capsys.readouterr().err


class Replies:
    name = "replies"

    def __init__(self, *arguments: Any) -> None:
        self.arguments = list(arguments)

    async def respond(self, request: Any) -> Any:
        if request.messages[-1]["role"] == "tool":  # after the call's result: answer
            return {"type": "answer", "text": "Done."}
        return {"type": "tool", "name": "add_to_cart", "arguments": self.arguments.pop(0)}


TOOLS = [
    {
        "name": "add_to_cart",
        "description": "Add a product to the cart",
        "inputSchema": {
            "type": "object",
            "properties": {"product": {"type": "string"}, "quantity": {"type": "number"}},
        },
    }
]


@pytest.mark.parametrize(
    ("expected", "given"),
    [
        ({"product": "mug", "quantity": 2}, '{"quantity": 2.0, "product": "mug"}'),
        ({"product": "mug", "quantity": 2.0}, {"quantity": 2, "product": "mug"}),
        ({}, ""),
        ({}, "  "),
        ({"product": "mug", "quantity": 2}, '{"product": "mug", "quantity": 2}'),
    ],
)
def test_scores_are_on_the_arguments_the_agent_would_run(
    expected: dict[str, Any], given: Any
) -> None:
    cases = {
        "tools": TOOLS,
        "cases": [
            {
                "name": "c",
                "messages": [{"role": "user", "type": "message", "content": "add"}],
                "expectedCall": [{"functionName": "add_to_cart", "arguments": expected}],
            }
        ],
    }
    report = run(run_eval(cases, Replies(given))).to_json()
    [scored] = report["cases"]
    assert scored["argumentsExact"] is True, scored
    assert scored["argumentKeys"] == 1.0
