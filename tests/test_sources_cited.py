"""Comments and docstrings cite public sources only: the WebMCP spec, the Prompt API, a
provider's docs, or the README's rule numbers; never a document outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(
    r"seed \d|seeds?/|shared/(notes|seeds)|behaviou?r spec|\(spec, (safety|rule|\"|``)|spec §"
    r"|\(issue:? ?\d",
    re.IGNORECASE,
)


def test_no_reference_to_documents_outside_the_repository() -> None:
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.js", "*.md", "*.html", "*.css", "*.json", "*.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert files
    found = []
    for name in files:
        if name in ("tests/test_sources_cited.py", "tests/cases/index.json"):
            continue  # the corpus index cites its public sources by design
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert found == []
