"""Fencing untrusted tool output (spec, safety rule 6).

Results of ``untrustedContentHint`` tools reach the model as
``<untrusted-data tool="NAME">…</untrusted-data>``. Any opening or closing tag of that name in
the content (any letter case, any white space or control characters between ``<``, ``/`` and the
name) has its ``<`` escaped as ``&lt;``, so the content can neither close the fence nor open a
fake one. The tool name is attribute-escaped.
"""

from __future__ import annotations

import re

FENCE_TAG = "untrusted-data"

# "<", then optional white space / "/" / control or format characters, then the tag name.
_TAG = re.compile(r"<(?=[\s/\x00-\x1f\u200b-\u200f\u2060\ufeff]*untrusted-data)", re.IGNORECASE)


def escape_attribute(value: str) -> str:
    """Escape ``& " < >`` for use inside a double-quoted attribute."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def escape_fence_tags(text: str) -> str:
    """Escape every would-be ``untrusted-data`` tag in ``text`` (its ``<`` becomes ``&lt;``)."""
    return _TAG.sub("&lt;", text)


def fence(tool_name: str, text: str) -> str:
    """Wrap ``text`` in the untrusted-data fence for ``tool_name``."""
    return (
        f'<{FENCE_TAG} tool="{escape_attribute(tool_name)}">\n'
        f"{escape_fence_tags(text)}\n"
        f"</{FENCE_TAG}>"
    )
