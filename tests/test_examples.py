"""The runnable Python example works end to end (it is the README's core walkthrough)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pysite_agent.core.wire import problems

ROOT = Path(__file__).resolve().parents[1]


def test_python_agent_example(tmp_path: Path) -> None:
    trace_file = tmp_path / "run.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "python_agent.py"),
            "--trace-out",
            str(trace_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "status=answered" in out
    assert "visitor asked (not-read-only): Add to cart" in out
    assert "visitor asked (after-untrusted): Add to cart" in out and "-> Deny" in out
    assert "visitor asked (after-untrusted): Gift wrap" in out
    assert "differences: 0" in out
    trace = json.loads(trace_file.read_text(encoding="utf-8"))
    assert problems("trace-v1", trace) == []
    kinds = [s["kind"] for s in trace["steps"]]
    assert kinds.count("invalid-call") == 1
    fenced = [s for s in trace["steps"] if s["kind"] == "tool-result" and s["untrusted"]]
    assert len(fenced) == 1
