"""``python -m pysite_agent bundle OUT``: write the self-hosted folder.

The work is :func:`pysite_agent.bundle.build_bundle`; this module only parses the command line.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_command(sub: Any) -> None:
    """Register ``bundle`` on ``sub`` (an ``argparse`` sub-parsers action)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "bundle",
        help="write a self-hosted folder: loader.js, web/, Pyodide and the wheels, no CDN",
        description=(
            "Write OUT, a folder a site can host as-is: loader.js, web/, pyodide/ (Pyodide core, "
            "the pinned wheels, the pysite_agent wheel and a pyodide-lock.json for exactly "
            "these) and bundle-manifest.json. Downloads are cached and checked by sha256; a "
            "second run needs no network and writes the same bytes."
        ),
    )
    p.add_argument("out", metavar="OUT", help="the folder to write (replaced as a whole)")
    p.add_argument(
        "--cache",
        metavar="DIR",
        default=None,
        help="download cache (default: $PYSITE_AGENT_CACHE_DIR, .cache/pysite-agent in a "
        "checkout, else ~/.cache/pysite-agent)",
    )
    p.add_argument(
        "--with-test-wheels",
        action="store_true",
        help="also add pytest, hypothesis and their dependencies (tests inside Pyodide)",
    )
    p.add_argument(
        "--jupyterlite",
        action="store_true",
        help="write OUT as a JupyterLite source folder instead (static/pyodide/ with the "
        "kernel's wheels, jupyter-lite.json, an example notebook); then: jupyter lite build",
    )
    p.add_argument(
        "--with-local-model",
        action="store_true",
        help="also add the in-page model engine (wllama/) and SmolLM2-135M (models/), "
        'for models="local" (docs/local-model.md)',
    )
    p.add_argument(
        "--local-model-type",
        choices=("Q8_0", "Q4_1"),
        default=None,
        help="with --with-local-model: the model file's llama.cpp type. Q8_0 (default, 145 MB) "
        "is made from the pinned Q4_1 file (needs pysite-agent[local-model]: gguf, numpy; "
        "cached) and reads prompts faster in the browser; Q4_1 (98 MB) ships the pinned file",
    )
    p.add_argument(
        "--no-precompile",
        action="store_true",
        help="ship Pyodide's standard library and the wheels as they are, without the "
        "bytecode made with Node (python_stdlib_pyc.zip, 4.5 MB more, and a pyc beside each "
        "module in the wheels: a faster first start)",
    )
    p.set_defaults(handler=_run_bundle)


def _run_bundle(args: argparse.Namespace) -> int:
    import sys

    from pysite_agent.bundle import BUILD_ERRORS, build_bundle, default_cache_dir

    if args.local_model_type is not None and not args.with_local_model:
        print("bundle: --local-model-type needs --with-local-model", file=sys.stderr)
        return 2
    try:
        if args.jupyterlite:
            from pysite_agent.bundle import build_jupyterlite

            build_jupyterlite(args.out, cache_dir=args.cache)
        else:
            build_bundle(
                args.out,
                cache_dir=args.cache,
                include_test_wheels=args.with_test_wheels,
                include_local_model=args.with_local_model,
                local_model_type=args.local_model_type or "Q8_0",
                precompile=not args.no_precompile,
            )
    except (*BUILD_ERRORS, ValueError) as exc:
        cache = args.cache or default_cache_dir()
        print(f"bundle: {exc}", file=sys.stderr)
        print(
            f"bundle: nothing was replaced; the download cache is {cache} (files already there "
            "are kept and checked by sha256; a later run fetches only what is missing)",
            file=sys.stderr,
        )
        return 1
    return 0
