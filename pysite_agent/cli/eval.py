"""``python -m pysite_agent eval CASES.json``: the tool-choice eval on CPython.

The eval itself is :mod:`pysite_agent.agent.evals` (the same code runs in the page, through the
element's ``agent.evaluate()``). This module only picks the model and, for the proxy, supplies
the HTTP client: the layers keep HTTP clients out of ``models`` (the browser's ``fetch`` is used
there), so on CPython :func:`httpx_fetch` is injected as ``proxy(url, fetch=...)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pkgutil
import sys
import urllib.parse
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any


class _Response:
    """What ``proxy()`` reads from ``fetch``: ``status``, ``headers`` and ``await text()``."""

    def __init__(self, status: int, headers: Mapping[str, str], body: str) -> None:
        self.status = status
        self.headers = dict(headers)
        self._body = body

    async def text(self) -> str:
        return self._body


DEFAULT_ORIGIN = "http://localhost:5180"
"""The ``Origin`` the eval sends by default: the demo shop's, which the example proxy
(``examples/proxy_server.py``, docs/server.md) allows. A browser always sends its page's
origin, and the proxy answers 403 ``forbidden-origin`` to a request without one."""


def httpx_fetch(*, timeout_s: float = 60.0, origin: str | None = DEFAULT_ORIGIN) -> Any:
    """A ``fetch(url, init)`` for :func:`pysite_agent.proxy` on CPython, over ``httpx``.

    ``init`` is what ``proxy()`` passes (``method``, ``headers``, ``body``; ``credentials`` and
    ``signal`` have no meaning here). The response is read whole (the eval does not stream).
    ``timeout_s`` is httpx's timeout in seconds for each request. ``origin`` is sent as the
    ``Origin`` header, as a browser page would (``None``: none).

    Raises:
        SystemExit: ``httpx`` is not installed (it comes with the ``server`` extra).
    """
    try:
        import httpx
    except ImportError:  # pragma: no cover - the dev and server installs have it
        raise SystemExit(
            "the eval needs httpx to reach a proxy: pip install 'pysite-agent[server]'"
        ) from None

    async def fetch(url: str, init: Mapping[str, Any]) -> _Response:
        headers = dict(init.get("headers") or {})
        if origin is not None and not any(k.lower() == "origin" for k in headers):
            headers["origin"] = origin
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.request(
                str(init.get("method", "GET")),
                url,
                headers=headers,
                content=init.get("body"),
            )
            return _Response(response.status_code, response.headers, response.text)

    return fetch


def _custom_model(spec: str) -> Any:
    from pysite_agent.models.base import custom

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"--custom wants MODULE:FUNCTION, got {spec!r}")
    if module_name == "pysite_agent" or module_name.startswith("pysite_agent."):
        # The package's own modules are reached through plain imports (the layer contracts
        # check those); --custom is for the user's own model code.
        raise SystemExit("--custom names your own module; for demo rules leave it out")
    try:
        fn = pkgutil.resolve_name(spec)  # the user's module, named on the command line
    except (ImportError, AttributeError, ValueError) as exc:
        raise SystemExit(f"--custom {spec}: {exc}") from None
    if not callable(getattr(fn, "respond", None)):
        try:
            fn = custom(fn, name=spec)
        except TypeError as exc:
            raise SystemExit(f"--custom {spec}: {exc}") from None
    return fn


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options the run would ignore or fail on only after all cases ran."""
    minimum = args.min_tool_choice
    if minimum is not None and not 0 <= minimum <= 1:
        raise SystemExit(f"--min-tool-choice wants a fraction from 0 to 1, got {minimum}")
    if not args.timeout_s > 0 or args.timeout_s == float("inf"):
        raise SystemExit(f"--timeout-s wants a number of seconds above 0, got {args.timeout_s}")
    if args.min_pass is not None and not 0 <= args.min_pass <= 1:
        raise SystemExit(f"--min-pass wants a fraction from 0 to 1, got {args.min_pass}")
    if not 1 <= args.max_steps <= 50:
        raise SystemExit(f"--max-steps wants a whole number from 1 to 50, got {args.max_steps}")
    if args.smoke and not args.url:
        raise SystemExit("--smoke runs against a live page: give --url too")
    if args.smoke and (args.proxy or args.custom):
        raise SystemExit("--smoke uses no model: leave out --proxy and --custom")
    if args.url and args.tools:
        raise SystemExit("--url uses the page's own tools: leave out --tools")
    if args.url and urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
        raise SystemExit(f"--url wants an http(s) page, got {args.url!r}")
    if not 0 <= args.wait_ms <= 60_000:
        raise SystemExit(f"--wait-ms wants a whole number from 0 to 60000, got {args.wait_ms}")
    for option, path in (("--json", args.json), ("--junit", args.junit), ("--html", args.html)):
        if path and path != "-":
            folder = Path(path).parent
            if not folder.is_dir():
                raise SystemExit(f"{option} {path}: the folder {folder} does not exist")


