"""Tool sources and tool declarations.

- :class:`PythonToolSource`: a tool source over Python :class:`~pysite_agent.core.types.Tool`
  objects.
- :func:`tool` / :class:`ToolRegistry` (:mod:`pysite_agent.tools.declare`): typed Python functions
  as WebMCP tools; ``await registry.mount()`` (:mod:`pysite_agent.tools.mount`, Pyodide) puts them
  on ``document.modelContext``.
- :mod:`pysite_agent.tools.model_context`: the browser's ``document.modelContext`` as a tool
  source (the only module that reads it).
"""

from pysite_agent.tools.declare import (
    DeclaredTool,
    ToolArgumentsError,
    ToolRefused,
    ToolRegistry,
    tool,
)
from pysite_agent.tools.python_source import PythonToolSource, as_tool_source

__all__ = [
    "DeclaredTool",
    "PythonToolSource",
    "ToolArgumentsError",
    "ToolRefused",
    "ToolRegistry",
    "as_tool_source",
    "tool",
]
