"""``python -m pysite_agent trace show RUN.json [-o RUN.html]`` and ``trace check RUN.json``."""

from __future__ import annotations

import argparse
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


MAX_TRACE_DEPTH = 256
"""Levels of nesting a trace file may have (objects and lists), measured before anything
recursive reads it (as the element does for JSON the page hands over, ``MAX_INPUT_DEPTH``)."""


def read_strict(text: str, name: str, *, max_depth: int) -> Any:
    """JSON ``text`` (the content of the file called ``name``) as strict JSON data
    (:func:`pysite_agent.core.validation.loads_strict`), lone surrogates made U+FFFD
    (:func:`pysite_agent.core.text.well_formed_json`).

    Raises:
        ValueError: one line naming ``name``: "is nested too deeply to read" (deeper than
            ``max_depth``), or "is not JSON" (``NaN``/``Infinity``, which JSON does not have,
            RFC 8259 section 6; or text that is not JSON at all).
    """
    from pysite_agent.core.text import well_formed_json
    from pysite_agent.core.validation import NotJsonData, loads_strict

    try:
        data = loads_strict(text, max_depth=max_depth)
    except NotJsonData as exc:
        reason = str(exc)
        if reason.startswith("nested deeper"):
            raise ValueError(
                f"{name} is nested too deeply to read (more than {max_depth} levels)"
            ) from None
        raise ValueError(f"{name} is not JSON: {reason.removeprefix('not JSON: ')}") from None
    return well_formed_json(data)


def shown(text: str) -> str:
    """``text`` as it is printed for people: lone surrogates made U+FFFD, invisible and
    text-direction characters made visible as ``⟦U+202E⟧``
    (:func:`pysite_agent.core.display.reveal`, the confirmation card's rule)."""
    from pysite_agent.core.display import reveal
    from pysite_agent.core.text import well_formed

    return reveal(well_formed(text))


def _load(path: str) -> Any:
    """The trace's JSON data, read strictly (:func:`read_strict`)."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return read_strict(text, "standard input" if path == "-" else path, max_depth=MAX_TRACE_DEPTH)


def _show(args: argparse.Namespace) -> int:
    from pysite_agent.core.text import map_strings
    from pysite_agent.core.trace_view import render_trace_html

    try:
        trace = map_strings(_load(args.trace), shown)  # what people read: bidi revealed
        html = render_trace_html(trace, title=f"Trace: {Path(args.trace).name}")
    except (OSError, ValueError) as exc:
        print(shown(f"trace show: {exc}"), file=sys.stderr)
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
        print(shown(f"trace check: {exc}"), file=sys.stderr)
        return 2
    found = problems("trace-v1", trace)
    for problem in found:
        print(shown(str(problem)))
    if found:
        return 1
    print(shown(f"ok: trace v1, {len(trace['steps'])} steps, status {trace['status']}"))
    return 0
