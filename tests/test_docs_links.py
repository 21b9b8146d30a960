"""The README's and the docs' relative links lead somewhere, and so do the docs a comment names.

A link ``[text](path#anchor)`` must name a file that exists and, with ``#anchor``, a heading of
that file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens). A comment or
docstring that names ``docs/NAME.md, "Heading"`` or ``README, "Heading"`` must name a heading
that exists (or the start of one), so a section that moves takes its citations with it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CITATION = re.compile(r"\b(README|docs/[a-z0-9-]+\.md)(?:, \"([^\"\n]+)\")?")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def headings(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [m.group(1).strip() for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in headings(path):
        base = anchor(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked (no network in tests)
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}: ({target})"
        if not dest.exists():
            broken.append(f"{where}: no file {file_part}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{where}: no heading with anchor #{fragment} in {file_part or 'it'}")
    return broken


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    files = markdown_files()
    assert len(files) > 5
    broken = [problem for path in files for problem in broken_links(path)]
    assert broken == [], "broken links:\n" + "\n".join(broken)


def test_the_anchor_rule_follows_github() -> None:
    assert anchor("Pyodide from a CDN, or the page's own") == "pyodide-from-a-cdn-or-the-pages-own"
    assert anchor("Starting Python in the page: `web/boot.js`") == (
        "starting-python-in-the-page-webbootjs"
    )
    assert anchor("WebMCP: Chrome 153-160, the shim") == "webmcp-chrome-153-160-the-shim"


def test_the_docs_a_comment_names_exist() -> None:
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.js", ".ci/*"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert files
    stale = []
    for name in files:
        path = ROOT / name
        if name == "tests/test_docs_links.py" or not path.is_file():
            continue  # this file's docstring states the pattern
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for doc, heading in CITATION.findall(line):
                target = ROOT / ("README.md" if doc == "README" else doc)
                if not target.is_file():
                    stale.append(f"{name}:{number}: no file {doc}")
                elif heading and not any(h.startswith(heading) for h in headings(target)):
                    stale.append(f'{name}:{number}: no heading "{heading}" in {doc}')
    assert stale == [], "citations of docs that moved:\n" + "\n".join(stale)
