"""Sub-commands of ``python -m pysite_agent``. Each handler imports its module lazily."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any) -> None:
    """Register every sub-command on ``sub`` (an ``argparse`` sub-parsers action)."""
    _add_trace(sub)
    _add_bundle(sub)
    _add_demo(sub)
    _add_eval(sub)
    _add_doctor(sub)


def _add_trace(sub: Any) -> None:
    from pysite_agent._trace_cli import add_trace_command

    add_trace_command(sub)


def _add_doctor(sub: Any) -> None:
    from pysite_agent._doctor_cli import add_doctor_command

    add_doctor_command(sub)


def _add_eval(sub: Any) -> None:
    from pysite_agent._eval_cli import add_eval_command

    add_eval_command(sub)


def _add_bundle(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "bundle",
        help="write a self-hosted folder: loader.js, web/, Pyodide and the wheels, no CDN",
        description=(
            "Write OUT, a folder a site can host as-is: loader.js, web/, pyodide/ (Pyodide core, "
            "the pinned wheels, the pysite_agent wheel and a pyodide-lock.json for exactly "
            "these) and bundle-manifest.json. Downloads are cached and checked by sha256; a "
            "second run needs no network and writes the same bytes."
        ),
    )
    p.add_argument("out", metavar="OUT", help="the folder to write (replaced as a whole)")
    p.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="download cache (default: $PYSITE_AGENT_CACHE_DIR, .cache/pysite-agent in a "
        "checkout, else ~/.cache/pysite-agent)",
    )
    p.add_argument(
        "--with-test-wheels",
        action="store_true",
        help="also add pytest, hypothesis and their dependencies (tests inside Pyodide)",
    )
    p.set_defaults(handler=_run_bundle)


def _run_bundle(args: argparse.Namespace) -> int:
    import sys

    from pysite_agent.bundle import BUILD_ERRORS, build_bundle, default_cache_dir

    try:
        build_bundle(args.out, cache_dir=args.cache, include_test_wheels=args.with_test_wheels)
    except BUILD_ERRORS as exc:
        cache = args.cache or default_cache_dir()
        print(f"bundle: {exc}", file=sys.stderr)
        print(
            f"bundle: nothing was replaced; the download cache is {cache} (files already there "
            "are kept and checked by sha256; a later run fetches only what is missing)",
            file=sys.stderr,
        )
        return 1
    return 0


def port_number(text: str) -> int:
    """An ``argparse`` type: a TCP port from 0 to 65535 (0: the system picks a free one)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a TCP port: use a whole number from 0 to 65535"
        )
    return value


def _add_demo(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="build the bundle (cached) and serve the demo shop on http://localhost:5180/",
        description=(
            "Build the self-hosted bundle (the first run downloads Pyodide and the wheels from "
            "the npm registry and PyPI into the cache; later runs are offline) and serve the "
            "demo shop with <site-agent> at http://localhost:PORT/. Ctrl-C stops it."
        ),
    )
    p.add_argument(
        "--port", type=port_number, default=5180, help="TCP port, 0 to 65535 (default 5180)"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="download and bundle cache (default as for `bundle`)",
    )
    p.add_argument(
        "--no-build",
        action="store_true",
        help="serve the bundle built by an earlier run as it is",
    )
    p.set_defaults(handler=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from pysite_agent import _demo

    return _demo.main(port=args.port, host=args.host, cache_dir=args.cache, build=not args.no_build)
