"""Run the pysite-agent proxy with one command.

With a real provider (the key comes from the environment, never from an argument)::

    export OPENAI_API_KEY=...            # or ANTHROPIC_API_KEY / GEMINI_API_KEY
    python examples/proxy_server.py --provider openai --model MODEL_ID \\
        --allowed-origin http://localhost:8000

Without any key, against a fake model that always picks the page's first tool (handy to try
the element's proxy-url and the confirmation flow)::

    python examples/proxy_server.py --fake-model --allowed-origin http://localhost:8000

Then point the element at it: ``<site-agent proxy-url="http://127.0.0.1:8787/api/agent">``.
The proxy answers at ``/api/agent``; ``/healthz`` says ``ok``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

import httpx
import uvicorn

from pysite_agent.server import create_proxy_app, with_health

KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}


def fake_openai(request: httpx.Request) -> httpx.Response:
    """An OpenAI-shaped model: calls the first tool once, then answers."""
    body = json.loads(request.content)
    if body["messages"][-1]["role"] == "tool" or not body.get("tools"):
        message = {"role": "assistant", "content": "Done (fake model)."}
        finish = "stop"
    else:
        name = body["tools"][0]["function"]["name"]
        call = {
            "id": "call_fake",
            "type": "function",
            "function": {"name": name, "arguments": "{}"},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    return httpx.Response(
        200, json={"choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    )


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--provider", choices=sorted(KEY_ENV), default="openai")
    parser.add_argument("--model", default=os.environ.get("MODEL", ""))
    parser.add_argument("--allowed-origin", action="append", default=[])
    parser.add_argument("--fake-model", action="store_true")
    parser.add_argument("--port", type=int, default=8787)
    args = parser.parse_args()
    # One JSON line per request (status, provider, latency, client; never the key or content).
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    origins = args.allowed_origin or ["http://localhost:8000"]

    if args.fake_model:
        app = create_proxy_app(
            provider="openai",
            model="fake",
            api_key="not-a-real-key",
            allowed_origins=origins,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake_openai)),
        )
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
    uvicorn.run(
        with_health(app, path="/api/agent"),
        host="127.0.0.1",
        port=args.port,
        proxy_headers=False,
        access_log=False,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
