"""What a start imports: the modules web/runtime/boot.js imports before "ready" do not import
jsonschema (the argument check's library, 60 % of their import time in Pyodide); the check
imports it on first use and behaves as before (docs/performance.md, "Do less before ready").

Each check runs in a fresh interpreter, so that no earlier test has imported jsonschema.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: boot.js's default `imports` (web/runtime/boot.js, startPython).
START_IMPORTS = [
    "pysite_agent",
    "pysite_agent.browser.element",
    "pysite_agent.browser.event_loop",
    "pysite_agent.tools.model_context",
]
#: boot.js's default `laterImports`: imported on idle after ready, and in every snapshot.
LATER = ["jsonschema", "referencing", "attrs", "rpds"]


def fresh(code: str) -> object:
    """Run ``code`` in a new interpreter; it prints one JSON value, returned here."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_start_imports_no_jsonschema() -> None:
    loaded = fresh(
        f"""
        import importlib, json, sys
        for name in {START_IMPORTS!r}:
            importlib.import_module(name)
        print(json.dumps([m for m in {LATER!r} if m in sys.modules]))
        """
    )
    assert loaded == []


def test_the_check_imports_it_on_first_use_and_still_reports_problems() -> None:
    result = fresh(
        """
        import json, sys
        from pysite_agent.core.validation import InvalidSchemaError, check_arguments, check_output
        from pysite_agent.core import wire
        before = "jsonschema" in sys.modules
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        check = check_arguments(schema, {"a": 1})
        try:
            check_arguments({"$ref": "#/$defs/missing"}, {})
            unresolved = None
        except InvalidSchemaError as exc:
            unresolved = str(exc)
        remote = check_output({"$ref": "https://example.invalid/s.json"}, {})
        print(json.dumps({
            "before": before,
            "problems": [p.to_json() for p in check.problems],
            "unresolved": unresolved,
            "remote": [p.to_json() for p in remote],
            "wire": wire.problems("protocol-v1", {"type": "answer"}, "reply"),
            "after": "jsonschema" in sys.modules,
        }))
        """
    )
    assert isinstance(result, dict)
    assert result["before"] is False
    assert result["problems"] == [{"path": "/a", "message": "1 is not of type 'string'"}]
    assert result["unresolved"] and "cannot be resolved" in result["unresolved"]
    assert (
        len(result["remote"]) == 1
        and "outputSchema cannot be used" in result["remote"][0]["message"]
    )
    assert result["wire"], "an answer without text is not a valid reply"
    assert result["after"] is True
