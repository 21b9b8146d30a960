"""The self-hosted bundle: ``python -m pysite_agent bundle OUT``.

CPython-only tooling (standard library and ``packaging``); nothing here runs in the browser.
"""

from __future__ import annotations

import tarfile
import zipfile

from pysite_agent.bundle._build import (
    MANIFEST,
    BundleFile,
    BundleReport,
    build_bundle,
    checkout_root,
    default_cache_dir,
)
from pysite_agent.bundle._compress import ENCODINGS, negotiate
from pysite_agent.bundle._fetch import DownloadError, IntegrityError
from pysite_agent.bundle._jupyterlite import build_jupyterlite
from pysite_agent.bundle._lock import LockError, rewrite_lock
from pysite_agent.bundle._requantize import MissingExtraError
from pysite_agent.bundle._stdlib import PrecompileError

BUILD_ERRORS = (
    DownloadError,
    IntegrityError,
    LockError,
    LookupError,
    MissingExtraError,
    OSError,
    PrecompileError,
    tarfile.TarError,
    zipfile.BadZipFile,
)
"""What a bundle build reports as a readable one-line problem (a download, the cache, the
disk, the lock), not as a traceback."""

__all__ = [
    "BUILD_ERRORS",
    "ENCODINGS",
    "MANIFEST",
    "BundleFile",
    "BundleReport",
    "DownloadError",
    "IntegrityError",
    "LockError",
    "MissingExtraError",
    "PrecompileError",
    "build_bundle",
    "build_jupyterlite",
    "checkout_root",
    "default_cache_dir",
    "negotiate",
    "rewrite_lock",
]
