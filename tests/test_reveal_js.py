"""web/element/reveal.js (the transcript's and the card's markers for invisible and
text-direction characters) agrees with pysite_agent.core.display.reveal, run with Node."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pysite_agent.core.display import HIDDEN_RANGES, reveal

ROOT = Path(__file__).resolve().parents[1]


def test_the_javascript_ranges_agree_with_python() -> None:
    points = sorted(
        {p for a, b in HIDDEN_RANGES for p in (a - 1, a, b, b + 1) if 0 <= p <= 0x10FFFF}
        | {0x41, 0x1F600, 0x10FFFF}
    )
    samples = [chr(p) for p in points if not 0xD800 <= p <= 0xDFFF]
    script = (
        f"import {{ reveal }} from {json.dumps((ROOT / 'web/element/reveal.js').as_uri())};"
        f"const samples = {json.dumps(samples)};"
        "process.stdout.write(JSON.stringify(samples.map(reveal)));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == [reveal(s) for s in samples]
