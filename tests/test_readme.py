"""The README's first Python example runs and prints what its comments say; its first two
commands are the demo and the test command CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_api_example(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    example = next(b for b in blocks if "asyncio.run(main())" in b)
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2] == "answered {'mugs': 2}"
    assert lines[-1] == "0 {'mugs': 2}"
    assert lines[0].startswith("thinking ")


def test_the_readme_first_two_commands_are_the_demo_and_the_ci_test_command() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```\n(.*?)```", text, re.S)
    assert first_block is not None
    commands = [line.split("#", 1)[0].strip() for line in first_block.group(1).splitlines()]
    assert commands[:2] == ["bash .ci/demo", "bash .ci/test"]
    assert "python -m pysite_agent demo" in (ROOT / ".ci/demo").read_text(encoding="utf-8")
    run = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    assert run[-1] == "exec bash .ci/test"  # CI runs exactly the README's test command
