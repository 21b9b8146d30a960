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


def _suite() -> dict[str, str]:
    """What the Pyodide lane writes into Pyodide: its test modules and their helpers."""
    spec = importlib.util.spec_from_file_location(
        "_suite", TESTS / "pyodide" / "test_core_suite.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files: dict[str, str] = module.suite_files(TESTS)
    return {name: text for name, text in files.items() if name.endswith(".py")}


def _asyncio_run_calls(text: str) -> list[int]:
    """Lines that call ``asyncio.run`` (also as ``from asyncio import run [as x]``)."""
    lines = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            lines.extend(node.lineno for alias in node.names if alias.name == "run")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "asyncio"
        ):
            lines.append(node.lineno)
    return lines


def test_the_pyodide_suite_drives_coroutines_with_aio_run() -> None:
    files = _suite()
    assert len(files) > 20 and "tests/aio.py" in files and "tests/helpers.py" in files
    found = {name: lines for name, text in files.items() if (lines := _asyncio_run_calls(text))}
    assert found == {}, f"asyncio.run in modules run inside Pyodide (use aio.run): {found}"


def test_the_check_finds_each_spelling() -> None:
    for text in (
        "import asyncio\nasyncio.run(main())",
        "from asyncio import run\nrun(main())",
        "from asyncio import sleep, run as go\ngo(main())",
    ):
        assert _asyncio_run_calls(text), text
    assert _asyncio_run_calls("from aio import run\nrun(main())") == []
