"""Fencing untrusted tool output (README, safety rule 6).

Results of ``untrustedContentHint`` tools reach the model as
``<untrusted-data tool="NAME">…</untrusted-data>``. Inside the fence, *every* ``<`` is escaped
(``&lt;``; ``&`` first becomes ``&amp;``, so the escaping is unambiguous), and so is every
character whose Unicode normalization (NFC, NFD, NFKC or NFKD) holds a ``<``: ``＜`` (U+FF1C)
and ``﹤`` (U+FE64), which NFKC turns into ``<``, and ``≮`` (U+226E), which decomposes into ``<``
and a combining overlay. The content therefore holds no tag at all, in any normalization: it
can neither close the fence nor open a fake one, whatever case, white space, invisible or
look-alike characters it uses. The tool name is attribute-escaped.
"""

from __future__ import annotations

FENCE_TAG = "untrusted-data"

_CONTENT = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        "\uff1c": "&#xFF1C;",
        "\ufe64": "&#xFE64;",
        "\u226e": "&#x226E;",
    }
)


def escape_attribute(value: str) -> str:
    """Escape ``& " < >`` for use inside a double-quoted attribute."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def escape_fence_tags(text: str) -> str:
    """``text`` with ``&``, ``<`` and the ``<`` look-alikes escaped (see the module docstring)."""
    return text.translate(_CONTENT)


def fence(tool_name: str, text: str) -> str:
    """Wrap ``text`` in the untrusted-data fence for ``tool_name``."""
    return (
        f'<{FENCE_TAG} tool="{escape_attribute(tool_name)}">\n'
        f"{escape_fence_tags(text)}\n"
        f"</{FENCE_TAG}>"
    )
