"""Run the pysite-agent proxy with one command, with a real provider or a fake model.

Try it with the demo shop, without any key (two terminals)::

    bash .ci/demo                                         # the demo on http://localhost:5180/
    .venv/bin/python examples/proxy_server.py --fake-model

then open http://localhost:5180/?models=proxy&proxy-url=http://127.0.0.1:8787/ (the example
prints this address), click **Ask the shop** and type "add two mugs to my cart": the proxy's
fake model asks for ``add_to_cart`` with ``{"product": "mugs", "quantity": 2}``, the page shows
a confirmation card, and after **Allow** the cart changes and the fake model answers with the
tool's result. "place the order" asks for ``checkout``; "show reviews of the red mug" reads
the reviews (read-only: no card).

The defaults match the demo: the proxy answers at http://127.0.0.1:8787/ (the demo's "Proxy
URL" field) and allows the origins http://localhost:5180 and http://127.0.0.1:5180 (pass
``--allowed-origin`` to allow others instead). ``/healthz`` answers ``{"status":"ok",...}``.

The fake model is not AI and nothing leaves the machine: it is an OpenAI-shaped stub inside
this process (``http://fake-model.invalid``, never resolved) that runs the package's demo
rules: it picks the tool whose name and description share the most words with the last user
message, fills the required arguments from the message and the tool's schema (numbers as
digits or words, else the schema's default, minimum or 1; strings from the remaining words),
and answers with the tool's result once it comes back.

With a real provider (the key comes from the environment, never from an argument)::

    export OPENAI_API_KEY=...            # or ANTHROPIC_API_KEY / GEMINI_API_KEY
    .venv/bin/python examples/proxy_server.py --provider openai --model MODEL_ID

and open the same address. One JSON line per request goes to stderr (status, provider,
latency, client; never the key or the conversation).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

import httpx
import uvicorn

from pysite_agent import ModelRequest, demo_rules
from pysite_agent.server import create_proxy_app, with_health

KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
DEMO_ORIGINS = ["http://localhost:5180", "http://127.0.0.1:5180"]
DEFAULT_PORT = 8787
DEFAULT_PATH = "/"  # the demo's default proxy URL is http://127.0.0.1:8787/
FAKE_BASE_URL = "http://fake-model.invalid/v1"  # .invalid never resolves; nothing is sent
ERROR_PREFIX = "Error: "  # how the proxy sends an error result to OpenAI


def _demo_request(body: dict[str, Any]) -> ModelRequest:
    """An OpenAI Chat Completions request as the protocol's ``ModelRequest``."""
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "inputSchema": t["function"].get("parameters", {"type": "object"}),
        }
        for t in body.get("tools", [])
    ]
    names: dict[str, str] = {}  # call id -> tool name
    messages: list[dict[str, Any]] = []
    for m in body["messages"]:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if m["role"] == "user":
            messages.append({"role": "user", "content": m["content"]})
        elif m["role"] == "tool":
            content = m["content"]
            is_error = content.startswith(ERROR_PREFIX)
            messages.append(
                {
                    "role": "tool",
                    "toolCallId": m["tool_call_id"],
                    "name": names.get(m["tool_call_id"], "the tool"),
                    "content": content.removeprefix(ERROR_PREFIX),
                    "isError": is_error,
                    "untrusted": False,
                }
            )
    return ModelRequest(instructions="", messages=messages, tools=tools)


async def fake_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model's OpenAI Chat Completions reply to a request ``body``.

    Deterministic: the same request always gets the same reply. A tool call when the last
    message is the user's and a tool matches it; otherwise an answer.
    """
    reply = await demo_rules().respond(_demo_request(body))
    if reply["type"] == "tool":
        call = {
            "id": f"call_fake_{len(body['messages'])}",
            "type": "function",
            "function": {"name": reply["name"], "arguments": json.dumps(reply["arguments"])},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": f"{reply['text']} (fake model, not AI)"}
        finish = "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


async def fake_openai(request: httpx.Request) -> httpx.Response:
    """The fake upstream: an ``httpx.MockTransport`` handler, so no request leaves the process."""
    return httpx.Response(200, json=await fake_completion(json.loads(request.content)))


def fake_app(origins: list[str]) -> Any:
    return create_proxy_app(
        provider="openai",
        model="fake",
        api_key="not-a-real-key",
        allowed_origins=origins,
        base_url=FAKE_BASE_URL,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake_openai)),
        # The fake model costs nothing: room for an eval run or three in a minute
        # (`eval examples/demo-shop-evals.json --proxy ...` sends one request per step).
        rate_limit={"window_ms": 60_000, "max": 600},
    )


def demo_url(origin: str, proxy_url: str) -> str:
    """The demo shop's address with the proxy model selected and this proxy's URL filled in."""
    return f"{origin}/?models=proxy&proxy-url={proxy_url}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n", 1)[0])
    p.add_argument("--fake-model", action="store_true", help="no key, no AI: the demo rules")
    p.add_argument("--provider", choices=sorted(KEY_ENV), default="openai")
    p.add_argument("--model", default=os.environ.get("MODEL", ""))
    p.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help=f"an origin allowed to call the proxy (default: {', '.join(DEMO_ORIGINS)})",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--path", default=DEFAULT_PATH, help=f"default {DEFAULT_PATH}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # One JSON line per request (status, provider, latency, client; never the key or content).
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # httpx would log each upstream call at INFO; the proxy's own line says what happened.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    origins = args.allowed_origin or DEMO_ORIGINS

    if args.fake_model:
        app = fake_app(origins)
        what = "a fake model (demo rules, not AI; nothing leaves this machine)"
    else:
        api_key = os.environ.get(KEY_ENV[args.provider], "")
        if not api_key or not args.model:
            print(f"set {KEY_ENV[args.provider]} and pass --model (or use --fake-model)")
            return 2
        app = create_proxy_app(
            provider=args.provider,
            model=args.model,
            api_key=api_key,
            allowed_origins=origins,
            instructions="Keep answers short.",
        )
        what = f"{args.provider} ({args.model})"
    proxy_url = f"http://127.0.0.1:{args.port}{args.path}"
    print(
        f"The proxy answers at {proxy_url} in front of {what},\n"
        f"for the origins {', '.join(origins)}. With the demo running (bash .ci/demo), open\n"
        f"    {demo_url(origins[0], proxy_url)}\n"
        'and type "add two mugs to my cart".',
        flush=True,
    )
    uvicorn.run(
        with_health(app, path=args.path),
        host="127.0.0.1",
        port=args.port,
        proxy_headers=False,
        access_log=False,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
