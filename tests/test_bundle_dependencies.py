"""``pip install .`` alone runs ``python -m pysite_agent bundle``: what the bundle imports is a
dependency of the package, not only of the ``dev`` extra."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
BUNDLE_MODULES = [*sorted((ROOT / "pysite_agent" / "bundle").glob("*.py"))]
BUNDLE_MODULES.append(ROOT / "pysite_agent" / "cli" / "bundle.py")


def module_level_imports(path: Path) -> set[str]:
    """Top-level names imported at module level (a function's lazy import is not counted)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_the_bundle_imports_only_the_packages_base_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    cpython = {"sys_platform": "linux", "platform_system": "Linux"}
    base = {
        canonicalize_name(req.name)
        for req in map(Requirement, project["dependencies"])
        if req.marker is None or req.marker.evaluate(cpython)
    }
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for path in BUNDLE_MODULES:
        for name in module_level_imports(path):
            if name in sys.stdlib_module_names or name in ("pysite_agent", "__future__"):
                continue
            dists = {canonicalize_name(d) for d in providers.get(name, [name])}
            if not dists & base:
                missing[f"{path.relative_to(ROOT)}: {name}"] = sorted(dists)
    assert not missing, f"imported by the bundle but not in [project].dependencies: {missing}"
