"""The bridge's own overhead per tool step: policy + validation + result text + trace + events.

The model and the tool are instant fakes, so what is timed is the agent's work between them.
Each sample is one run of ``STEPS_PER_RUN`` tool steps plus the answer; the per-step time is the
run's time divided by its steps. Reports median and p95 over at least 1,000 steps, for a page
with 1 tool and a page with 20 tools. Not a test; not run in CI.

Usage: python benchmarks/bridge_overhead.py [--steps 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

import pysite_agent as sa

STEPS_PER_RUN = 40


def page(tool_count: int) -> list[sa.Tool]:
    schema = {
        "type": "object",
        "properties": {
            "product": {"type": "string", "minLength": 1},
            "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
            "note": {"type": "string", "maxLength": 200},
        },
        "required": ["product", "quantity"],
        "additionalProperties": False,
    }
    tools = [
        sa.Tool(f"tool_{i}", f"Tool number {i}.", lambda a: "ok", schema, {"readOnlyHint": False})
        for i in range(tool_count)
    ]
    return tools


async def one_run(tool_count: int) -> float:
    tools = page(tool_count)
    replies: list[dict[str, Any]] = [
        {
            "type": "tool",
            "name": f"tool_{i % tool_count}",
            "arguments": {"product": "mug", "quantity": 2},
        }
        for i in range(STEPS_PER_RUN)
    ]
    replies.append({"type": "answer", "text": "done"})

    def respond(request: sa.ModelRequest) -> dict[str, Any]:
        return replies.pop(0)

    agent = sa.create_site_agent(
        model=sa.custom(respond),
        tools=tools,
        confirm=lambda request: True,
        max_steps=50,
    )
    started = time.perf_counter()
    result = await agent.run("go").done
    elapsed = time.perf_counter() - started
    assert result.status == "answered", result.error
    return elapsed * 1000 / STEPS_PER_RUN


def measure(tool_count: int, steps: int) -> dict[str, float]:
    samples: list[float] = []
    asyncio.run(one_run(tool_count))  # warm caches (validators, imports)
    while len(samples) * STEPS_PER_RUN < steps:
        samples.append(asyncio.run(one_run(tool_count)))
    samples.sort()
    return {
        "median_ms": statistics.median(samples),
        "p95_ms": samples[int(len(samples) * 0.95) - 1],
        "steps": len(samples) * STEPS_PER_RUN,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]} on {sys.platform}")
    for count in (1, 20):
        stats = measure(count, args.steps)
        print(
            f"{count:>2} tool(s): median {stats['median_ms']:.3f} ms/step, "
            f"p95 {stats['p95_ms']:.3f} ms/step over {stats['steps']:.0f} steps"
        )


if __name__ == "__main__":
    main()
