"""The modules the Pyodide lane runs (``tests/pyodide/test_core_suite.py``) must run there too.

Inside Pyodide, ``asyncio.run`` cannot drive a coroutine (the page's loop is already running):
the coroutine is never awaited and its warning surfaces later, in whichever test happens to be
collecting unraisable exceptions. Such modules drive coroutines with ``aio.run`` instead.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _suite_globs() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location(
        "_suite", TESTS / "pyodide" / "test_core_suite.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.SUITE_GLOBS)


def _asyncio_run_calls(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "asyncio"
        ):
            lines.append(node.lineno)
    return lines


def test_the_pyodide_suite_drives_coroutines_with_aio_run() -> None:
    modules = sorted({p for pattern in _suite_globs() for p in TESTS.glob(pattern)})
    assert len(modules) > 20, modules  # the globs still find the suite
    found = {p.name: lines for p in modules if (lines := _asyncio_run_calls(p))}
    assert found == {}, f"asyncio.run in modules run inside Pyodide (use aio.run): {found}"