def add_command(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "eval",
        help="measure how well a model picks the page's tools (no tool runs)",
        description=(
            "Run a tool-choice eval (eval set v1, the webmcp-evals case format: message, the "
            "page's tools, the expected tool and arguments) against a model and print tool-choice "
            "and argument accuracy per case and in total. No tool is ever executed: results "
            "are scripted. Without --proxy or --custom the model is demo rules (keyword "
            "matching, not AI)."
        ),
    )
    p.add_argument("cases", metavar="CASES.json", help="the case set")
    p.add_argument(
        "--tools",
        metavar="SCHEMA.json",
        help='the page\'s tools, for a case set without them ({"tools": [...]} or a list)',
    )
    model = p.add_mutually_exclusive_group()
    model.add_argument("--proxy", metavar="URL", help="a pysite-agent proxy (protocol v1)")
    model.add_argument(
        "--custom",
        metavar="MODULE:FUNCTION",
        help="a model function fn(request) -> reply (sync or async), or a model object",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="a header for --proxy (e.g. a session token; never a provider key)",
    )
    p.add_argument(
        "--origin",
        default=DEFAULT_ORIGIN,
        metavar="ORIGIN",
        help=(
            "the Origin header sent to --proxy, as the page's browser would send it: one of "
            f"the proxy's allowed origins (default {DEFAULT_ORIGIN}, which the example proxy "
            "allows)"
        ),
    )
    live = p.add_argument_group("a live page (headless Chromium through Playwright)")
    live.add_argument(
        "--url",
        metavar="URL",
        help="run the cases against this page's own WebMCP tools (the tools run for real)",
    )
    live.add_argument(
        "--smoke",
        action="store_true",
        help="with --url: run the expected calls themselves, no model, and check each result",
    )
    live.add_argument(
        "--native", action="store_true", help="Chromium's own WebMCP (default: the shim)"
    )
    live.add_argument("--chromium", metavar="PATH", help="the Chromium executable")
    live.add_argument(
        "--wait-ms",
        type=int,
        default=5000,
        metavar="MS",
        help="how long to wait for the page's tools to appear (default 5000)",
    )
    p.add_argument("--instructions", help="the site's instructions (default: the set's)")
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON ('-': stdout)")
    p.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument(
        "--max-steps",
        type=int,
        default=6,
        metavar="N",
        help="model requests per case before it stops (default 6, as webmcp-evals)",
    )
    p.add_argument(
        "--timeout-s", type=float, default=60.0, help="per request to --proxy (default 60)"
    )
    p.add_argument(
        "--min-tool-choice",
        type=float,
        metavar="FRACTION",
        help="exit 1 when total tool-choice accuracy is below this (0..1)",
    )
    p.add_argument(
        "--min-pass",
        type=float,
        metavar="FRACTION",
        help="exit 1 when the share of cases that pass (webmcp-evals' verdict) is below this",
    )
    p.set_defaults(handler=run_eval_command, browser=None)


