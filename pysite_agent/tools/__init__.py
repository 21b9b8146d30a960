"""Tool sources: Python tool lists here; the browser's ``document.modelContext`` in
:mod:`pysite_agent.tools.model_context` (the only module that reads it)."""

from pysite_agent.tools.python_source import PythonToolSource, as_tool_source

__all__ = ["PythonToolSource", "as_tool_source"]
