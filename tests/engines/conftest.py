"""Fixtures for the Firefox and WebKit lanes: the visitor's paths in the engines without WebMCP,
the Prompt API or JSPI (docs/browsers.md).

``engine`` (module, parametrized)
    ``"firefox"`` (Debian's ``firefox-esr``, headless, through geckodriver) or ``"webkit"``
    (WebKitGTK's ``MiniBrowser`` through ``WebKitWebDriver``, on an Xvfb display this fixture
    starts when there is none). ``PYSITE_ENGINES=firefox`` (or ``webkit``) runs one only.
``driver`` (module)
    A Selenium ``WebDriver`` for the engine, with a fresh profile; one per module and engine.
``page`` (module)
    An :class:`engine_page.EnginePage` over ``driver``: the Playwright method names the
    Chromium helpers (``tests/browser/element_support.py``) use.
``instrument(folder, init_js)``
    Writes into ``folder`` a copy of each page of ``examples/`` that first loads
    ``/__engines/init.js`` (the recorder of ``element_support.RECORDER`` plus ``init_js``):
    WebDriver classic has no init scripts, so the pages carry it. Serve ``folder`` in front
    of the bundle and ``examples/`` (``site_with``).

A test whose page threw an uncaught error or left a promise rejection unhandled FAILS (unless
it called ``page.allowed_errors.append(regex)``). A browser or driver that cannot start skips
with the reason outside CI and fails under ``CI=true``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.append(str(REPO / "tests" / "browser"))

from engine_page import EnginePage  # noqa: E402
from engine_support import ENGINES, Unavailable, start_driver, x_display  # noqa: E402


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> NoReturn:
    if in_ci():
        pytest.fail(f"engine tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"engine tests skipped: {reason}")


def _selected() -> list[str]:
    wanted = [n.strip() for n in os.environ.get("PYSITE_ENGINES", "").split(",") if n.strip()]
    unknown = [n for n in wanted if n not in ENGINES]
    if unknown:
        raise pytest.UsageError(f"PYSITE_ENGINES: unknown engine(s) {unknown}; use {ENGINES}")
    return wanted or list(ENGINES)


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine-overlay")


# --------------------------------------------------------------------------- browsers


@pytest.fixture(scope="module", params=_selected())
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def driver(engine: str) -> Iterator[Any]:
    with contextlib.ExitStack() as stack:
        try:
            if engine == "webkit":
                stack.enter_context(x_display())
            instance = start_driver(engine)
        except Unavailable as exc:
            unavailable(str(exc))
        try:
            yield instance
        finally:
            with contextlib.suppress(Exception):
                instance.quit()


@pytest.fixture(scope="module")
def page(driver: Any, engine: str) -> EnginePage:
    return EnginePage(driver, engine)


@pytest.fixture
def new_driver(engine: str) -> Iterator[Callable[..., Any]]:
    """``new_driver()``: a second session (for example for a fresh profile); closed after."""
    started: list[Any] = []

    def start(**kwargs: Any) -> Any:
        try:
            instance = start_driver(engine, **kwargs)
        except Unavailable as exc:
            unavailable(str(exc))
        started.append(instance)
        return instance

    yield start
    for instance in started:
        with contextlib.suppress(Exception):
            instance.quit()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Within each module, the tests of one engine together (pytest's own order otherwise), so
    that a module with a second module-scoped parameter (``framework``) still starts one
    browser per engine."""
    order = {name: i for i, name in enumerate(ENGINES)}

    def engine_of(item: pytest.Item) -> int:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        return order.get(params.get("engine"), -1)

    start = 0
    while start < len(items):
        end = start
        while end < len(items) and items[end].path == items[start].path:
            end += 1
        if items[start].path.parent == HERE:
            items[start:end] = sorted(items[start:end], key=engine_of)
        start = end


# --------------------------------------------------------------------------- errors, artifacts


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    page = getattr(item, "funcargs", {}).get("page")
    if isinstance(page, EnginePage):
        page.past_errors.clear()
        page.allowed_errors = []
        already = set(page.page_errors())
    result = yield
    if isinstance(page, EnginePage):
        errors = page.past_errors + [e for e in page.page_errors() if e not in already]
        allowed = [re.compile(p) for p in page.allowed_errors]
        unexpected = [e for e in errors if not any(p.search(e) for p in allowed)]
        if unexpected:
            pytest.fail(
                f"uncaught error(s) in the page ({page.engine}):\n" + "\n---\n".join(unexpected),
                pytrace=False,
            )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        page = getattr(item, "funcargs", {}).get("page")
        if isinstance(page, EnginePage):
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid)[-150:]
            with contextlib.suppress(Exception):
                out = REPO / "test-artifacts"
                out.mkdir(exist_ok=True)
                page.screenshot(path=str(out / f"{name}.png"))
    return report
