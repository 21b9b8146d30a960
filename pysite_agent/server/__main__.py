"""``python -m pysite_agent.server``: run the proxy under uvicorn.

The provider key is read from an environment variable (``--api-key-env``, by default
``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` or ``GEMINI_API_KEY``), never from an argument
(arguments show up in process lists and shell histories). One JSON line per request goes to
stderr (status, provider, latency, client bucket; never the key or message content).
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

DEFAULT_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
STORAGE_ENV = "PYSITE_AGENT_RATE_LIMIT_STORAGE"
WORKER_ARGV_ENV = "PYSITE_AGENT_SERVER_ARGV"


class _Parser(argparse.ArgumentParser):
    """Never abbreviates options, and never repeats unknown arguments (one may be a key)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            message = (
                "unrecognized arguments (not repeated here). The provider key is read from an "
                "environment variable (--api-key-env), never from an argument."
            )
        super().error(message)


def port_number(text: str) -> int:
    """An ``argparse`` type: a TCP port from 0 to 65535 (0: the system picks a free one)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a TCP port: use a whole number from 0 to 65535"
        )
    return value


def listen_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (checked before starting), or ``None``.

    A host that cannot be resolved, or that is not an address of this machine, is reported as a
    host problem; a port in use or reserved as a port problem.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return (
            f"cannot resolve the host {host!r} ({exc.strerror}): pass --host with a name or "
            "address of this machine, such as 127.0.0.1 or 0.0.0.0"
        )
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                return (
                    f"the host {host!r} is not an address of this machine: pass --host with "
                    "one of its addresses, such as 127.0.0.1 or 0.0.0.0"
                )
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} is already in use on {host}: pass another --port"
            if exc.errno == errno.EACCES:
                return f"port {port} needs privileges on this machine: pass a --port above 1023"
            return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None


def worker_count(text: str) -> int:
    """An ``argparse`` type: a number of worker processes, 1 to 64."""
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers: use 1 to 64")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        allow_abbrev=False,
        prog="python -m pysite_agent.server",
        description="Run the pysite-agent proxy: it keeps the model provider's key and answers "
        "the browser's proxy() adapter (protocol v1).",
    )
    p.add_argument("--provider", required=True, choices=sorted(DEFAULT_KEY_ENV))
    p.add_argument("--model", required=True, help="the provider's model ID")
    p.add_argument(
        "--allowed-origin",
        action="append",
        required=True,
        metavar="ORIGIN",
        help="an exact origin such as https://example.com (repeat for more)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key (default: by provider, e.g. OPENAI_API_KEY)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_number, default=8787, help="0 to 65535 (default 8787)")
    p.add_argument("--path", default="/", help="where the proxy answers (default /)")
    p.add_argument("--health-path", default="/healthz")
    p.add_argument("--base-url", help="API root for OpenAI-compatible servers or gateways")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--max-messages", type=int, default=40)
    p.add_argument("--max-tools", type=int, default=32)
    p.add_argument("--max-body-bytes", type=int, default=65_536)
    p.add_argument("--rate-limit-window-ms", type=int, default=60_000)
    p.add_argument("--rate-limit-max", type=int, default=20)
    p.add_argument("--no-rate-limit", action="store_true", help="turn the rate limit off")
    p.add_argument(
        "--rate-limit-storage",
        help=f"memory:// (default) or redis://host:6379/0; also read from ${STORAGE_ENV}",
    )
    p.add_argument("--instructions", help="instructions added before the browser's")
    p.add_argument(
        "--no-client-instructions",
        action="store_true",
        help="ignore the instructions the browser sends",
    )
    p.add_argument("--allow-header", action="append", default=[], metavar="NAME")
    p.add_argument("--timeout-ms", type=int, default=30_000)
    p.add_argument(
        "--body-timeout-ms",
        type=int,
        default=10_000,
        help="the request body must arrive within this time (408 after it)",
    )
    p.add_argument(
        "--client-ip-header",
        metavar="NAME",
        help="read the client address from this header, set by a reverse proxy you trust "
        "(last entry of a list such as X-Forwarded-For)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="worker processes sharing the port (default 1); share the rate limit between "
        "them with --rate-limit-storage redis://...",
    )
    return p


def build_app(args: argparse.Namespace, environ: dict[str, str]) -> Any:
    """The routed ASGI app for parsed ``args``; raises ``SystemExit`` with a message."""
    from pysite_agent.server import client_ip_from_header, create_proxy_app, with_health

    key_env = args.api_key_env or DEFAULT_KEY_ENV[args.provider]
    api_key = environ.get(key_env, "")
    if not api_key:
        if args.api_key_env:  # never echo it: it might be a key passed by mistake
            raise SystemExit("error: the environment variable named by --api-key-env is not set")
        raise SystemExit(f"error: set the environment variable {key_env} to the provider's key")
    storage = app_storage(args, environ)
    rate_limit: dict[str, int] | bool = (
        False
        if args.no_rate_limit
        else {"window_ms": args.rate_limit_window_ms, "max": args.rate_limit_max}
    )
    try:
        app = create_proxy_app(
            provider=args.provider,
            model=args.model,
            api_key=api_key,
            allowed_origins=args.allowed_origin,
            base_url=args.base_url,
            max_tokens=args.max_tokens,
            max_messages=args.max_messages,
            max_tools=args.max_tools,
            max_body_bytes=args.max_body_bytes,
            rate_limit=rate_limit,
            rate_limit_storage=storage,
            instructions=args.instructions,
            allow_client_instructions=not args.no_client_instructions,
            allow_headers=args.allow_header,
            timeout_ms=args.timeout_ms,
            body_timeout_ms=args.body_timeout_ms,
            client_ip=client_ip_from_header(args.client_ip_header)
            if args.client_ip_header
            else None,
        )
        return with_health(app, path=args.path, health_path=args.health_path)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"error: {exc}") from None


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("pysite_agent.server")
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False
    # httpx logs every upstream request at INFO ("HTTP Request: POST https://..."): the app's
    # own line already says what happened. Its lines stay available with --log-level debug.
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(quiet)


def worker_app() -> Any:
    """The app of one worker process (``--workers N``): uvicorn starts N processes that each
    call this factory; it reads the command line the main process saved in
    :data:`WORKER_ARGV_ENV` (never the key: that stays in its own environment variable)."""
    args = parser().parse_args(json.loads(os.environ[WORKER_ARGV_ENV]))
    configure_logging(args.log_level)
    return build_app(args, dict(os.environ))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    app = build_app(args, dict(os.environ))
    configure_logging(args.log_level)
    problem = listen_problem(args.host, args.port)
    if problem is not None:
        raise SystemExit(f"error: {problem}")
    import uvicorn

    options: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": False,  # the app logs its own line, without paths or queries
        "proxy_headers": False,  # never trust X-Forwarded-For implicitly
        "server_header": False,
        "lifespan": "on",
    }
    if args.workers == 1:
        uvicorn.run(app, **options)
        return 0
    if not args.no_rate_limit and app_storage(args, dict(os.environ)) == "memory://":
        logging.getLogger("pysite_agent.server").warning(
            json.dumps(
                {
                    "event": "rate-limit-per-worker",
                    "message": f"each of the {args.workers} workers counts alone with memory://:"
                    " pass --rate-limit-storage redis://... to share one limit",
                }
            )
        )
    os.environ[WORKER_ARGV_ENV] = json.dumps(argv)
    uvicorn.run(
        "pysite_agent.server.__main__:worker_app", factory=True, workers=args.workers, **options
    )
    return 0


def app_storage(args: argparse.Namespace, environ: dict[str, str]) -> str:
    """The rate-limit storage URI the command line uses (``memory://`` by default)."""
    return str(args.rate_limit_storage or environ.get(STORAGE_ENV) or "memory://")


if __name__ == "__main__":
    sys.exit(main())
