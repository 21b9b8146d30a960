"""Rewrite ``pyodide-lock.json`` so that it lists exactly the wheels of the bundle.

The browser checks each wheel's sha256 against the lock, and Pyodide resolves ``depends`` and
``imports`` from it, so every entry is computed from the wheel file itself.
"""

from __future__ import annotations

import email.message
import email.parser
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from pysite_agent.bundle._fetch import sha256_file


class LockError(ValueError):
    """The wheels do not form a closed, consistent set for Pyodide."""


def marker_environment(info: Mapping[str, Any]) -> dict[str, str]:
    """PEP 508 marker values for the Pyodide described by the lock's ``info`` block."""
    python = str(info["python"])
    major, minor = python.split(".")[:2]
    platform = str(info.get("platform", "emscripten"))
    return {
        "implementation_name": "cpython",
        "implementation_version": python,
        "os_name": "posix",
        "platform_machine": str(info.get("arch", "wasm32")),
        "platform_python_implementation": "CPython",
        "platform_release": platform.removeprefix("emscripten_").replace("_", "."),
        "platform_system": "Emscripten",
        "platform_version": "#1",
        "python_full_version": python,
        "python_version": f"{major}.{minor}",
        "sys_platform": "emscripten",
        "extra": "",
    }


def _metadata(zf: zipfile.ZipFile) -> email.message.Message:
    names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(names) != 1:
        raise LockError(f"{zf.filename}: expected one .dist-info/METADATA, found {names}")
    return email.parser.BytesParser().parsebytes(zf.read(names[0]), headersonly=True)


def _imports(names: Iterable[str]) -> list[str]:
    """Top-level importable names: packages (folders) and modules (``.py`` files); a
    top-level ``__pycache__`` holds the bytecode of such modules, not a package."""
    found: set[str] = set()
    for name in names:
        head, sep, _ = name.partition("/")
        if head.endswith((".dist-info", ".data")) or head == "__pycache__":
            continue
        if sep:
            found.add(head)
        elif head.endswith(".py"):
            found.add(head[:-3])
    return sorted(found)


def package_entry(wheel: Path) -> tuple[dict[str, Any], list[Requirement]]:
    """The lock entry of one wheel (``depends`` still empty) and its Requires-Dist."""
    name, version, _build, tags = parse_wheel_filename(wheel.name)
    if not all(t.abi == "none" and t.platform == "any" for t in tags):
        raise LockError(f"{wheel.name}: only pure-Python wheels belong in the bundle")
    with zipfile.ZipFile(wheel) as zf:
        meta = _metadata(zf)
        imports = _imports(zf.namelist())
    if canonicalize_name(meta["Name"]) != name or Version(meta["Version"]) != version:
        raise LockError(f"{wheel.name}: METADATA says {meta['Name']} {meta['Version']}")
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    entry: dict[str, Any] = {
        "depends": [],
        "file_name": wheel.name,
        "imports": imports,
        "install_dir": "site",
        "name": meta["Name"],
        "package_type": "package",
        "sha256": sha256_file(wheel),
        "tool": {},
        "unvendored_tests": False,
        "version": meta["Version"],
    }
    return entry, requires


def rewrite_lock(upstream: Mapping[str, Any], wheels: Iterable[Path]) -> dict[str, Any]:
    """A lock with ``upstream``'s ``info`` (and other top-level keys) and only ``wheels``.

    Raises :class:`LockError` if a wheel needs (on this Pyodide) a distribution that is missing
    or present in a version its requirement excludes.
    """
    env = marker_environment(upstream["info"])
    packages: dict[str, dict[str, Any]] = {}
    requirements: dict[str, list[Requirement]] = {}
    for wheel in wheels:
        entry, requires = package_entry(wheel)
        key = canonicalize_name(entry["name"])
        if key in packages:
            raise LockError(f"two wheels of {key}: {packages[key]['file_name']}, {wheel.name}")
        packages[key] = entry
        requirements[key] = requires
    for owner, requires in requirements.items():
        depends: set[str] = set()
        for req in requires:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            dep = canonicalize_name(req.name)
            if dep not in packages:
                raise LockError(f"{owner} needs {req} on Pyodide, but the bundle has no {dep}")
            have = packages[dep]["version"]
            if not req.specifier.contains(have, prereleases=True):
                raise LockError(f"{owner} needs {req}, but the bundle has {dep} {have}")
            depends.add(dep)
        packages[owner]["depends"] = sorted(depends)
    lock = {k: v for k, v in upstream.items() if k != "packages"}
    lock["packages"] = dict(sorted(packages.items()))
    return lock
