"""``bundle OUT --jupyterlite``: the pieces of a JupyterLite site that runs pysite-agent offline.

OUT is a JupyterLite *source* folder (``jupyter lite build`` runs in it and writes ``_output/``,
the site); it may already be one (the pieces are dropped into it, nothing else is touched)::

    OUT/static/pyodide/            the bundle's Pyodide: core, pyodide-lock.json and the wheels
                                   (pysite_agent's, its dependencies', and the kernel's own:
                                   comm, jedi, ipython and theirs; all pinned by sha256)
    OUT/jupyter-lite.json          the kernel's settings, merged into what is there already:
                                   pyodideUrl (this Pyodide) and disablePyPIFallback (no PyPI)
    OUT/jupyter_lite_config.json   the build's settings, merged likewise (contents: files/)
    OUT/files/pysite-agent.ipynb   the example notebook
    OUT/static/pyodide/bundle-manifest.json   versions, sizes and sha256 of the Pyodide files

Why each piece (measured with jupyterlite-core and jupyterlite-pyodide-kernel 0.8.6):

- ``static/pyodide/`` is where the kernel's build add-on looks for a local Pyodide; it copies
  it into the site. npm's Pyodide package has no wheels (not even micropip), so only a lock
  whose every wheel is next to it works offline; that is the bundle's.
- Each build merges the source folder's ``jupyter-lite.json`` into the built one, and a
  plugin's settings object from the source replaces the built one whole; the add-on writes
  ``pyodideUrl`` into it only when ``pyodide.mjs`` changed since the last build (a build step
  with that file as its only input). So a rebuild after adding any kernel setting to the
  source (``disablePyPIFallback``, say) silently lost ``pyodideUrl``. Written in the source
  ``jupyter-lite.json`` itself, it is part of every build.
- The kernel installs ``comm``, ``jedi`` and ``ipython`` when it starts; with PyPI switched off
  they must be in the lock.
- ``jupyter lite build`` needs ``jupyter_server`` to turn ``files/`` into the site's contents.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysite_agent.bundle import _build, _pins

#: The kernel's plugin id: its settings live under this key of ``litePluginSettings``.
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
#: Where the kernel's build add-on takes a local Pyodide from, relative to the source folder.
PYODIDE_DIR = "static/pyodide"
#: ``pyodideUrl``: relative to the site's root, as the add-on itself writes it.
PYODIDE_URL = f"./{PYODIDE_DIR}/pyodide.mjs"
EXAMPLE_NOTEBOOK = "files/pysite-agent.ipynb"
#: The versions this target was tested with (docs/python-in-the-page.md, "JupyterLite").
TESTED_WITH = {"jupyterlite-core": "0.8.6", "jupyterlite-pyodide-kernel": "0.8.6"}
_SOURCE_MARKERS = ("jupyter-lite.json", "jupyter_lite_config.json", PYODIDE_DIR)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} is not JSON ({exc}): fix or remove it, then run again") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object: fix or remove it, then run again")
    return data


def _object(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{where}: {key!r} is not an object")
    return value


def lite_settings(existing: dict[str, Any]) -> dict[str, Any]:
    """``jupyter-lite.json`` with the kernel pointed at the bundle's Pyodide and PyPI off.

    Every other key of ``existing`` is kept as it is (a site's own settings survive a new
    bundle). Raises ``ValueError`` when a key on the way is not an object.
    """
    data: dict[str, Any] = json.loads(json.dumps(existing))
    data.setdefault("jupyter-lite-schema-version", 0)
    config = _object(data, "jupyter-config-data", "jupyter-lite.json")
    plugins = _object(config, "litePluginSettings", "jupyter-lite.json")
    kernel = _object(plugins, KERNEL_PLUGIN, "jupyter-lite.json")
    kernel["pyodideUrl"] = PYODIDE_URL
    kernel["disablePyPIFallback"] = True
    return data


def build_settings(existing: dict[str, Any]) -> dict[str, Any]:
    """``jupyter_lite_config.json``: ``files/`` as the site's contents (other keys kept)."""
    data: dict[str, Any] = json.loads(json.dumps(existing))
    build = _object(data, "LiteBuildConfig", "jupyter_lite_config.json")
    contents = build.get("contents")
    if not isinstance(contents, list):
        contents = []
    if "files" not in contents:
        contents.append("files")
    build["contents"] = contents
    return data


def _code(source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.strip("\n").splitlines(keepends=True),
    }


def _markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source.strip("\n").splitlines(True)}


