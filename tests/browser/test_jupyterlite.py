"""JupyterLite end to end: a site built offline from ``bundle --jupyterlite``, in headless Chromium.

The site is built three times, as a site owner would: ``bundle OUT --jupyterlite`` and
``jupyter lite build``; then settings of the site's own added to the source ``jupyter-lite.json``
(a key of its own, and a kernel setting, which replaces the kernel's whole settings object in
the built file) and a rebuild; then the bundle written again and a rebuild. Each time the built
settings must keep the kernel's ``pyodideUrl`` and ``disablePyPIFallback``, and the site's own
settings must stay (the kernel setting reaches the kernel: the notebook reads it back). Builds
run with every proxy pointed at a closed loopback port, so a download would fail them.

One notebook (the bundle's example, then the test's own cells) runs in the Pyodide kernel, in a
Web Worker: ``%pip install pysite_agent`` from the bundle's wheel, an agent with a read-only tool,
a tool that asks (answered yes, then no, by typing into the ``input()`` box below the cell), a
custom model, the run, its events and its trace shown as HTML, a replay with no differences;
then the proxy adapter through the kernel's ``fetch`` against the project's server (uvicorn on
loopback, CORS for the site's origin) in front of a stub upstream; then what a worker cannot do
(mount, ``document.modelContext``, Chrome's model), each failing with a message that says so.

Every request the browser makes is routed: one that leaves the site's and the proxy's loopback
origins is aborted and fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM_ARGS, CHROMIUM_BIN, StaticServer, unavailable
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from pysite_agent.bundle import build_jupyterlite
from pysite_agent.bundle._jupyterlite import EXAMPLE_CELLS, KERNEL_PLUGIN, PYODIDE_URL, notebook

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from stub_upstream import KEY, serve_tool_chooser

pytestmark = pytest.mark.browser

KERNEL_TIMEOUT_MS = 300_000  # a cold kernel start under load: Pyodide, the kernel, pysite_agent
TEST_NOTEBOOK = "jupyterlite-test.ipynb"
SITE_SETTING = ("appName", "Notes lab")
SITE_ENV = {"NOTES_SITE": "the owner's setting"}  # reaches the kernel: loadPyodide(env=...)


def notebook_cells(proxy_url: str) -> tuple[tuple[str, str], ...]:
    """The example notebook's cells, then the proxy, the worker's limits and an end marker."""
    proxy_cells = (
        (
            "code",
            f"""
proxied = sa.create_site_agent(
    model=sa.proxy({proxy_url!r}), tools=registry.tools(), confirm=sa.notebook_confirm
)
via_proxy = await proxied.run("what are my notes?").done
ran = [s["name"] for s in via_proxy.trace["steps"] if s["kind"] == "tool-result"]
print("PROXY", via_proxy.status, repr(via_proxy.answer), ran)
via_proxy
""",
        ),
        (
            "code",
            """
try:
    await registry.mount()
except RuntimeError as exc:
    print("MOUNT", exc)
try:
    page_run = await sa.create_site_agent(model=sa.custom(note_taker)).run("hi").done
    print("PAGE-TOOLS", page_run.status, page_run.error.code, page_run.error.message)
except sa.SiteAgentError as exc:
    print("PAGE-TOOLS", "error", exc.code, exc.message)
