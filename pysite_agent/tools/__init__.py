"""Tool sources and tool declarations.

- :class:`PythonToolSource`: a tool source over Python :class:`~pysite_agent.core.types.Tool`
  objects.
- :func:`tool` / :class:`ToolRegistry` (:mod:`pysite_agent.tools.declare`, its schemas from
  :mod:`pysite_agent.tools.schema`): typed Python functions as WebMCP tools; ``await
  registry.mount()`` (:mod:`pysite_agent.tools.mount`, Pyodide) puts them on
  ``document.modelContext``.
- :mod:`pysite_agent.tools.model_context`: the browser's ``document.modelContext`` as a tool
  source (the only module that reads it).
"""

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.types import ToolSource
from pysite_agent.tools.declare import (
    DeclaredTool,
    ToolArgumentsError,
    ToolRefused,
    ToolRegistry,
    tool,
)
from pysite_agent.tools.mount import Mount  # also installs ToolRegistry.mounter
from pysite_agent.tools.python_source import PythonToolSource, as_tool_source


def default_tool_source() -> ToolSource:
    """The browser's ``document.modelContext`` as a tool source (inside Pyodide).

    The choice is made here, in the tool-source layer, with a plain import (checked by the
    layer contracts), not by the agent.

    Raises:
        SiteAgentError: ``no-tools`` outside a browser, or when the page has no
            ``document.modelContext``.
    """
    from pysite_agent import ffi

    if not ffi.IN_PYODIDE:
        raise SiteAgentError(
            "no-tools",
            "No tools: outside a browser there is no document.modelContext; pass "
            "tools=[Tool(...)] or a tool source.",
        )
    from pysite_agent.tools.model_context import ModelContextSource

    return ModelContextSource()


__all__ = [
    "DeclaredTool",
    "Mount",
    "PythonToolSource",
    "ToolArgumentsError",
    "ToolRefused",
    "ToolRegistry",
    "as_tool_source",
    "default_tool_source",
    "tool",
]
