"""``bundle --jupyterlite``: the settings it merges, the folders it refuses, the notebook, the pins.

The whole target (a real build and a site in Chromium) is tested in
``tests/browser/test_jupyterlite.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pysite_agent.bundle import _pins, build_jupyterlite
from pysite_agent.bundle._jupyterlite import (
    EXAMPLE_CELLS,
    KERNEL_PLUGIN,
    PYODIDE_URL,
    build_settings,
    lite_settings,
    notebook,
)
from pysite_agent.cli.bundle import add_command


def test_the_kernel_settings_are_set_and_every_other_key_is_kept() -> None:
    mine = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "Notes lab",
            "litePluginSettings": {
                KERNEL_PLUGIN: {"pyodideUrl": "https://elsewhere/pyodide.mjs", "keep": 1},
                "other:plugin": {"x": True},
            },
        },
    }
    merged = lite_settings(mine)
    config = merged["jupyter-config-data"]
    assert config["appName"] == "Notes lab"
    assert config["litePluginSettings"]["other:plugin"] == {"x": True}
    kernel = config["litePluginSettings"][KERNEL_PLUGIN]
    assert kernel == {"pyodideUrl": PYODIDE_URL, "disablePyPIFallback": True, "keep": 1}
    assert mine["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]["keep"] == 1
    assert lite_settings(merged) == merged  # idempotent
    assert lite_settings({})["jupyter-lite-schema-version"] == 0


def test_the_build_settings_add_files_once_and_keep_the_rest() -> None:
    merged = build_settings({"LiteBuildConfig": {"contents": ["notebooks"], "apps": ["lab"]}})
    assert merged["LiteBuildConfig"] == {"contents": ["notebooks", "files"], "apps": ["lab"]}
    assert build_settings(merged) == merged


@pytest.mark.parametrize(
    "bad", [{"jupyter-config-data": []}, {"jupyter-config-data": {"litePluginSettings": 3}}]
)
def test_settings_that_are_not_objects_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError, match="is not an object"):
        lite_settings(bad)


def test_a_folder_that_is_not_a_jupyterlite_source_is_refused(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="not a JupyterLite source folder"):
        build_jupyterlite(tmp_path, progress=lambda line: None)
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.tex"]


def test_a_settings_file_that_is_not_json_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "jupyter-lite.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(ValueError, match="is not JSON"):
        build_jupyterlite(tmp_path, progress=lambda line: None)
    assert [p.name for p in tmp_path.iterdir()] == ["jupyter-lite.json"]


def test_the_example_notebook_is_nbformat_4_for_the_pyodide_kernel() -> None:
    nb = notebook()
    assert nb["nbformat"] == 4 and nb["metadata"]["kernelspec"]["name"] == "python"
    assert len(nb["cells"]) == len(EXAMPLE_CELLS)
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert sources[0] == "%pip install pysite_agent"
    code = "\n".join(sources)
    for name in ("sa.notebook_confirm", "sa.custom(", "read_only=True", "sa.replay(", "TraceView"):
        assert name in code
    json.dumps(nb)  # JSON data only
    for cell in sources[1:]:
        compile(cell.replace("await ", ""), "<cell>", "exec")


def test_the_kernel_wheels_are_pinned_once_each() -> None:
    names = [w.name for w in _pins.JUPYTERLITE_WHEELS]
    assert len(names) == len(set(names))
    assert {"comm", "jedi", "ipython"} <= set(names)
    for wheel in _pins.JUPYTERLITE_WHEELS:
        assert len(wheel.sha256) == 64 and wheel.file_name.endswith("-none-any.whl")
    shared = {w.name: w for w in _pins.TEST_WHEELS} | {w.name: w for w in _pins.RUNTIME_WHEELS}
    for wheel in _pins.JUPYTERLITE_WHEELS:
        if wheel.name in shared:
            assert shared[wheel.name] == wheel, f"{wheel.name} pinned twice, differently"


def test_the_command_line_has_the_option() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    args = parser.parse_args(["bundle", "OUT", "--jupyterlite"])
    assert args.jupyterlite is True and args.out == "OUT"
    assert parser.parse_args(["bundle", "OUT"]).jupyterlite is False