chrome_run = await sa.create_site_agent(
    model=sa.chrome_built_in(), tools=registry.tools()
).run("hi").done
print("CHROME", chrome_run.status, chrome_run.error.code, chrome_run.error.message)
import os
print("ENV", os.environ.get("NOTES_SITE"))
print("ALL-CELLS" + "-RAN")  # not the text itself: the source shows too
""",
        ),
    )
    return (*EXAMPLE_CELLS, *proxy_cells)


def lite_build(folder: Path) -> None:
    """``jupyter lite build`` in ``folder``, with any download pointed at a closed port."""
    closed = "http://127.0.0.1:9"
    env = {
        **os.environ,
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "http_proxy": closed,
        "https_proxy": closed,
        "NO_PROXY": "",
        "no_proxy": "",
        "PIP_NO_INDEX": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "jupyterlite_core", "build"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"jupyter lite build failed:\n{proc.stdout}\n{proc.stderr}"


def kernel_settings(built: Path) -> dict[str, Any]:
    data = json.loads((built / "jupyter-lite.json").read_text(encoding="utf-8"))
    return data["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]


def answer_prompt(page: Any, cell_text: str, typed: str) -> None:
    """Type ``typed`` and Enter into the ``input()`` box of the cell that shows ``cell_text``.

    The box can be in the page a moment before it listens for Enter (it is attached, then
    wired); an Enter it did not take leaves it waiting, so Enter is pressed again until the
    cell shows the answered prompt (the prompt followed by the answer, as text).
    """
    cell = page.locator(".jp-Cell", has_text=cell_text)
    box = cell.locator("input.jp-Stdin-input")
    box.wait_for(state="visible", timeout=KERNEL_TIMEOUT_MS)
    echo = f"anything else denies:  {typed}"
    for _attempt in range(20):
        with contextlib.suppress(PlaywrightError):  # the box may be replaced meanwhile
            box.fill(typed, timeout=5_000)
            box.press("Enter", timeout=5_000)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if echo in cell.inner_text():
                return
            page.wait_for_timeout(100)
    raise PlaywrightTimeout(f"the prompt did not take the answer {typed!r}")


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The built site served on loopback, the proxy in front of a stub upstream, and the
    timings of each part."""
    folder = tmp_path_factory.mktemp("lite")
    timings: dict[str, float] = {}
    started = time.monotonic()
    build_jupyterlite(folder, progress=lambda _line: None)
    output = folder / "_output"
    output.mkdir()  # served from now on: the proxy must know the site's origin
    with StaticServer(output) as site:
        origin = site.base_url.rstrip("/")
        with serve_tool_chooser(
            "list_notes", {}, allowed_origins=[origin], answer="Done."
        ) as proxy_url:
            # Every cell in the page (JupyterLab leaves cells out of view out of the DOM).
            (folder / "overrides.json").write_text(
                json.dumps({"@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}),
                encoding="utf-8",
            )
            (folder / "files" / TEST_NOTEBOOK).write_text(
                json.dumps(notebook(notebook_cells(proxy_url)), indent=1), encoding="utf-8"
            )
            lite_build(folder)
            timings["bundle and first build"] = time.monotonic() - started
            assert kernel_settings(output)["pyodideUrl"] == PYODIDE_URL

            # The site owner's own settings, the kernel's among them (its settings object
            # in the source replaces the built one whole), then a rebuild: pyodideUrl must
            # stay. Then a new bundle and a rebuild: the owner's settings must stay.
            source = folder / "jupyter-lite.json"
            settings = json.loads(source.read_text(encoding="utf-8"))
            config = settings["jupyter-config-data"]
            config[SITE_SETTING[0]] = SITE_SETTING[1]
            config["litePluginSettings"][KERNEL_PLUGIN]["loadPyodideOptions"] = {"env": SITE_ENV}
            source.write_text(json.dumps(settings), encoding="utf-8")
            started = time.monotonic()
            lite_build(folder)
            timings["rebuild"] = time.monotonic() - started
            kernel = kernel_settings(output)
            assert kernel["pyodideUrl"] == PYODIDE_URL and kernel["disablePyPIFallback"] is True
            started = time.monotonic()
            build_jupyterlite(folder, progress=lambda _line: None)
            lite_build(folder)
            timings["bundle and rebuild"] = time.monotonic() - started
            yield {
                "folder": folder,
                "output": output,
                "site": site,
                "origin": origin,
                "proxy_url": proxy_url,
                "timings": timings,
            }


def test_a_rebuild_keeps_the_kernel_settings_and_the_sites_own(lite: dict[str, Any]) -> None:
    output: Path = lite["output"]
    built = json.loads((output / "jupyter-lite.json").read_text(encoding="utf-8"))
    assert built["jupyter-config-data"][SITE_SETTING[0]] == SITE_SETTING[1]
    kernel = kernel_settings(output)
    assert kernel["pyodideUrl"] == PYODIDE_URL
    assert kernel["disablePyPIFallback"] is True
    assert kernel["loadPyodideOptions"] == {"env": SITE_ENV}
    pyodide = output / PYODIDE_URL.removeprefix("./").rsplit("/", 1)[0]
    lock = json.loads((pyodide / "pyodide-lock.json").read_text(encoding="utf-8"))
    for name in ("comm", "jedi", "ipython", "micropip", "pysite-agent"):
        entry = lock["packages"][name]
        assert (pyodide / entry["file_name"]).is_file(), name
    assert (output / "files" / "pysite-agent.ipynb").is_file()
    assert (output / "files" / TEST_NOTEBOOK).is_file()


def test_the_notebook_runs_offline_in_the_worker_kernel(
    lite: dict[str, Any], playwright: Any, artifacts_dir: Path
) -> None:
    site: StaticServer = lite["site"]
    allowed = (lite["origin"] + "/", lite["proxy_url"])
    outside: list[str] = []
    try:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM_BIN, headless=True, args=CHROMIUM_ARGS, timeout=30_000
        )
    except PlaywrightError as exc:
        unavailable(f"Chromium did not start ({CHROMIUM_BIN}): {exc}")  # fails under CI=true
    try:
        context = browser.new_context()
        context.set_default_timeout(30_000)

        def route(handle: Any) -> None:
            url = handle.request.url
            if url.startswith(allowed) or url.startswith(("data:", "blob:")):
                handle.continue_()
            else:
                outside.append(url)
                handle.abort()

        context.route("**/*", route)
        context.on(
            "request",
            lambda request: (
                None
                if request.url.startswith((*allowed, "data:", "blob:"))
                else outside.append(request.url)
            ),
        )
        page = context.new_page()
        page_errors: list[str] = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        console: list[str] = []
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        started = time.monotonic()
        try:
            page.goto(site.url(f"notebooks/index.html?path={TEST_NOTEBOOK}"))
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            answer_prompt(page, "# type yes", "yes")
            answer_prompt(page, "# type no", "no")
            page.wait_for_function(
                "document.body.innerText.includes('ALL-CELLS-RAN') || "
                "!!document.querySelector('.jp-OutputArea-output[data-mime-type="
                '"application/vnd.jupyter.error"]\')',
                timeout=KERNEL_TIMEOUT_MS,
            )
        except PlaywrightTimeout as exc:
            page.screenshot(path=str(artifacts_dir / "jupyterlite-notebook.png"), full_page=True)
            tail = page.inner_text("body")[-2500:]
            pytest.fail(f"the notebook did not finish: {exc}\nconsole: {console[-20:]}\n{tail}")
        seconds = time.monotonic() - started
        page.screenshot(path=str(artifacts_dir / "jupyterlite-notebook.png"), full_page=True)
        text = page.inner_text(".jp-Notebook")
        frames = page.locator(".jp-OutputArea-output iframe").evaluate_all(
            "els => els.map(e => ({sandbox: e.getAttribute('sandbox'), doc: e.srcdoc}))"
        )
        stderr = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        ).all_inner_texts()
    finally:
        browser.close()
    print(f"\njupyterlite timings: {lite['timings']}, notebook {seconds:.0f} s")

    assert "ALL-CELLS-RAN" in text, text[-3000:]
    assert page_errors == []
    assert outside == [], f"requests that left loopback: {outside}"
    assert stderr == [], stderr  # no warnings (IPython's included), no tracebacks

    # The confirm: yes ran the tool, no did not; the replay found no differences.
    assert "Type yes to allow; anything else denies:  yes" in text
    assert "Type yes to allow; anything else denies:  no" in text
    assert "replay differences: 0 | notes: ['buy milk']" in text

    # The run, the events and the trace as HTML: each in a sandboxed frame, no scripts.
    assert frames and all(f["sandbox"] == "" for f in frames)
    assert all("<script" not in f["doc"].lower() for f in frames)
    docs = [f["doc"] for f in frames]
    titled = {re.search(r"<title>([^<]*)</title>", d).group(1) for d in docs}  # type: ignore[union-attr]
    assert {"pysite-agent run: answered", "pysite-agent events", "pysite-agent run"} <= titled
    added = next(d for d in docs if "<title>pysite-agent run</title>" in d)
    assert "buy milk" in added and "allowed" in added and "Added note 1: buy milk" in added
    events = next(d for d in docs if "<title>pysite-agent events</title>" in d)
    assert "confirm-result</td><td>allowed by visitor" in events
    assert any("denied" in d and "call the bank" in d for d in docs)

    # The proxy adapter through the kernel's fetch: the stub's model chose the read-only tool.
    assert "PROXY answered 'Done.' ['list_notes']" in text, text[text.find("proxied =") :]
    assert any("list_notes" in d and "Done." in d for d in docs)
    assert KEY not in text and all(KEY not in d for d in docs)

    # What a worker cannot do, said so, with what to use instead.
    worker = "No tools: this Python runs in a Web Worker (a JupyterLite kernel, for one)"
    instead = "Pass Python tools to the agent instead: create_site_agent(tools=registry.tools())"
    assert f"MOUNT no-tools: {worker}" in text and f"PAGE-TOOLS error no-tools {worker}" in text
    assert text.count(instead) == 2
    assert re.search(r"CHROME error model-unavailable .*Web Worker.*sa\.proxy\(url\)", text)
    assert f"ENV {SITE_ENV['NOTES_SITE']}" in text  # the site's own kernel setting took effect