#: The example notebook's cells (also the start of the end-to-end test's notebook).
EXAMPLE_CELLS: tuple[tuple[str, str], ...] = (
    (
        "markdown",
        """
# pysite-agent in JupyterLite

The agent runs in this kernel (Pyodide in a Web Worker), offline: Python tools, a model of your
own (here a few lines standing in for one; `sa.proxy(url)` for the site's proxy server), and a
confirm that asks you below the cell. Type **yes** to allow; anything else denies.
""",
    ),
    ("code", "%pip install pysite_agent"),
    (
        "code",
        '''
import pysite_agent as sa

registry = sa.ToolRegistry()
notes = []


@registry.tool(read_only=True)
def list_notes() -> str:
    """List the notes, oldest first."""
    return "\\n".join(notes) or "No notes yet."


@registry.tool
def add_note(text: str) -> str:
    """Add a note.

    Args:
        text: what to write down.
    """
    notes.append(text)
    return f"Added note {len(notes)}: {text}"


def note_taker(request: sa.ModelRequest) -> dict:
    """Stands in for a model: "add ..." adds a note, anything else lists them; after a tool
    result it answers with what the tool said."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return {"type": "answer", "text": f"{last['name']}: {last['content']}"}
    if last["content"].startswith("add "):
        return {"type": "tool", "name": "add_note", "arguments": {"text": last["content"][4:]}}
    return {"type": "tool", "name": "list_notes", "arguments": {}}


agent = sa.create_site_agent(
    model=sa.custom(note_taker, name="note taker"),
    tools=registry.tools(),
    confirm=sa.notebook_confirm,
)
''',
    ),
    ("code", 'listed = await agent.run("list my notes").done\nlisted'),
    ("code", 'run = agent.run("add buy milk")\nadded = await run.done   # type yes\nadded'),
    ("code", "run.events"),
    ("code", 'denied = await agent.run("add call the bank").done   # type no\ndenied'),
    ("code", "sa.TraceView(added)"),
    (
        "code",
        """
notes.clear()   # the state the run started from
replayed = await sa.replay(
    added.trace, tools=registry.tools(), confirm=sa.recorded_decisions(added.trace)
)
print("replay differences:", replayed.differences, "| notes:", notes)
""",
    ),
)


def notebook(cells: tuple[tuple[str, str], ...] = EXAMPLE_CELLS) -> dict[str, Any]:
    """An nbformat 4 notebook of ``cells`` (``("code" | "markdown", source)``) for the
    Pyodide kernel."""
    return {
        "cells": [_code(src) if kind == "code" else _markdown(src) for kind, src in cells],
        "metadata": {
            "kernelspec": {
                "display_name": "Python (Pyodide)",
                "language": "python",
                "name": "python",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _check_source_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not any((out / m).exists() for m in _SOURCE_MARKERS):
        raise FileExistsError(
            f"{out} is not empty and is not a JupyterLite source folder (no jupyter-lite.json, "
            f"jupyter_lite_config.json or {PYODIDE_DIR}/): refusing to write into it"
        )


def build_jupyterlite(
    out_dir: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], object] = print,
) -> _build.BundleReport:
    """Write (or update) the JupyterLite source folder ``out_dir``; see the module docstring.

    ``OUT/static/pyodide/`` is replaced as a whole; the two settings files are merged (the
    keys above set, all others kept); the example notebook is written anew. Raises what
    :func:`~pysite_agent.bundle.build_bundle` raises, ``FileExistsError`` for a non-empty
    folder that is not a JupyterLite source folder, and ``ValueError`` for a settings file that
    is not a JSON object.
    """
    out = Path(out_dir).resolve()
    _check_source_dir(out)
    lite_json = out / "jupyter-lite.json"
    config_json = out / "jupyter_lite_config.json"
    settings = lite_settings(_read_json(lite_json))  # checked before anything is written
    config = build_settings(_read_json(config_json))
    out.mkdir(parents=True, exist_ok=True)
    staging = out / "static" / f".pyodide.build-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        report = _build.build_bundle(
            staging, cache_dir=cache_dir, extra_wheels=_pins.JUPYTERLITE_WHEELS, progress=progress
        )
        pyodide = staging / "pyodide"
        shutil.move(str(staging / _build.MANIFEST), str(pyodide / _build.MANIFEST))
        target = out / PYODIDE_DIR
        old = target.with_name(f".pyodide.old-{os.getpid()}")
        if target.exists():
            target.rename(old)
        pyodide.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _write_json(lite_json, settings)
    _write_json(config_json, config)
    _write_json(out / EXAMPLE_NOTEBOOK, notebook())
    progress(
        f"jupyterlite: {out} (Pyodide {report.pyodide_version} in {PYODIDE_DIR}/, "
        f"{EXAMPLE_NOTEBOOK}); build the site with: cd {out} && jupyter lite build"
    )
    return report
