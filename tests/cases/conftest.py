"""The corpus of regression cases from public reports (index: ``tests/cases/index.json``).

The cases reuse the shared test helpers (``tests/``) and the loopback stub upstream
(``tests/server/stub_upstream.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE.parent / "server"):
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
