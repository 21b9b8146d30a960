"""The Pyodide boundary helpers for the element glue: a re-export of :mod:`pysite_agent.ffi`.

The implementation lives in :mod:`pysite_agent.ffi` because the tool source and the model
adapters (lower layers than ``browser``) use it too; see that module for the rules.
"""

from pysite_agent.ffi import (
    ERROR_TABLE,
    IN_PYODIDE,
    BrowserError,
    ErrorRule,
    JsAbortLink,
    OwnedCallback,
    call_abortable,
    callback,
    error_name,
    field,
    from_js_error,
    global_object,
    is_js,
    is_none,
    json_to_py,
    live_callbacks,
    maybe_await,
    plain_copy,
    pyproxy_tracing,
    same_object,
    signal_from_js,
    site_error,
    to_js,
    to_py,
)

__all__ = [
    "ERROR_TABLE",
    "IN_PYODIDE",
    "BrowserError",
    "ErrorRule",
    "JsAbortLink",
    "OwnedCallback",
    "call_abortable",
    "callback",
    "error_name",
    "field",
    "from_js_error",
    "global_object",
    "is_js",
    "is_none",
    "json_to_py",
    "live_callbacks",
    "maybe_await",
    "plain_copy",
    "pyproxy_tracing",
    "same_object",
    "signal_from_js",
    "site_error",
    "to_js",
    "to_py",
]
