"""Command line: ``python -m pysite_agent {bundle,demo,eval,trace} ...``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pysite_agent")
    sub = parser.add_subparsers(dest="command", required=True)

    from pysite_agent import _cli

    _cli.add_commands(sub)
    args = parser.parse_args(argv)
    handler = args.handler
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
