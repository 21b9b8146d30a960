"""Sub-commands of ``python -m pysite_agent``. Each handler imports its module lazily."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any) -> None:
    """Register every sub-command on ``sub`` (an ``argparse`` sub-parsers action)."""
    _add_example(sub)


def _add_example(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "example", help="run the scripted example agent in this Python and print events and trace"
    )
    p.set_defaults(handler=_run_example)


def _run_example(args: argparse.Namespace) -> int:
    from pysite_agent import _example

    return _example.main()
