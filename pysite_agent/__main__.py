"""``python -m pysite_agent ...``: the command line (:func:`pysite_agent.cli.main`)."""

from __future__ import annotations

import sys

from pysite_agent.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
