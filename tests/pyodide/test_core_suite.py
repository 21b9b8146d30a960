"""Run the project's CPython core test modules inside Pyodide (Node by default).

The modules matching :data:`SUITE_GLOBS` (plus the helper modules next to them: every
``tests/*.py`` that is not a ``test_*.py``, such as ``aio.py``, ``helpers.py`` and
``conftest.py``; and the project's ``pyproject.toml`` for the pytest settings) are
written into Pyodide's file system, and ``pytest.main`` runs them there against the
pysite_agent wheel of the test bundle. The exit code must be 0; pytest's summary line is shown
in the session's "pyodide" section.

``PYSITE_PYODIDE_SUITE_RUNTIMES`` (default ``node``) lists the runtimes this runs on, e.g.
``node,chrome``. ``PYSITE_PYODIDE_SUITE_DIR`` replaces ``tests/`` as the source folder.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

SUITE_GLOBS = ("test_core_*.py", "test_agent_*.py", "test_models_*.py", "test_tools_*.py")
SUITE_RUNTIMES = {
    rt.strip() for rt in os.environ.get("PYSITE_PYODIDE_SUITE_RUNTIMES", "node").split(",")
}
TIMEOUT_S = 1200
ROOT = Path(__file__).resolve().parents[2]


def suite_files(tests_dir: Path) -> dict[str, str]:
    """Relative path (as seen in Pyodide) -> text, for the modules to run and their helpers,
    and the example eval sets."""
    files: dict[str, str] = {}
    for pattern in SUITE_GLOBS:
        for path in sorted(tests_dir.glob(pattern)):
            files[f"tests/{path.name}"] = path.read_text(encoding="utf-8")
    if not files:
        return files
    for path in sorted(tests_dir.glob("*.py")):
        if not path.name.startswith("test_"):
            files[f"tests/{path.name}"] = path.read_text(encoding="utf-8")
    pyproject = ROOT / "pyproject.toml"
    files["pyproject.toml"] = pyproject.read_text(encoding="utf-8")
    for path in sorted((ROOT / "examples").glob("*evals.json")):  # the eval sets some read
        files[f"examples/{path.name}"] = path.read_text(encoding="utf-8")
    return files


#: Runs in Pyodide through the synchronous ``runPython``: like pytest on CPython, the suite then
#: starts with no running event loop and no current task (``run_in_pyodide`` code runs inside a
#: task of Pyodide's own loop, where Python 3.14 refuses to enter a task of a second loop).
_RUNNER = """
import base64, contextlib, io, json, os, sys
from pathlib import Path
import pytest

_job = json.loads(base64.b64decode(%r))
_root = Path("/tmp/pysite-suite")
for _rel, _text in _job["files"].items():
    _path = _root / _rel
    _path.parent.mkdir(parents=True, exist_ok=True)
    _path.write_text(_text, encoding="utf-8")


class _PyodideSettings:
    # WebAssembly is slower and its timing noisier than CPython: no per-example deadline, and
    # no example database on the throw-away file system. Applied on top of the profile the
    # suite's conftest loaded; hypothesis is imported only here, after pytest has set up
    # assertion rewriting.
    @staticmethod
    def pytest_configure(config):
        from hypothesis import settings

        settings.register_profile("pyodide", parent=settings(), deadline=None, database=None)
        settings.load_profile("pyodide")


_cwd = os.getcwd()
os.chdir(_root)
sys.path.insert(0, str(_root))
_out = io.StringIO()
try:
    with contextlib.redirect_stdout(_out), contextlib.redirect_stderr(_out):
        try:
            _code = int(pytest.main(_job["argv"], plugins=[_PyodideSettings()]))
        except BaseException as _exc:  # report, do not lose the output
            import traceback

            traceback.print_exc(file=_out)
            _code = -1
finally:
    os.chdir(_cwd)
    sys.path.remove(str(_root))
json.dumps({"code": _code, "output": _out.getvalue()})
"""


def _run_pytest(selenium: Any, files: dict[str, str], argv: list[str]) -> tuple[int, str]:
    selenium.load_package(["pysite-agent", "pytest", "hypothesis", "hypothesis-jsonschema"])
    job = base64.b64encode(json.dumps({"files": files, "argv": argv}).encode()).decode()
    result = json.loads(selenium.run(_RUNNER % job))
    return int(result["code"]), str(result["output"])


def _summary_line(output: str) -> str:
    for line in reversed(output.strip().splitlines()):
        if line.startswith("=") or " in " in line:
            return line.strip("= ").strip()
    return "(no summary line)"


@pytest.mark.runtimes(*SUITE_RUNTIMES)
@pytest.mark.driver_timeout(TIMEOUT_S)
def test_core_suite_in_pyodide(
    runtime: str, request: pytest.FixtureRequest, pyodide_summary: list[str]
) -> None:
    if runtime not in SUITE_RUNTIMES:
        pytest.fail(f"the core suite runs in Pyodide on {sorted(SUITE_RUNTIMES)} only")
    tests_dir = Path(os.environ.get("PYSITE_PYODIDE_SUITE_DIR", ROOT / "tests"))
    files = suite_files(tests_dir)
    if not files:
        pytest.fail(f"no module matching {', '.join(SUITE_GLOBS)} in {tests_dir}")
    modules = sorted(rel for rel in files if rel.startswith("tests/test_"))
    selenium = request.getfixturevalue("selenium")
    # The Node runner waits for a result with pexpect's default timeout (60 s): lift it.
    process = getattr(selenium, "p", None)
    if process is not None:
        process.timeout = TIMEOUT_S
    argv = ["-p", "no:cacheprovider", "--color=no", "--tb=short", "-q", "-rfE", *modules]
    started = time.monotonic()
    code, output = _run_pytest(selenium, files, argv)
    elapsed = time.monotonic() - started
    line = _summary_line(output)
    pyodide_summary.append(
        f"core suite in Pyodide ({runtime}, {len(modules)} modules): {line} "
        f"[{elapsed:.1f} s incl. transfer]"
    )
    assert code == 0, f"pytest inside Pyodide exited with {code}:\n{output[-6000:]}"
