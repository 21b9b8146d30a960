"""docs/architecture.md names every tracked file, and every path it names exists.

The rule: in the section "Every file, by room", each entry is a line ``- `PATH` — what it owns``.
Every file ``git ls-files`` lists has its own entry, except the files inside the folders of
fixtures in ``PER_FOLDER``, which have one entry for the folder. An entry whose path is not a
tracked file (or one of those folders) is stale.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = "docs/architecture.md"
SECTION = "## Every file, by room"
# Folders described as a whole: fixture pages and one example file per protocol shape.
PER_FOLDER = ("pysite_agent/schemas/examples/", "tests/browser/pages/")
ENTRY = re.compile(r"^- `([^`]+)` — \S", re.M)


def tracked_files() -> set[str]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return {name for name in names if (ROOT / name).is_file()}


def entries(doc: str) -> list[str]:
    """The paths of the file map's entries, in order (duplicates kept)."""
    assert SECTION in doc, f"{DOC} has no section {SECTION!r}"
    section = doc.split(SECTION, 1)[1]
    section = re.split(r"(?m)^## ", section, maxsplit=1)[0]
    return ENTRY.findall(section)


def problems(tracked: set[str], listed: list[str]) -> dict[str, list[str]]:
    """What the map lacks (``missing``), names in vain (``stale``) or names twice."""
    named = set(listed)
    folders = {folder for folder in PER_FOLDER if folder in named}
    missing = sorted(
        name
        for name in tracked
        if name not in named and not any(name.startswith(folder) for folder in folders)
    )
    stale = sorted(
        name
        for name in named
        if name not in tracked
        and not (name in PER_FOLDER and any(t.startswith(name) for t in tracked))
    )
    twice = sorted({name for name in listed if listed.count(name) > 1})
    return {"missing": missing, "stale": stale, "twice": twice}


def report(found: dict[str, list[str]]) -> str:
    lines = [f"{DOC} is out of date with `git ls-files`:"]
    if found["missing"]:
        lines.append("  tracked but not named (add a line `- `PATH` — what it owns`):")
        lines += [f"    {name}" for name in found["missing"]]
    if found["stale"]:
        lines.append("  named but not a tracked file (moved or removed? fix or drop the line):")
        lines += [f"    {name}" for name in found["stale"]]
    if found["twice"]:
        lines.append("  named more than once:")
        lines += [f"    {name}" for name in found["twice"]]
    return "\n".join(lines)


def test_the_map_names_every_tracked_file_and_only_those() -> None:
    tracked = tracked_files()
    assert "README.md" in tracked and DOC in tracked
    listed = entries((ROOT / DOC).read_text(encoding="utf-8"))
    assert len(listed) > 100
    found = problems(tracked, listed)
    assert found == {"missing": [], "stale": [], "twice": []}, report(found)


def test_the_check_reports_a_missing_a_stale_and_a_doubled_path() -> None:
    tracked = {"a.py", "web/x.js", "tests/browser/pages/one.html", "tests/browser/pages/two.html"}
    listed = ["a.py", "a.py", "web/old.js", "tests/browser/pages/"]
    found = problems(tracked, listed)
    assert found == {"missing": ["web/x.js"], "stale": ["web/old.js"], "twice": ["a.py"]}
    text = report(found)
    assert "    web/x.js" in text and "    web/old.js" in text and "    a.py" in text
    # A folder entry covers its files only for the folders of fixtures.
    found = problems({"web/x.js"}, ["web/"])
    assert found["missing"] == ["web/x.js"] and found["stale"] == ["web/"]
    # Without its folder entry, a fixture page is missing too.
    assert problems({"tests/browser/pages/one.html"}, [])["missing"] == [
        "tests/browser/pages/one.html"
    ]


def test_entries_come_from_the_file_map_section_only() -> None:
    doc = (
        "# Architecture\n\n- `elsewhere.py` — not in the map\n\n"
        f"{SECTION}\n\n### Root\n\n- `a.py` — owns a\n- `b.py`: wrong shape\n\n"
        "## Later\n\n- `c.py` — after the map\n"
    )
    assert entries(doc) == ["a.py"]
