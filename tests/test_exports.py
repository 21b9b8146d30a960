"""Every name the Python API's documentation uses is importable from ``pysite_agent``."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pysite_agent as sa

ROOT = Path(__file__).resolve().parents[1]
# The Python API's pages, and the README's section on it; the server (a separate extra)
# documents its own import path.
PAGES = ("docs/models.md", "docs/python-api.md")
README_SECTION = "## The Python API"


def _sections() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    parts = re.split(r"(?m)^(?=## )", readme)
    texts = [p for p in parts if p.startswith(README_SECTION)]
    assert texts, f"README.md has no section {README_SECTION!r}"
    texts += [(ROOT / page).read_text(encoding="utf-8") for page in PAGES]
    return "\n".join(texts)


def _named_in_docs() -> set[str]:
    text = _sections()
    names = set(re.findall(r"`(?:sa\.)?([A-Za-z_]\w*)", text))
    names |= set(re.findall(r"\bsa\.([A-Za-z_]\w*)", text))
    for group in re.findall(r"from pysite_agent import \(?([\w, \n]+)\)?", text):
        names |= {n.strip() for n in group.replace("\n", ",").split(",") if n.strip()}
    return {n for n in names if not hasattr(builtins, n)}


def _public_names() -> set[str]:
    """Public classes and functions of the package's modules (the server's and the element
    glue's excepted): its ``__all__``, or what it defines without a leading underscore."""
    names: set[str] = set()
    for info in pkgutil.walk_packages(sa.__path__, "pysite_agent."):
        private = any(part.startswith("_") for part in info.name.split("."))
        if private or info.name.startswith(("pysite_agent.server", "pysite_agent.browser")):
            continue
        module = importlib.import_module(info.name)
        published = getattr(module, "__all__", None)
        if published is None:
            published = [
                name
                for name, value in vars(module).items()
                if not name.startswith("_")
                and (inspect.isclass(value) or inspect.isfunction(value))
                and value.__module__ == module.__name__
            ]
        names |= set(published)
    return names


def test_every_name_the_api_docs_use_is_exported() -> None:
    used = _named_in_docs() & _public_names()
    assert {"proxy", "chrome_built_in", "create_site_agent", "replay"} <= used
    missing = sorted(n for n in used if n not in sa.__all__ or not hasattr(sa, n))
    assert missing == [], f"names in the API docs not exported from pysite_agent: {missing}"


def test_the_documented_models_are_callable_from_the_package() -> None:
    model = sa.proxy("/api/agent")
    assert isinstance(model.name, str) and callable(model.respond)
    chrome = sa.chrome_built_in()
    assert isinstance(chrome.name, str) and callable(chrome.respond)