def _model(args: argparse.Namespace) -> Any:
    if args.proxy:
        from pysite_agent.models.proxy import proxy

        headers = {}
        for item in args.header:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise SystemExit(f"--header wants NAME:VALUE, got {item!r}")
            headers[name.strip()] = value.strip()
        target = urllib.parse.urlsplit(args.proxy)
        if target.scheme not in ("http", "https") or not target.hostname:
            raise SystemExit(f"--proxy wants an http(s)://host[:port]/path URL, got {args.proxy!r}")
        try:
            fetch = httpx_fetch(timeout_s=args.timeout_s, origin=_origin(args.origin))
            return proxy(args.proxy, headers=headers, fetch=fetch)
        except (TypeError, ValueError) as exc:
            raise SystemExit(f"--proxy: {exc}") from None
    if args.custom:
        return _custom_model(args.custom)
    from pysite_agent.models.demo_rules import demo_rules

    return demo_rules()


def _origin(value: str) -> str:
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise SystemExit(f"--origin wants scheme://host[:port], got {value!r}")
    return f"{parts.scheme}://{parts.netloc}"


def _read_json(path: str, what: str) -> Any:
    """The file's strict JSON data (:func:`pysite_agent.cli.trace.read_strict`: no ``NaN``,
    nesting bounded by the eval reader's ``MAX_DEPTH``, lone surrogates made U+FFFD).

    Raises:
        SystemExit: one line, the file unreadable, not JSON or nested too deeply.
    """
    from pysite_agent.agent.evals import MAX_DEPTH
    from pysite_agent.cli.trace import read_strict

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"{what}: {exc}") from None
    except ValueError as exc:  # not UTF-8
        raise SystemExit(f"{what} {path} is not JSON: {exc}") from None
    try:
        return read_strict(text, f"{what} {path}", max_depth=MAX_DEPTH)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def _say(message: object) -> None:
    """``message`` on stderr as people read it (:func:`pysite_agent.cli.trace.shown`)."""
    from pysite_agent.cli.trace import shown

    print(shown(str(message)), file=sys.stderr)


def _write(option: str, path: str, text: str) -> bool:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{option} {path}: {exc}", file=sys.stderr)
        return False
    return True


def write_reports(args: argparse.Namespace, data: dict[str, Any], table: str) -> bool:
    """Print the table (or the JSON for ``--json -``) and write ``--json``/``--junit``/
    ``--html``; ``False`` when a file could not be written (said on stderr).

    Every text in the reports is well formed (lone surrogates made U+FFFD,
    :func:`pysite_agent.core.text.well_formed_json`), so each encodes as UTF-8; the printed
    table, the JUnit XML and the HTML page (what people read) also show invisible and
    text-direction characters and controls as ``⟦U+202E⟧``; the JSON keeps them. The JSON is
    written with ``allow_nan=False`` (JSON has no NaN): a report holding one is said on
    stderr and nothing is written."""
    from pysite_agent.agent.eval_export import to_html, to_junit
    from pysite_agent.cli.trace import shown
    from pysite_agent.core.text import map_strings, well_formed_json

    data = well_formed_json(data)
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        _say(f"eval: the report cannot be written as JSON: {exc}")
        return False
    print(text if args.json == "-" else shown(table))
    ok = True
    if args.json and args.json != "-":
        ok = _write("--json", args.json, text + "\n") and ok
    if args.junit or args.html:
        seen = map_strings(data, shown)  # for people (and XML 1.0, which has no C0 controls)
        if args.junit:
            ok = _write("--junit", args.junit, to_junit(seen)) and ok
        if args.html:
            title = shown(f"Eval: {args.cases}")
            ok = _write("--html", args.html, to_html(seen, title=title)) and ok
    return ok


