"""Smoke test of the bundle inside Pyodide (Node and Chromium)."""

from __future__ import annotations

from pytest_pyodide import run_in_pyodide


@run_in_pyodide(packages=["pysite-agent"])
def test_runtime_imports_and_validates(selenium):
    import sys
    from importlib.metadata import version

    import jsonschema
    import rpds
    from jsonschema import Draft202012Validator

    import pysite_agent

    assert sys.version_info >= (3, 14)
    assert sys.platform == "emscripten"
    assert version("jsonschema") == "4.26.0"
    assert version("referencing") == "0.37.0"
    assert rpds.is_pure_pyrsistent_as_rpds  # the bundle's stand-in for rpds-py
    assert pysite_agent.__name__ == "pysite_agent"

    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "nights": {"type": "integer", "minimum": 1},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"city": "Oslo", "nights": 2})
    errors = sorted(e.message for e in validator.iter_errors({"nights": 0, "x": 1}))
    assert errors == [
        "'city' is a required property",
        "0 is less than the minimum of 1",
        "Additional properties are not allowed ('x' was unexpected)",
    ]
    assert isinstance(jsonschema.ValidationError("x"), Exception)
