"""The JS import rules (``tests/js_imports.py``): the tree keeps them, and each can fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from js_imports import ROOT, main, violations

RUNTIME_UP = "web/runtime/ never imports web/element/ or web/webmcp/"
WEBMCP_OUT = "web/webmcp/ imports nothing outside itself"


def test_the_tree_keeps_the_js_import_rules() -> None:
    assert violations(ROOT) == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of ``loader.js`` and ``web/`` to plant violations in."""
    shutil.copy(ROOT / "loader.js", tmp_path / "loader.js")
    shutil.copytree(ROOT / "web", tmp_path / "web")
    assert violations(tmp_path) == []
    return tmp_path


def plant(root: Path, name: str, line: str) -> None:
    path = root / name
    path.write_text(line + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")


def test_a_planted_circle_fails(tree: Path) -> None:
    # settings.js is the bottom of web/runtime/: importing the facade back closes a circle.
    plant(tree, "web/runtime/settings.js", "import { connectAgent } from './runtime.js';")
    (found,) = violations(tree)
    assert found.startswith("import circle: "), found
    assert "web/runtime/settings.js -> web/runtime/runtime.js" in found, found
    assert main(["js_imports.py", str(tree)]) == 1


def test_a_circle_through_a_dynamic_import_fails(tree: Path) -> None:
    plant(tree, "web/webmcp/schema.js", "const later = () => import('./core.js');")
    (found,) = violations(tree)
    assert found.startswith("import circle: "), found
    assert "web/webmcp/schema.js -> web/webmcp/core.js" in found, found


def test_an_upward_import_from_the_runtime_fails(tree: Path) -> None:
    plant(tree, "web/runtime/channel.js", "import { styles } from '../element/styles.js';")
    assert violations(tree) == [
        f"web/runtime/channel.js:1: imports web/element/styles.js: {RUNTIME_UP}"
    ]
    plant(tree, "web/runtime/worker.js", "import { isShim } from '../webmcp/shim.js';")
    assert f"web/runtime/worker.js:1: imports web/webmcp/shim.js: {RUNTIME_UP}" in violations(tree)


def test_webmcp_importing_outside_itself_fails(tree: Path) -> None:
    plant(tree, "web/webmcp/forms.js", "import { mark } from '../runtime/settings.js';")
    assert violations(tree) == [
        f"web/webmcp/forms.js:1: imports web/runtime/settings.js: {WEBMCP_OUT}"
    ]


def test_multi_line_imports_and_url_imports_are_read(tree: Path) -> None:
    multi = "import {\n  mark,\n  saveData,\n} from '../runtime/settings.js';"
    plant(tree, "web/webmcp/frames.js", multi)
    url = "const x = import(new URL('../element/styles.js', import.meta.url).href);"
    plant(tree, "web/webmcp/doctor.js", url)
    assert violations(tree) == [
        f"web/webmcp/doctor.js:1: imports web/element/styles.js: {WEBMCP_OUT}",
        f"web/webmcp/frames.js:4: imports web/runtime/settings.js: {WEBMCP_OUT}",
    ]


def test_a_commented_import_is_not_an_import(tree: Path) -> None:
    text = "// import { h } from '../element/styles.js';\n/* import('../element/styles.js') */"
    plant(tree, "web/runtime/channel.js", text)
    assert violations(tree) == []


def test_bare_missing_and_computed_imports_fail(tree: Path) -> None:
    plant(tree, "web/element/styles.js", "import lit from 'lit';")
    plant(tree, "web/element/visit.js", "import { x } from './nowhere.js';")
    plant(tree, "web/element/element.js", "const m = (u) => import(u);")
    assert violations(tree) == [
        "web/element/element.js:1: a dynamic import of a computed URL outside web/runtime/",
        "web/element/styles.js:1: 'lit' is not a relative path",
        "web/element/visit.js:1: './nowhere.js' names no file (web/element/nowhere.js)",
    ]


def test_nothing_under_web_imports_the_loader(tree: Path) -> None:
    plant(tree, "web/element/visit.js", "import '../../loader.js';")
    rule, circle = violations(tree)
    assert rule == "web/element/visit.js:1: imports loader.js: nothing under web/ imports loader.js"
    assert circle.startswith("import circle: loader.js -> web/element/element.js -> "), circle
    assert circle.endswith(" -> web/element/visit.js -> loader.js"), circle


def test_a_worker_script_keeps_the_room_rules_but_closes_no_circle(tree: Path) -> None:
    # boot.js starts snapshot-worker.js, which imports boot.js: a new realm, not a circle.
    boot = (tree / "web/runtime/boot.js").read_text(encoding="utf-8")
    assert 'new URL("./snapshot-worker.js", import.meta.url)' in boot
    assert "new Worker(scriptURL(" in boot  # through the Trusted Types policy (settings.js)
    worker = "const w = () => new Worker(new URL('../element/visit.js', import.meta.url));"
    plant(tree, "web/runtime/channel.js", worker)
    assert violations(tree) == [
        f"web/runtime/channel.js:1: imports web/element/visit.js: {RUNTIME_UP}"
    ]