def run_eval_command(args: argparse.Namespace) -> int:
    """Exit status: 0; 1 when a case failed with an error (the model could not be reached or
    refused, e.g. 403 ``forbidden-origin``: a CI gate must not read that as a score) or the
    total is below ``--min-tool-choice`` or ``--min-pass``; 2 for unusable input (one line on
    stderr)."""
    from pysite_agent.agent.evals import EvalSetError, load_eval_set, run_eval

    if getattr(args, "url", None):
        return _run_live(args)
    try:
        _check_options(args)
        tools = _read_json(args.tools, "--tools") if args.tools else None
        eval_set = load_eval_set(_read_json(args.cases, "CASES.json"), tools=tools)
        model = _model(args)
    except EvalSetError as exc:
        _say(f"{args.cases}: {exc}")
        return 2
    except SystemExit as exc:
        _say(exc)
        return 2
    report = asyncio.run(
        run_eval(eval_set, model, instructions=args.instructions, max_steps=args.max_steps)
    )
    data = report.to_json()
    if not write_reports(args, data, report.table()):
        return 2
    return gate(args, data)


def gate(args: argparse.Namespace, data: dict[str, Any]) -> int:
    """The exit status a CI reads from a report's JSON (see :func:`run_eval_command`)."""
    errored = [c for c in data["cases"] if c.get("error")]
    if errored:
        first = errored[0]["error"]
        _say(
            f"{len(errored)} of {len(data['cases'])} cases failed with an error (first: "
            f"{first['code']}: {first['message']})"
        )
        if getattr(args, "proxy", None) and "forbidden-origin" in first["message"]:
            print(
                f"the proxy did not allow the origin {args.origin}: pass --origin with one of "
                "its allowed origins (its --allowed-origin)",
                file=sys.stderr,
            )
        return 1
    minimum = args.min_tool_choice
    if minimum is not None and data["total"]["toolChoice"] < minimum:
        print(
            f"tool choice {data['total']['toolChoice']:.0%} is below {minimum:.0%}",
            file=sys.stderr,
        )
        return 1
    summary = data["summary"]
    rate = summary["pass"] / summary["tests"] if summary["tests"] else 0.0
    if args.min_pass is not None and rate < args.min_pass:
        print(
            f"{summary['pass']} of {summary['tests']} cases pass ({rate:.0%}), below "
            f"{args.min_pass:.0%}",
            file=sys.stderr,
        )
        return 1
    return 0


def _run_live(args: argparse.Namespace) -> int:
    """``--url`` (and ``--smoke``): the same exit statuses; a page that does not load or has
    no tools is unusable input (2)."""
    from pysite_agent.agent.eval_export import smoke_table
    from pysite_agent.agent.evals import EvalSetError
    from pysite_agent.cli.eval_live import LivePageError, launched_browser, run_live, run_smoke

    try:
        _check_options(args)
        data = _read_json(args.cases, "CASES.json")
        model = None if args.smoke else _model(args)
    except SystemExit as exc:
        _say(exc)
        return 2
    given = getattr(args, "browser", None)  # a caller's Playwright Browser, else launch one
    opened: AbstractContextManager[Any] = (
        nullcontext(given)
        if given is not None
        else launched_browser(native=args.native, chromium=args.chromium)
    )
    try:
        with opened as browser:
            if model is None:
                report = run_smoke(browser, args.url, data, wait_ms=args.wait_ms)
                table = smoke_table(report)
            else:
                result = run_live(
                    browser,
                    args.url,
                    data,
                    model,
                    instructions=args.instructions,
                    max_steps=args.max_steps,
                    wait_ms=args.wait_ms,
                )
                report, table = result.to_json(), result.table()
    except LivePageError as exc:
        _say(f"eval: {exc}")
        return 2
    except EvalSetError as exc:
        _say(f"{args.cases}: {exc}")
        return 2
    if not write_reports(args, report, table):
        return 2
    if args.smoke:
        summary = report["summary"]
        failed = summary["fail"] + summary["error"]
        if failed:
            print(f"{failed} of {summary['tests']} smoke cases did not pass", file=sys.stderr)
            return 1
        return 0
    return gate(args, report)
