"""Command line: ``python -m pysite_agent {trace,bundle,demo,eval,doctor} ...``.

CPython only; nothing here runs in the browser, and no other part of the package imports it
(checked by import-linter). One module per sub-command, each with ``add_command(sub)``; a
command's module is imported only when :func:`main` builds the parser, and the heavy imports
(the bundle builder, Playwright, httpx) wait until its handler runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run the sub-command; its exit status.

    Raises:
        SystemExit: from ``argparse`` for ``--help`` or a command line it rejects (status 2).
    """
    from pysite_agent.cli import bundle, demo, doctor, trace
    from pysite_agent.cli import eval as eval_command

    parser = argparse.ArgumentParser(prog="python -m pysite_agent")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (trace, bundle, demo, eval_command, doctor):
        command.add_command(sub)
    args = parser.parse_args(argv)
    result: int = args.handler(args)
    return result
