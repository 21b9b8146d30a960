"""The import rules of the JavaScript in ``web/`` and ``loader.js``, which no linter checks.

Every ``import ... from '...'``, ``export ... from '...'``, ``import('...')``,
``import(new URL('...', ...))`` and ``new Worker(new URL('...', ...))`` is read as an arrow from
its file to the file it names, and the arrows must keep these rules:

- no circle: no file reaches itself again by following imports;
- ``web/webmcp/`` (the WebMCP shim and the page doctor) imports nothing outside itself;
- ``web/runtime/`` (where Python starts) never imports ``web/element/`` or ``web/webmcp/``;
- nothing under ``web/`` imports ``loader.js``;
- every import names a file of the tree by a relative path (no bare package names: there is
  no build step), and that file exists;
- a dynamic import of a computed URL (not a string literal) appears in ``web/runtime/`` only,
  where Pyodide and ``boot.js`` come from configured URLs.

Run it as ``python tests/js_imports.py [ROOT]`` (exit status 1 on a violation);
``tests/test_js_imports.py`` plants a violation of each rule.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

_COMMENT = re.compile(r"/\*.*?\*/|(?<![:'\"\\])//[^\n]*", re.S)
_STRING = r"""(['"`])([^'"`\n]+)\1"""
_STATIC = re.compile(r"^\s*(?:import|export)\b[^;'\"`()]*?\bfrom\s*" + _STRING, re.M)
_BARE = re.compile(r"^\s*import\s*" + _STRING, re.M)
_DYNAMIC = re.compile(r"\bimport\(\s*" + _STRING + r"\s*\)")
_HERE = r"\s*,\s*(?:import\.meta\.url|HERE)\s*\)"  # a URL relative to the file itself
_URL = re.compile(r"\bimport\(\s*new\s+URL\(\s*" + _STRING + _HERE)
_WORKER = re.compile(r"\bnew\s+Worker\(\s*new\s+URL\(\s*" + _STRING + _HERE)
_ANY_DYNAMIC = re.compile(r"\bimport\(\s*(?!['\"`])(?!new\s+URL\(\s*" + _STRING + _HERE + ")")


def _strip_comments(text: str) -> str:
    """``text`` with comments blanked (line numbers kept)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sources(root: Path) -> list[str]:
    """The checked files, as paths relative to ``root``: ``loader.js`` and ``web/**/*.js``."""
    files = sorted(p.relative_to(root).as_posix() for p in (root / "web").rglob("*.js"))
    if (root / "loader.js").is_file():
        files.insert(0, "loader.js")
    return files


def imports(root: Path, name: str) -> tuple[list[tuple[int, str, bool]], list[str]]:
    """``([(line, target path, is a worker)], problems)`` of one file. A module worker's script
    starts a realm of its own: it keeps the room rules but closes no circle."""
    text = _strip_comments((root / name).read_text(encoding="utf-8"))
    found: list[tuple[int, str, bool]] = []
    problems: list[str] = []
    for pattern in (_STATIC, _BARE, _DYNAMIC, _URL, _WORKER):
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start(2)) + 1
            found.append((line, match.group(2), pattern is _WORKER))
    for match in _ANY_DYNAMIC.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if not name.startswith("web/runtime/"):
            problems.append(
                f"{name}:{line}: a dynamic import of a computed URL outside web/runtime/"
            )
    out: list[tuple[int, str, bool]] = []
    for line, spec, worker in sorted(set(found)):
        if not spec.startswith(("./", "../")):
            problems.append(f"{name}:{line}: {spec!r} is not a relative path")
            continue
        target = PurePosixPath(name).parent / spec
        parts: list[str] = []
        for part in target.parts:
            if part == "..":
                if not parts:
                    break
                parts.pop()
            elif part != ".":
                parts.append(part)
        resolved = "/".join(parts)
        if not (root / resolved).is_file():
            problems.append(f"{name}:{line}: {spec!r} names no file ({resolved})")
            continue
        out.append((line, resolved, worker))
    return out, problems


def _room_rule(importer: str, imported: str) -> str | None:
    if importer.startswith("web/webmcp/") and not imported.startswith("web/webmcp/"):
        return "web/webmcp/ imports nothing outside itself"
    if importer.startswith("web/runtime/") and imported.startswith(("web/element/", "web/webmcp/")):
        return "web/runtime/ never imports web/element/ or web/webmcp/"
    if importer.startswith("web/") and imported == "loader.js":
        return "nothing under web/ imports loader.js"
    return None


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One circle per strongly connected group of files (Tarjan), each as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph.get(node, []):
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    circles = []
    for group in groups:
        members = set(group)
        start = min(group)
        path, seen = [start], {start}
        while True:
            nxt = next(n for n in graph[path[-1]] if n in members)
            if nxt in seen:
                circles.append([*path[path.index(nxt) :], nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return circles


def violations(root: Path = ROOT) -> list[str]:
    """Every broken rule, one line each (empty when the tree keeps them all)."""
    graph: dict[str, list[str]] = {}
    problems: list[str] = []
    for name in sources(root):
        found, trouble = imports(root, name)
        problems += trouble
        graph[name] = sorted({target for _line, target, worker in found if not worker})
        for line, target, _worker in found:
            rule = _room_rule(name, target)
            if rule:
                problems.append(f"{name}:{line}: imports {target}: {rule}")
    for circle in _cycles(graph):
        problems.append("import circle: " + " -> ".join(circle))
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]).resolve() if len(argv) > 1 else ROOT
    found = violations(root)
    for line in found:
        print(line)
    checked = len(sources(root))
    print(f"{checked} JS files, {len(found)} import rule violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
