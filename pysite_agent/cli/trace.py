"""``python -m pysite_agent trace show RUN.json [-o RUN.html]`` and ``trace check RUN.json``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_command(sub: Any) -> None:
    """Register ``trace`` with its ``show`` and ``check`` actions on ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "trace", help="look at a saved trace: render it as HTML, or check it against trace v1"
    )
    actions = p.add_subparsers(dest="trace_action", required=True)
    show = actions.add_parser("show", help="write a self-contained HTML timeline of a trace")
    show.add_argument("trace", help="a trace v1 JSON file ('-' for standard input)")
    show.add_argument("-o", "--output", help="the HTML file to write (default: standard output)")
    show.set_defaults(handler=_show)
    check = actions.add_parser("check", help="validate a trace against the trace v1 JSON Schema")
    check.add_argument("trace", help="a trace v1 JSON file ('-' for standard input)")
    check.set_defaults(handler=_check)


def _load(path: str) -> Any:
    """The trace's JSON data, lone surrogates (``"\\ud83d"`` escapes) made U+FFFD
    (:func:`pysite_agent.core.text.well_formed_json`), so the HTML and the report can be written."""
    from pysite_agent.core.text import well_formed_json

    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return well_formed_json(json.loads(text))


def _show(args: argparse.Namespace) -> int:
    from pysite_agent.core.trace_view import render_trace_html

    try:
        trace = _load(args.trace)
        html = render_trace_html(trace, title=f"Trace: {Path(args.trace).name}")
    except (OSError, ValueError) as exc:
        print(f"trace show: {exc}", file=sys.stderr)
        return 2
    if args.output:
        try:
            Path(args.output).write_text(html, encoding="utf-8")
        except OSError as exc:
            print(f"trace show: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.output} ({len(html.encode())} bytes)")
    else:
        sys.stdout.write(html)
    return 0


def _check(args: argparse.Namespace) -> int:
    from pysite_agent.core.wire import problems

    try:
        trace = _load(args.trace)
    except (OSError, ValueError) as exc:
        print(f"trace check: {exc}", file=sys.stderr)
        return 2
    found = problems("trace-v1", trace)
    for problem in found:
        print(problem)
    if found:
        return 1
    print(f"ok: trace v1, {len(trace['steps'])} steps, status {trace['status']}")
    return 0
