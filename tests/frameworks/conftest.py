"""Fixtures for the framework apps (tests/frameworks/apps, built by build.mjs).

The browser fixtures are those of ``tests/browser/conftest.py`` (``lane``: shim and native,
``browser`` and ``page`` once per module and lane, ``page_log`` failing a test on an uncaught
page error), loaded here under another module name. Added:

``framework_build`` (session)
    Runs ``node tests/frameworks/build.mjs`` once into ``tests/frameworks/build/`` (git-ignored):
    esbuild, the Vue SFC compiler and the Svelte compiler from the pinned ``node_modules`` that
    ``npm ci`` installed (``.ci/setup``); offline. Without node or those packages the tests skip,
    and under ``CI=true`` they fail.
``bakery_site`` (session)
    The self-hosted bundle (``tests/browser/element_support.e2e_bundle``) with the built apps on
    top, served by the demo server on a free loopback port: ``/react/index.html``, ``/vue/...``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BROWSER = REPO / "tests" / "browser"
BUILD = HERE / "build"
sys.path.append(str(BROWSER))

_spec = importlib.util.spec_from_file_location(
    "browser_conftest_for_frameworks", BROWSER / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_browser = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _browser
_spec.loader.exec_module(_browser)

# The same fixtures and hooks as tests/browser (pytest collects them from this module's names).
lane = _browser.lane
playwright = _browser.playwright
browser = _browser.browser
page = _browser.page
page_log = _browser.page_log
artifacts_dir = _browser.artifacts_dir
pytest_runtest_setup = _browser.pytest_runtest_setup
pytest_runtest_call = _browser.pytest_runtest_call
pytest_runtest_makereport = _browser.pytest_runtest_makereport


@pytest.fixture(scope="session")
def framework_build() -> Path:
    """The built apps (one folder per framework, each with index.html and app.js)."""
    node = shutil.which("node")
    if node is None:
        _browser.unavailable("no node on PATH (the framework apps are built with Node)")
    for package in ("esbuild", "react", "vue", "svelte", "lit", "preact"):
        if not (REPO / "node_modules" / package / "package.json").is_file():
            _browser.unavailable(f"node_modules/{package} is missing: run `npm ci` (.ci/setup)")
    done = subprocess.run(
        [node, str(HERE / "build.mjs"), str(BUILD)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"building the framework apps failed:\n{done.stderr}", pytrace=False)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["out"]) == BUILD
    return BUILD


@pytest.fixture(scope="session")
def bakery_site(framework_build: Path) -> Iterator[Any]:
    from element_support import e2e_bundle

    from pysite_agent.cli.demo import DemoServer

    server = DemoServer([e2e_bundle(), framework_build], port=0).start()
    yield server
    server.stop()
