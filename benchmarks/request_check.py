"""Benchmark the proxy's protocol check: the ways to check a request against the published schema.

    .venv/bin/python benchmarks/request_check.py            # medians of 2,000 runs each
    .venv/bin/python benchmarks/request_check.py --quick    # 300 runs each

For a 4-message request with 1 tool and a 40-message request with 10 tools (user messages, tool
calls, tool results and answers in turn), the median time of one check with:

- ``jsonschema``: the full schema, ``$ref`` resolved on every message (``core.wire.problems``);
- ``jsonschema (refs inlined)``: the proxy's check before msgspec;
- ``fastjsonschema``: the inlined schema compiled to Python code (only if installed);
- ``pydantic``: hand-written models of the same shapes (only if installed; not built from the
  schema, measured for comparison);
- ``msgspec``: what the proxy runs now (``server._validate.request_problems``: msgspec types
  built from the schema; jsonschema only for a refused request);
- ``json.loads`` of the body, for scale.

Also the refused request's path (msgspec refuses, jsonschema words the problems). Results are
printed and written to ``benchmarks/results/request_check.json`` with the load average.
Not a test and not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pysite_agent.core import wire
from pysite_agent.server import _validate


def make_request(messages: int, tools: int) -> dict[str, Any]:
    """A request of ``messages`` messages (user, tool call, result, answer in turn)."""
    defined = [
        {
            "name": f"tool_{i}",
            "title": f"Tool {i}",
            "description": "Finds products in the catalogue by words and filters. " * 2,
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": True},
        }
        for i in range(tools)
    ]
    out: list[dict[str, Any]] = []
    turn = 0
    while len(out) < messages:
        call_id = f"call_{turn}"
        out += [
            {"role": "user", "content": f"Find me a blue mug, question {turn}."},
            {
                "role": "assistant",
                "toolCall": {"id": call_id, "name": "tool_0", "arguments": {"query": "blue mug"}},
            },
            {
                "role": "tool",
                "toolCallId": call_id,
                "name": "tool_0",
                "content": "Blue mug, 12 EUR, in stock. " * 8,
                "isError": False,
                "untrusted": False,
            },
            {"role": "assistant", "content": "There is a blue mug for 12 EUR, in stock."},
        ]
        turn += 1
    return {
        "version": 1,
        "instructions": "Answer from the page's tools only.",
        "messages": out[:messages],
        "tools": defined,
    }


def median_ms(check: Callable[[], Any], runs: int) -> float:
    check()  # built once, outside the timing
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        check()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 4)


def candidates(value: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    inlined = _validate.request_validator()
    found: dict[str, Callable[[], Any]] = {
        "jsonschema": lambda: wire.problems("protocol-v1", value, "request"),
        "jsonschema (refs inlined)": lambda: list(inlined.iter_errors(value)),
    }
    try:
        import fastjsonschema
    except ImportError:
        pass
    else:
        schema = dict(inlined.schema)
        schema.pop("$schema", None)  # fastjsonschema knows drafts up to 7; no keyword differs
        compiled = fastjsonschema.compile(schema, use_default=False)
        found["fastjsonschema"] = lambda: compiled(value)
    pydantic_check = _pydantic()
    if pydantic_check is not None:
        found["pydantic (hand-written models)"] = lambda: pydantic_check(value)
    found["msgspec (types from the schema)"] = lambda: _validate.request_problems(value)
    body = json.dumps(value).encode()
    found["json.loads of the body (scale)"] = lambda: json.loads(body)
    return found


def _pydantic() -> Callable[[Any], Any] | None:
    try:
        from typing import Annotated, Literal

        import pydantic
    except ImportError:
        return None
    config = pydantic.ConfigDict(extra="forbid", strict=True)

    class ToolCall(pydantic.BaseModel):
        model_config = config
        id: Annotated[str, pydantic.Field(min_length=1)]
        name: str
        arguments: Any
        meta: dict[str, Any] | None = None

    class User(pydantic.BaseModel):
        model_config = config
        role: Literal["user"]
        content: str

    class Answer(pydantic.BaseModel):
        model_config = config
        role: Literal["assistant"]
        content: str

    class Call(pydantic.BaseModel):
        model_config = config
        role: Literal["assistant"]
        toolCall: ToolCall

    class Result(pydantic.BaseModel):
        model_config = config
        role: Literal["tool"]
        toolCallId: Annotated[str, pydantic.Field(min_length=1)]
        name: str
        content: str
        isError: bool
        untrusted: bool
        denied: bool | None = None

    class Tool(pydantic.BaseModel):
        model_config = config
        name: Annotated[str, pydantic.Field(min_length=1, max_length=128)]
        title: str | None = None
        description: str
        inputSchema: dict[str, Any]
        annotations: dict[str, Any] | None = None

    class Request(pydantic.BaseModel):
        model_config = config
        version: Literal[1]
        instructions: str
        messages: Annotated[list[User | Answer | Call | Result], pydantic.Field(min_length=1)]
        tools: list[Tool]

    return Request.model_validate


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="300 runs per median")
    args = parser.parse_args()
    runs = 300 if args.quick else 2000
    load_at_start = os.getloadavg()
    print(f"load average at start: {load_at_start[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    results: dict[str, Any] = {"runs": runs, "cases": []}
    for messages, tools in ((4, 1), (40, 10)):
        value = make_request(messages, tools)
        assert _validate.request_problems(value) == []
        case: dict[str, Any] = {"messages": messages, "tools": tools, "median_ms": {}}
        for name, check in candidates(value).items():
            slow = name.startswith("jsonschema")
            case["median_ms"][name] = median_ms(check, max(30, runs // 20) if slow else runs)
            print(
                f"{messages:>3} messages, {tools:>2} tools: {name:<34} {case['median_ms'][name]} ms"
            )
        refused = {**value, "messages": [*value["messages"], {"role": "assistant"}]}
        assert _validate.request_problems(refused)
        case["refused_median_ms"] = median_ms(
            lambda refused=refused: _validate.request_problems(refused), max(30, runs // 20)
        )
        print(
            f"{messages:>3} messages, {tools:>2} tools: a refused request (msgspec, then "
            f"jsonschema for the words) {case['refused_median_ms']} ms"
        )
        results["cases"].append(case)
    results["cpus"] = os.cpu_count()
    results["load_average_at_start"] = load_at_start
    results["load_average"] = os.getloadavg()
    results["python"] = sys.version.split()[0]
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "request_check.json").write_text(json.dumps(results, indent=2))
    print(f"load average at end: {results['load_average'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
