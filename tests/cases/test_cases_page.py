"""Regression cases: the proxy's stream headers, the Prompt API, WebMCP, storage, the eval.

Each test names its case id from ``tests/cases/index.json``, which says where it was reported.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aio import run
from stub_upstream import KEY, MODEL, AppServer, Reply, StubUpstream, openai_stream
from test_models_chrome import FakeLanguageModel, call_part, native_model
from test_models_chrome import request as chrome_request
from test_tools_model_context import WINDOW, DOMError, FakeModelContext

from pysite_agent import ffi
from pysite_agent.agent.evals import arguments_match, key_score
from pysite_agent.server import create_proxy_app
from pysite_agent.tools.model_context import ModelContextSource, read_input_schema

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = "https://shop.example"


@pytest.fixture(scope="module")
def streaming_proxy() -> Iterator[tuple[str, StubUpstream]]:
    with StubUpstream() as stub:
        app = create_proxy_app(
            provider="openai",
            model=MODEL,
            api_key=KEY,
            allowed_origins=[ORIGIN],
            base_url=f"{stub.url}/v1",
            rate_limit=False,
        )
        with AppServer(app) as server:
            yield f"{server.url}/", stub


def test_c20_the_streamed_reply_tells_reverse_proxies_not_to_buffer_it(
    streaming_proxy: tuple[str, StubUpstream],
) -> None:
    url, stub = streaming_proxy
    stub.responder = lambda r: Reply(stream=openai_stream(["Hi"]))
    body = {
        "version": 1,
        "instructions": "",
        "tools": [],
        "messages": [{"role": "user", "content": "hello"}],
    }
    headers = {"origin": ORIGIN, "accept": "text/event-stream"}
    with httpx.Client(trust_env=False, timeout=10) as client:
        response = client.post(url, json=body, headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    assert response.headers["cache-control"] == "no-store"
    assert "content-length" not in response.headers


def test_c21_prompt_streaming_chunks_are_deltas_and_are_not_repeated() -> None:
    lm = FakeLanguageModel(
        replies=[["Let me ", "add it. ", call_part("add_to_cart", {"id": "mug"})]]
    )
    fragments: list[str] = []
    reply = run(native_model(lm).respond(chrome_request(on_text=fragments.append)))
    assert "".join(fragments) == "Let me add it. "
    assert reply["type"] == "tool" and reply["name"] == "add_to_cart"


def test_c22_an_input_schema_given_as_a_json_string_is_read_as_the_object() -> None:
    schema = {"type": "object", "properties": {"message": {"type": "string"}}}
    assert read_input_schema(json.dumps(schema)) == schema


def test_c23_a_browser_that_cannot_parse_an_object_input_never_runs_the_tool_twice() -> None:
    class WantsAString(FakeModelContext):
        async def executeTool(self, tool: Any, args: Any, options: Any = None) -> Any:
            self.calls.append((tool["name"], args, options))
            raise DOMError("UnknownError", "Failed to parse input arguments")

    mc = WantsAString()
    mc.register("echo", description="Echo.", inputSchema={"type": "object"})
    source = ModelContextSource(mc, window=WINDOW)

    async def go() -> Any:
        [tool] = await source.get_tools()
        return await source.execute_tool(tool, {"message": "hello"})

    with pytest.raises(ffi.BrowserError) as info:
        run(go())
    assert len(mc.calls) == 1
    assert "did not run" in str(info.value)


def _node(script: str) -> Any:
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_c24_storage_that_cannot_even_be_read_never_breaks_the_conversation() -> None:
    got = _node(
        """
        Object.defineProperty(globalThis, 'sessionStorage', { get() {
          throw new DOMException('Access is denied for this document.', 'SecurityError'); } });
        const { Visit } = await import('./web/element/visit.js');
        const visit = new Visit('default');
        const failures = [];
        visit.onWriteFailed = (f) => failures.push(f);
        const read = visit.read();
        visit.write({ state: { conversation: { version: 1, messages: [], afterUntrusted: false },
                               run: null } });
        console.log(JSON.stringify({ read, failures, record: !!visit.record }));
        """
    )
    assert got["read"] is None
    assert got["record"] is True  # the page's own conversation goes on in memory
    [failure] = got["failures"]
    assert failure["removed"] is True and failure["error"] == "SecurityError"
    assert "cannot be kept for the next page" in failure["message"]


def test_c26_an_input_schema_as_an_object_or_null_is_taken_as_it_is() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert read_input_schema(schema) == schema
    assert read_input_schema(None) is None


# --- the eval's scoring -------------------------------------------------------------------------


def test_c27_an_integer_equals_the_same_float_even_nested() -> None:
    assert arguments_match({"numbers": [12.0, 15.0, 18.0]}, {"numbers": [12, 15, 18]})
    assert arguments_match({"numbers": [12, 15]}, {"numbers": [12.0, 15.0]})
    assert not arguments_match({"flag": 1}, {"flag": True})  # a boolean is not a number


def test_c28_key_order_never_matters_at_any_depth() -> None:
    expected = {"a": 1, "b": {"x": [1, {"p": 1, "q": 2}], "y": "z"}}
    actual = {"b": {"y": "z", "x": [1, {"q": 2, "p": 1}]}, "a": 1}
    assert arguments_match(expected, actual)


def test_c29_a_wrong_scalar_value_is_wrong() -> None:
    assert not arguments_match({"base": 10, "value": 3}, {"base": 999, "value": 3})
    assert key_score({"base": 10, "value": 3}, {"base": 999, "value": 3}) == 0.5


def test_the_index_names_a_source_and_an_existing_test_for_every_case() -> None:
    index = json.loads((ROOT / "tests" / "cases" / "index.json").read_text(encoding="utf-8"))
    cases = index["cases"]
    assert len(cases) >= 25
    assert len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert case["source"].startswith("https://github.com/"), case
        assert case["failure"] and isinstance(case["failedBefore"], bool)
        path, _, name = case["test"].partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), case
