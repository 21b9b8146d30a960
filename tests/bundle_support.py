"""Shared by the bundle's tests that run real Node: Pyodide's core files out of the cached
npm tarball (no network), and the Node to run them with."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from pysite_agent.bundle import _pins, _stdlib, default_cache_dir

CACHE = default_cache_dir()
TARBALL = CACHE / "npm" / f"pyodide-{_pins.PYODIDE.version}.tgz"


def node() -> str:
    """A Node 20+ (fails the test without one: CI installs it)."""
    found, why = _stdlib.node_executable()
    if found is None:
        pytest.fail(f"these tests need Node {_stdlib.MIN_NODE}+: {why}")
    return found


def extract_core(out: Path) -> Path:
    """Pyodide's core files and its lock in ``out``, from the cached tarball; returns ``out``."""
    if not TARBALL.is_file():
        pytest.fail(f"{TARBALL} is missing: run python -m pysite_agent bundle once")
    with tarfile.open(TARBALL, "r:gz") as tf:
        for name in (*_pins.PYODIDE.files, "pyodide-lock.json"):
            member = tf.extractfile(f"package/{name}")
            assert member is not None
            (out / name).write_bytes(member.read())
    return out


def fake_node(folder: Path, body: str) -> Path:
    """An executable ``folder/node`` shell script with ``body`` (a Node that is too old, or
    fails)."""
    path = folder / "node"
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path
