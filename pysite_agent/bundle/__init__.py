"""The self-hosted bundle: ``python -m pysite_agent bundle OUT``.

CPython-only tooling (standard library and ``packaging``); nothing here runs in the browser.
"""

from __future__ import annotations

from pysite_agent.bundle._build import (
    MANIFEST,
    BundleFile,
    BundleReport,
    build_bundle,
    checkout_root,
    default_cache_dir,
)
from pysite_agent.bundle._fetch import IntegrityError
from pysite_agent.bundle._lock import LockError, rewrite_lock

__all__ = [
    "MANIFEST",
    "BundleFile",
    "BundleReport",
    "IntegrityError",
    "LockError",
    "build_bundle",
    "checkout_root",
    "default_cache_dir",
    "rewrite_lock",
]
