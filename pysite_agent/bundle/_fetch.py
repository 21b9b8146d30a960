"""Downloads into a cache folder, each file checked against its pinned sha256."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pysite_agent.bundle._pins import Wheel

#: PyPI's simple index (PEP 691 JSON). Override with ``PYSITE_AGENT_INDEX_URL`` for a mirror.
DEFAULT_INDEX_URL = "https://pypi.org/simple"
_TIMEOUT = 120.0


class IntegrityError(RuntimeError):
    """A downloaded or cached file does not have its pinned sha256."""


class DownloadError(RuntimeError):
    """A file or an index page could not be fetched; the message says which and why (no
    traceback needed: the network, a proxy, an HTTP status, a timeout)."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    if isinstance(exc, TimeoutError):
        return f"no answer within {_TIMEOUT:.0f} s"
    return str(exc) or type(exc).__name__


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, dest: Path, sha256: str) -> None:
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "pysite-agent-bundle"})
        try:
            with (
                urllib.request.urlopen(request, timeout=_TIMEOUT) as response,
                tmp.open("wb") as fh,
            ):
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    digest.update(chunk)
                    fh.write(chunk)
        except (OSError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts
            raise DownloadError(f"could not download {url}: {_reason(exc)}") from None
        if digest.hexdigest() != sha256:
            raise IntegrityError(
                f"{url}: sha256 {digest.hexdigest()} differs from the pinned {sha256}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def cached(
    dest: Path, sha256: str, url: Callable[[], str], progress: Callable[[str], object]
) -> bool:
    """Make ``dest`` hold the file with ``sha256``, downloading from ``url()`` if needed.

    Returns True when the file was downloaded. A cached file with another hash is replaced.
    """
    if dest.is_file():
        if sha256_file(dest) == sha256:
            return False
        progress(f"cache: {dest.name} has the wrong sha256, fetching it again")
    damaged = dest.is_file()
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        source = url()
        progress(f"download: {source}")
        _download(source, dest, sha256)
    except (DownloadError, IntegrityError, LookupError) as exc:
        if damaged:
            note = f"the cached {dest.name} is damaged: it needs a new copy"
            raise type(exc)(f"{exc} ({note})") from None
        raise
    return True


def pypi_url(wheel: Wheel, index_url: str | None = None) -> str:
    """The download URL of ``wheel``, looked up in the simple index (JSON form)."""
    index = (index_url or os.environ.get("PYSITE_AGENT_INDEX_URL") or DEFAULT_INDEX_URL).rstrip("/")
    request = urllib.request.Request(
        f"{index}/{wheel.name}/",
        headers={
            "Accept": "application/vnd.pypi.simple.v1+json",
            "User-Agent": "pysite-agent-bundle",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:
            page = json.load(response)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        where = f"{index}/{wheel.name}/"
        raise DownloadError(
            f"could not look up {wheel.file_name} at {where}: {_reason(exc)}"
        ) from None
    for entry in page.get("files", []):
        if entry.get("filename") == wheel.file_name:
            listed = entry.get("hashes", {}).get("sha256")
            if listed and listed != wheel.sha256:
                raise IntegrityError(
                    f"{wheel.file_name}: the index lists sha256 {listed}, pinned {wheel.sha256}"
                )
            url: str = entry["url"]
            return urllib.parse.urljoin(f"{index}/{wheel.name}/", url)
    raise LookupError(f"{wheel.file_name} is not listed at {index}/{wheel.name}/")
