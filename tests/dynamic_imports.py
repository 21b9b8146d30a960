"""The layer contracts for imports that import-linter cannot see.

import-linter reads ``import`` statements only. A call to ``importlib.import_module(...)`` or
``__import__(...)`` can cross a layer unseen, so this check finds every such call in the
package and applies the same contracts (``[tool.importlinter]`` in ``pyproject.toml``) to it:

- a ``layers`` contract: a module may import a lower layer, never a higher one, and
  independent siblings (``a | b``) never import each other;
- a ``forbidden`` contract: a source module never imports a forbidden one;
- an ``acyclic_siblings`` contract: a dynamic import never closes a circle between the
  children of a package (with the package's ``import`` statements, read here too).

A dynamic import whose module name is not a string literal cannot be checked, so it is a
violation too. Run it as ``python tests/dynamic_imports.py`` (exit status 1 on a violation);
``tests/test_layers.py`` runs it in CI.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _dynamic_imports(tree: ast.AST) -> Iterator[tuple[int, str | None]]:
    """``(line, module name or None when it is not a literal)`` for each dynamic import."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = (
            func.attr
            if isinstance(func, ast.Attribute)
            else func.id
            if isinstance(func, ast.Name)
            else None
        )
        if name not in ("import_module", "__import__"):
            continue
        first = node.args[0] if node.args else None
        literal = (
            first.value
            if isinstance(first, ast.Constant) and isinstance(first.value, str)
            else None
        )
        if literal is not None and literal.startswith("."):
            literal = None  # relative: depends on a runtime ``package``
        yield node.lineno, literal


def _contract_violations(importer: str, imported: str, contract: dict[str, Any]) -> bool:
    kind = contract.get("type")
    if kind == "forbidden":
        return any(_matches(importer, s) for s in contract["source_modules"]) and any(
            _matches(imported, f) for f in contract["forbidden_modules"]
        )
    if kind == "layers":
        containers = contract.get("containers") or [""]
        return any(
            _layer_violation(importer, imported, contract["layers"], container)
            for container in containers
        )
    return False


def _layer_violation(importer: str, imported: str, names: list[str], container: str) -> bool:
    prefix = f"{container}." if container else ""
    layers = [[prefix + m.strip() for m in layer.split("|")] for layer in names]

    def where(module: str) -> tuple[int, str] | None:
        for index, layer in enumerate(layers):
            for member in layer:
                if _matches(module, member):
                    return index, member
        return None

    a, b = where(importer), where(imported)
    if a is None or b is None:
        return False
    # Layers are listed from the highest: a lower index is a higher layer.
    return a[0] > b[0] or (a[0] == b[0] and a[1] != b[1])


def _static_imports(tree: ast.AST, importer: str, is_package: bool) -> Iterator[str]:
    """The modules an ``import`` statement of ``importer`` names (``from a import b`` names
    ``a`` and ``a.b``: either may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = importer.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join([*parts[:keep], *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _child(module: str, package: str) -> str | None:
    """The child of ``package`` that holds ``module`` (``None`` when it is outside or is the
    package itself)."""
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1 :].split(".")[0]


def _closes_circle(
    importer: str, imported: str, edges: set[tuple[str, str]], ancestors: list[str]
) -> bool:
    """Whether the import ``importer -> imported`` closes a circle between the children of a
    package inside ``ancestors``, given every other import in ``edges``."""
    packages = {m.rsplit(".", 1)[0] for pair in edges for m in pair if "." in m}
    for package in packages:
        if not any(_matches(package, a) for a in ancestors):
            continue
        a, b = _child(importer, package), _child(imported, package)
        if a is None or b is None or a == b:
            continue
        graph: dict[str, set[str]] = {}
        for x, y in edges:
            cx, cy = _child(x, package), _child(y, package)
            if cx and cy and cx != cy:
                graph.setdefault(cx, set()).add(cy)
        seen, todo = {b}, [b]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt == a:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return False


def violations(package: Path, pyproject: Path) -> list[str]:
    """Every dynamic import in ``package`` that breaks a contract of ``pyproject``, as
    ``"path:line: importer -> imported (contract name)"`` lines."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    found: list[str] = []
    parsed = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        importer = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        parsed.append((path, importer, tree, parts[-1] == "__init__"))
    modules = {importer for _, importer, _, _ in parsed}
    edges = {
        (importer, imported)
        for _, importer, tree, is_package in parsed
        for imported in _static_imports(tree, importer, is_package)
        if imported in modules
    }
    edges |= {
        (importer, imported)
        for _, importer, tree, _ in parsed
        for _, imported in _dynamic_imports(tree)
        if imported in modules
    }
    for path, importer, tree, _ in parsed:
        where = path.relative_to(package.parent)
        for line, imported in _dynamic_imports(tree):
            if imported is None:
                found.append(
                    f"{where}:{line}: {importer} imports a module whose name is not a string "
                    "literal, which no contract can check"
                )
                continue
            for contract in contracts:
                if contract.get("type") == "acyclic_siblings":
                    broken = _closes_circle(importer, imported, edges, contract["ancestors"])
                else:
                    broken = _contract_violations(importer, imported, contract)
                if broken:
                    found.append(f"{where}:{line}: {importer} -> {imported} ({contract['name']})")
    return found


def main() -> int:
    found = violations(ROOT / "pysite_agent", ROOT / "pyproject.toml")
    for line in found:
        print(line)
    print(f"dynamic imports: {len(found)} contract violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
