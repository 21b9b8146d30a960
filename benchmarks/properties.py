"""The safety properties at scale, outside CI: ``python benchmarks/properties.py [--examples N]``.

Runs the policy property of ``tests/policy_properties.py`` (random pages with edge hint values,
replies, visitors, tool changes between decision and execution, aborts) at ``N`` examples
(default 10,000), and the fence property of ``tests/test_core_units.py`` at the same count.
CI runs the same properties with a few hundred examples (``tests/test_agent_properties.py``).

Prints, and saves to ``benchmarks/results/properties.json``: the examples run, the runtime, the
load average at the start and the result. Exit status 1 when a property fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from policy_properties import HINT_VALUES, check, examples, seen_values  # noqa: E402


def _settings(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def run_policy(count: int) -> dict[str, Any]:
    ran = 0
    seen: set[str] = set()

    @_settings(count)
    @given(examples)
    def prop(example: dict[str, Any]) -> None:
        nonlocal ran
        ran += 1
        seen.update(seen_values(example))
        check(example)

    return _timed("policy", prop, lambda: ran, lambda: seen >= {repr(v) for v in HINT_VALUES})


def run_fence(count: int) -> dict[str, Any]:
    import test_core_units

    ran = 0
    inner = test_core_units.test_fence_property_exactly_one_open_and_one_close.hypothesis.inner_test
    strategy = st.lists(
        st.sampled_from(
            [
                "<",
                "/",
                " ",
                "\n",
                "untrusted-data",
                ">",
                "&",
                *test_core_units.LESS_THAN_LOOK_ALIKES,
            ]
        ),
        max_size=30,
    ).map("".join) | st.text(max_size=60)

    @_settings(count)
    @given(strategy)
    def prop(content: str) -> None:
        nonlocal ran
        ran += 1
        inner(content)

    return _timed("fence", prop, lambda: ran, lambda: True)


def _timed(name: str, prop: Any, ran: Any, covered: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        prop()
        result = "passed" if covered() else "failed: the generator missed an edge hint value"
    except Exception as exc:  # noqa: BLE001 - reported, with hypothesis's falsifying example
        result = f"failed: {type(exc).__name__}: {str(exc)[:2000]}"
    seconds = time.perf_counter() - started
    return {"property": name, "examples": ran(), "seconds": round(seconds, 1), "result": result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=10_000, help="per property (10,000)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    runs = [run_policy(args.examples), run_fence(args.examples)]
    report = {
        "examples_asked": args.examples,
        "python": platform.python_version(),
        "load_average_at_start": load,
        "runs": runs,
    }
    for r in runs:
        print(f"{r['property']}: {r['examples']} examples in {r['seconds']} s: {r['result']}")
    print(f"load average at the start: {load}")
    out = ROOT / "benchmarks" / "results" / "properties.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"saved {out}")
    return 0 if all(r["result"] == "passed" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
