"""axe-core inside the page: inject npm ``axe-core`` (``node_modules/``, from ``npm ci``) and
scan the document, shadow roots included (axe walks open shadow DOM by itself).

:func:`site_agent_violations` keeps the violations that touch ``<site-agent>``: a node in its
shadow tree, or the element itself (the page around it is the site's business), and reports
each as ``{id, impact, help, nodes: [{target, summary}]}`` so a failing assertion shows what
to fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import unavailable

AXE_JS = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def inject_axe(page: Any) -> None:
    """Load axe into ``page`` (once per document). Page scripts cannot see the difference:
    it is evaluated through the DevTools protocol, so a page's CSP does not block it."""
    if page.evaluate("typeof window.axe === 'object'"):
        return
    if not AXE_JS.is_file():
        unavailable(f"{AXE_JS} is missing: run `npm ci` (bash .ci/setup does)")
    page.evaluate(AXE_JS.read_text(encoding="utf-8") + "\n;void 0")


def axe_scan(page: Any, rules: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """All violations axe finds in the document (WCAG 2.x A and AA, and axe's best practices)."""
    inject_axe(page)
    result: list[dict[str, Any]] = page.evaluate(
        """async (rules) => {
            const r = await axe.run(document, { resultTypes: ['violations'], rules: rules || {} });
            return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
              nodes: v.nodes.map((n) => ({ target: n.target, summary: n.failureSummary })) }));
        }""",
        rules,
    )
    return result


def site_agent_violations(page: Any) -> list[dict[str, Any]]:
    """The violations with at least one node inside ``<site-agent>``."""
    found = []
    for violation in axe_scan(page):
        nodes = [n for n in violation["nodes"] if "site-agent" in json.dumps(n["target"])]
        if nodes:
            found.append({**violation, "nodes": nodes})
    return found
