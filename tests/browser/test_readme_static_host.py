"""The README's self-hosted snippet, copied as it is onto a static host without a proxy server.

The host answers the element's POST to ``proxy-url`` with 501 (Python's ``http.server``, like
many static hosts); headless Chromium has no on-device model. The visitor must read that the
assistant is not set up on this site yet, not "HTTP 501".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from element_support import e2e_bundle

ROOT = Path(__file__).resolve().parents[2]
EL = "document.querySelector('site-agent')"


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Self-hosted", 1)[1]
    snippet = re.search(r"```html\n(.*?)```", section, re.S)
    assert snippet is not None
    return snippet.group(1)


def test_the_snippet_on_a_static_host_says_the_assistant_is_not_set_up(
    page: Any, serve_directory: Callable[..., Any], tmp_path: Path
) -> None:
    snippet = readme_snippet()
    assert 'models="chrome proxy"' in snippet  # the model choice is visible in the snippet
    (tmp_path / "site-agent").symlink_to(e2e_bundle(), target_is_directory=True)
    (tmp_path / "index.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>Plans</title></head>"
        f"<body><h1>Plans</h1>{snippet}</body></html>",
        encoding="utf-8",
    )
    server = serve_directory(tmp_path)
    page.goto(server.url("index.html"))
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'", timeout=60_000)
    result = page.evaluate(f"{EL}.ask('which plans have SSO?')")
    assert result["status"] == "error"
    assert result["error"]["code"] == "model-unavailable"
    assert ("POST", "/api/agent", 501) in server.requests
    log = page.inner_text("site-agent >> .log")
    assert "not set up on this site yet" in log
    assert "/api/agent" in log
    assert "501" not in log and "HTTP" not in log
