"""``python -m pysite_agent doctor URL``: the page doctor from the command line.

Opens ``URL`` in headless Chromium through Playwright (the ``doctor`` extra:
``pip install 'pysite-agent[doctor]'``), waits for the page's scripts, then runs
``web/webmcp/doctor.js`` in the page: the page's WebMCP tools and the mistakes in them, each
with why it matters and how to fix it. Prints a readable report (``--json`` for the raw one);
the exit status is 1 when a finding is an error, 0 otherwise, 2 when the page could not be
examined.

By default Chromium runs without WebMCP, so a page that includes ``loader.js`` uses the
project's shim (as most visitors' browsers do); ``--native`` turns on Chromium's own WebMCP
(``--enable-features=WebMCP``). The browser is ``--chromium PATH``, else ``$CHROMIUM_BIN``,
else ``/usr/bin/chromium`` when present, else Playwright's own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pysite_agent.bundle._build import _asset_sources

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Runs web/webmcp/doctor.js in the page from a blob: URL (the context bypasses the page's CSP).
_RUN = """async (source) => {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  try {
    const doctor = await import(url);
    return await doctor.doctor();
  } finally {
    URL.revokeObjectURL(url);
  }
}"""


MAX_WAIT_MS = 60_000
"""The longest ``--wait-ms``: one minute (a longer wait is a typo, or a page that never settles)."""


def _wait_ms(text: str) -> int:
    """``--wait-ms``: an integer from 0 to :data:`MAX_WAIT_MS`; argparse reports anything else
    (``argparse.ArgumentTypeError``, exit status 2) before a browser starts."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if not 0 <= value <= MAX_WAIT_MS:
        raise argparse.ArgumentTypeError(f"{value} is outside 0 to {MAX_WAIT_MS} ms")
    return value


def add_command(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        help="list a page's WebMCP tools and the mistakes in them (headless Chromium)",
        description=__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else None,
    )
    p.add_argument("url", help="the page to examine (http, https or file URL)")
    p.add_argument("--native", action="store_true", help="use Chromium's own WebMCP")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--wait-ms",
        type=_wait_ms,
        default=1500,
        help=f"time for the page's scripts after load, in ms, 0 to {MAX_WAIT_MS} (default 1500)",
    )
    p.add_argument("--chromium", help="the Chromium executable (default: see the description)")
    p.set_defaults(handler=_run)


def default_chromium() -> str | None:
    """``$CHROMIUM_BIN``, else ``/usr/bin/chromium`` when present, else ``None``
    (Playwright's own browser)."""
    given = os.environ.get("CHROMIUM_BIN")
    if given:
        return given
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    return found


def examine(
    url: str, *, native: bool = False, wait_ms: int = 1500, chromium: str | None = None
) -> dict[str, Any]:
    """The doctor's report for ``url``: ``{url, webmcp, tools, forms, registrations,
    findings}`` (``findings``: ``[{severity, code, tool, message, fix}]``, errors first).

    Raises:
        RuntimeError: Playwright is not installed, Chromium does not start, or the page
            cannot be loaded.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise RuntimeError(
            "the doctor needs Playwright: pip install 'pysite-agent[doctor]'"
        ) from exc
    source = (_asset_sources()[1] / "webmcp" / "doctor.js").read_text(encoding="utf-8")
    executable = chromium or default_chromium()
    args = FLAGS + (["--enable-features=WebMCP"] if native else [])
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, headless=True, args=args)
        except Exception as exc:  # noqa: BLE001 - reported as one readable error
            msg = f"Chromium did not start ({executable or 'Playwright'}): {exc}"
            raise RuntimeError(msg) from None
        try:
            context = browser.new_context(bypass_csp=True)
            page = context.new_page()
            if urlsplit(url).scheme not in ("http", "https"):
                raise RuntimeError(f"could not load {url}: only http(s) pages are examined")
            try:
                response = page.goto(url, wait_until="load", timeout=30_000)
            except Exception as exc:  # noqa: BLE001
                raise RuntimeError(f"could not load {url}: {exc}") from None
            if response is not None and not response.ok:
                raise RuntimeError(f"could not load {url}: HTTP {response.status}")
            page.wait_for_timeout(wait_ms)
            report: dict[str, Any] = page.evaluate(_RUN, source)
        finally:
            browser.close()
    return report


_KINDS = {
    "native": "native, the browser's own",
    "shim": "shim, from loader.js",
    "page": "defined by the page (neither the browser's nor loader.js's shim)",
    "none": "none",
}
"""How the report's ``webmcp`` value reads in the terminal (web/webmcp/doctor.js, webmcpKind)."""


def render(report: dict[str, Any]) -> str:
    """The report as text for a terminal."""
    kind = _KINDS.get(report["webmcp"], report["webmcp"])
    lines = [f"{report['url']}  (WebMCP: {kind})", ""]
    tools = report.get("tools", [])
    lines.append(f"Tools ({len(tools)}):")
    for tool in tools:
        hints = tool.get("annotations")
        if not isinstance(hints, dict) or not hints:
            shown = "no annotations"  # always asks, even when pre-approved (rule 5)
        else:
            on = [k for k, v in hints.items() if v is True]
            shown = ", ".join(on) or "all false"
        lines.append(f"  {tool['name']}: {tool.get('description') or '(no description)'}")
        lines.append(f"      hints: {shown}")
    findings = report.get("findings", [])
    lines += ["", f"Findings ({len(findings)}):" if findings else "No findings."]
    for f in findings:
        where = f" [{f['tool']}]" if f.get("tool") else ""
        lines.append(f"  {f['severity'].upper()} {f['code']}{where}: {f['message']}")
        lines.append(f"      fix: {f['fix']}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    try:
        report = examine(args.url, native=args.native, wait_ms=args.wait_ms, chromium=args.chromium)
    except RuntimeError as exc:
        print(f"doctor: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1) if args.json else render(report))
    return 1 if any(f["severity"] == "error" for f in report["findings"]) else 0
