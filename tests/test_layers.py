"""The layer contracts hold, and each check can fail.

import-linter checks ``import`` statements (``lint-imports``, contracts in ``pyproject.toml``);
``tests/dynamic_imports.py`` applies the same contracts to ``importlib.import_module`` and
``__import__`` calls, which import-linter cannot see. Both are run here on a copy of the package
with one violation planted for each contract, and must report every contract as broken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from dynamic_imports import violations

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"

# One violation per contract: the module that gets the planted import (a new file, or an existing
# one the import is added to), and what it imports.
PLANTS = {
    (
        "Layers: core, then tool sources and model adapters, then the bridge, then the element "
        "glue, then the command line"
    ): ("core/_planted_layers.py", "pysite_agent.agent"),
    "The server is CPython only: nothing the browser loads imports it": (
        "models/_planted_server.py",
        "pysite_agent.server",
    ),
    "Only the Pyodide boundary (ffi, model_context, chrome, proxy, browser) touches js/pyodide": (
        "agent/_planted_js.py",
        "js",
    ),
    "The server imports only core": ("server/_planted_agent.py", "pysite_agent.agent"),
    "The bundle command (CPython only) imports no other layer": (
        "bundle/_planted_core.py",
        "pysite_agent.core",
    ),
    "No layer imports the bundle command (it is not part of the browser's package)": (
        "tools/_planted_bundle.py",
        "pysite_agent.bundle",
    ),
    (
        "The pure modules (prompt plan, constraint schema, reply reader, tool schemas, registry) "
        "import no ffi"
    ): ("models/chrome/stream.py", "pysite_agent.ffi"),
    "Inside tools: schemas, then the registry, then the page's modelContext, then mounting": (
        "tools/schema.py",
        "pysite_agent.tools.declare",
    ),
    "Inside models.chrome: the pure modules, then the native tool-use shape, then the sessions": (
        "models/chrome/schema.py",
        "pysite_agent.models.chrome.adapter",
    ),
    "Nothing imports the command line (only python -m pysite_agent runs it)": (
        "server/_planted_cli.py",
        "pysite_agent.cli",
    ),
    # app imports the providers: a providers module importing app closes a circle.
    "No import circles: the modules of each package import each other in one direction": (
        "server/providers/_planted_cycle.py",
        "pysite_agent.server.app",
    ),
}


def plant(path: Path, code: str) -> None:
    """Write ``code`` as a new module at ``path``, or add it at the end of an existing one."""
    before = path.read_text(encoding="utf-8") + "\n" if path.exists() else ""
    path.write_text(before + code, encoding="utf-8")


def contract_names() -> list[str]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def copy_package(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "pysite_agent",
        tmp_path / "pysite_agent",
        ignore=shutil.ignore_patterns("__pycache__", "_assets"),
    )
    shutil.copy(PYPROJECT, tmp_path / "pyproject.toml")
    return tmp_path / "pysite_agent"


def test_every_contract_has_a_planted_violation() -> None:
    assert sorted(PLANTS) == sorted(contract_names())


def test_no_dynamic_import_crosses_a_layer() -> None:
    assert violations(ROOT / "pysite_agent", PYPROJECT) == []


def test_a_planted_dynamic_import_breaks_each_contract(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    for module, target in PLANTS.values():
        plant(
            package / module,
            f"import importlib\n\nimportlib.import_module({target!r})\n__import__({target!r})\n",
        )
    (package / "core" / "_planted_computed.py").write_text(
        "import importlib\n\nNAME = 'pysite_agent.' + 'agent'\nimportlib.import_module(NAME)\n",
        encoding="utf-8",
    )
    found = violations(package, tmp_path / "pyproject.toml")
    for name, (_module, target) in PLANTS.items():
        assert any(f"-> {target} ({name})" in line for line in found), (name, found)
    assert any("not a string literal" in line for line in found)


def lint_imports(cwd: Path) -> tuple[int, str]:
    """``lint-imports`` on the package copy in ``cwd`` (found first on the path)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())",
            "--no-cache",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(cwd)},
        timeout=300,
        check=False,
    )
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_a_planted_import_breaks_each_import_linter_contract(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    code, output = lint_imports(tmp_path)
    assert code == 0, output  # the copy itself keeps every contract
    for module, target in PLANTS.values():
        plant(package / module, f"import {target}\n")
    code, output = lint_imports(tmp_path)
    assert code != 0
    assert "pysite_agent.core._planted_layers" in output  # the copy was checked
    for name in PLANTS:
        assert f"{name} BROKEN" in output, (name, output[-3000:])
