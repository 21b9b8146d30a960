"""The file-size budget: no source file grows past a size a reader can hold in mind.

Budgets, in lines: :data:`BUDGETS` (Python in ``pysite_agent/``; JavaScript in ``web/`` and
``loader.js``). A file over its budget must be in the allowlist ``tests/file_budget.json``
(``{"path": cap}``, the path relative to the repository), and the list only shrinks:

- an allowlisted file may not grow past its cap;
- an entry whose file is within the budget again, or is gone, is an error too (remove it);
- a file over the budget that is not listed is an error.

``tests/test_file_budget.py`` pins today's list, so an entry cannot be added or a cap raised.
Run it as ``python tests/file_budget.py`` (exit status 1 on a problem); ``.ci/test`` does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWLIST = ROOT / "tests" / "file_budget.json"

BUDGETS = {".py": 700, ".js": 600}
"""Lines per file, by suffix."""


def sources(root: Path) -> Iterator[Path]:
    """The files the budget covers under ``root`` (a checkout), sorted."""
    found = [*(root / "pysite_agent").rglob("*.py"), *(root / "web").rglob("*.js")]
    if (root / "loader.js").is_file():
        found.append(root / "loader.js")
    yield from sorted(p for p in found if "__pycache__" not in p.parts)


def line_count(path: Path) -> int:
    """Lines in ``path`` (a last line without a newline counts)."""
    with path.open("rb") as f:
        return sum(1 for _ in f)


def problems(root: Path, allowlist: Mapping[str, int]) -> list[str]:
    """Every breach of the budget under ``root`` with ``allowlist``, one line each."""
    found: list[str] = []
    sizes = {p.relative_to(root).as_posix(): line_count(p) for p in sources(root)}
    for name, lines in sizes.items():
        budget = BUDGETS[Path(name).suffix]
        cap = allowlist.get(name)
        if cap is None and lines > budget:
            found.append(
                f"{name}: {lines} lines, over the budget of {budget}: split it (the allowlist "
                "tests/file_budget.json only shrinks)"
            )
        elif cap is not None and lines > cap:
            found.append(f"{name}: {lines} lines, over its allowlisted cap of {cap}: split it")
        elif cap is not None and lines <= budget:
            found.append(
                f"{name}: {lines} lines, within the budget of {budget}: remove it from "
                "tests/file_budget.json"
            )
    for name in sorted(set(allowlist) - set(sizes)):
        found.append(f"{name}: allowlisted but gone: remove it from tests/file_budget.json")
    return found


def load_allowlist(path: Path = ALLOWLIST) -> dict[str, int]:
    """The allowlist file: ``{"path": cap}``.

    Raises:
        ValueError: it is not a JSON object of positive whole numbers.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in data.values()
    ):
        raise ValueError(f"{path}: expected a JSON object of path -> line cap (whole numbers)")
    return data


def main() -> int:
    found = problems(ROOT, load_allowlist())
    for line in found:
        print(line)
    print(f"file budget: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
