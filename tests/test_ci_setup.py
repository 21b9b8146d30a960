""".ci/venv.sh (sourced by .ci/setup and .ci/demo): the Python check and the .venv rebuild.

The interpreters here are small stand-ins (shell scripts that answer the version check through
this Python and pretend to run ``venv`` and ``pip``), so nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fake_python(path: Path, version: str) -> Path:
    """An interpreter stand-in reporting ``version`` (e.g. "3.12"); ``-m venv DIR`` makes a
    ``DIR/bin/python`` stand-in of the same version, ``-m pip`` succeeds."""
    major, minor = version.split(".")
    path.write_text(
        f"""#!/usr/bin/env bash
if [ "$1" = "-c" ]; then
  exec {sys.executable} -c "import sys; sys.version_info = ({major}, {minor}, 0); $2"
fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && echo "{version}" > "$3/made-by"
  exit 0
fi
exit 0
""",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def checkout(tmp_path: Path) -> Path:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "venv.sh", tmp_path / ".ci" / "venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    script = tmp_path / ".ci" / "try"
    script.write_text(
        '#!/usr/bin/env bash\nset -euo pipefail\ncd "$(dirname "$0")/.."\n'
        '[ -n "${PYTHON:-}" ] && PYTHON_SET=1\nname=try\n. .ci/venv.sh\ncat .venv/made-by\n',
        encoding="utf-8",
    )
    return script


def run(script: Path, python: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "PYTHON_SET")}
    if python is not None:
        env["PYTHON"] = str(python)
    return subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_an_old_python_is_refused_with_what_to_do(tmp_path: Path) -> None:
    script = checkout(tmp_path)
    result = run(script, fake_python(tmp_path / "py310", "3.10"))
    assert result.returncode == 1
    assert "needs Python 3.11 or newer" in result.stderr and "found: 3.10" in result.stderr
    assert "set PYTHON=" in result.stderr
    assert not (tmp_path / ".venv").exists()


def test_a_venv_of_another_python_is_rebuilt_when_python_is_set(tmp_path: Path) -> None:
    script = checkout(tmp_path)
    first = run(script, fake_python(tmp_path / "py312", "3.12"))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith("3.12")
    again = run(script, fake_python(tmp_path / "py313", "3.13"))
    assert again.returncode == 0, again.stderr
    assert "was made by Python 3.12; rebuilding it with Python 3.13" in again.stdout
    assert again.stdout.strip().endswith("3.13")


def test_a_working_venv_of_another_python_is_kept_and_the_rebuild_explained(
    tmp_path: Path,
) -> None:
    script = checkout(tmp_path)
    assert run(script, fake_python(tmp_path / "py312", "3.12")).returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_python(bin_dir / "python3", "3.11")
    env_path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHON"}, "PATH": env_path},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "keeping .venv (Python 3.12" in result.stdout
    assert "PYTHON=python3.X" in result.stdout


def test_a_broken_venv_is_rebuilt(tmp_path: Path) -> None:
    script = checkout(tmp_path)
    python = fake_python(tmp_path / "py311", "3.11")
    assert run(script, python).returncode == 0
    (tmp_path / ".venv" / "bin" / "python").write_text("#!/bin/sh\nexit 127\n", encoding="utf-8")
    result = run(script, python)
    assert result.returncode == 0, result.stderr
    assert ".venv does not run or is older than 3.11 (broken); rebuilding it" in result.stdout
    assert result.stdout.strip().endswith("3.11")
