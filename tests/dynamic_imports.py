"""The layer contracts for imports that import-linter cannot see.

import-linter reads ``import`` statements only. A call to ``importlib.import_module(...)`` or
``__import__(...)`` can cross a layer unseen, so this check finds every such call in the
package and applies the same contracts (``[tool.importlinter]`` in ``pyproject.toml``) to it:

- a ``layers`` contract: a module may import a lower layer, never a higher one, and
  independent siblings (``a | b``) never import each other;
- a ``forbidden`` contract: a source module never imports a forbidden one.

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
        layers = [[m.strip() for m in layer.split("|")] for layer in contract["layers"]]

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
    return False


def violations(package: Path, pyproject: Path) -> list[str]:
    """Every dynamic import in ``package`` that breaks a contract of ``pyproject``, as
    ``"path:line: importer -> imported (contract name)"`` lines."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        importer = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        where = path.relative_to(package.parent)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, imported in _dynamic_imports(tree):
            if imported is None:
                found.append(
                    f"{where}:{line}: {importer} imports a module whose name is not a string "
                    "literal, which no contract can check"
                )
                continue
            for contract in contracts:
                if _contract_violations(importer, imported, contract):
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
