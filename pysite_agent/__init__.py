"""pysite-agent: an in-page agent in Python that calls only the WebMCP tools a page declared.

The public API (everything in ``__all__``); the layers behind it are ``core`` (pure types and
rules), ``tools`` (tool sources), ``models`` (model adapters), ``agent`` (the bridge: the only
execution gateway) and ``browser`` (the element's glue, Pyodide only).

Errors: :class:`SiteAgentError` (``code`` in :data:`ERROR_CODES`) for run failures; ``ValueError``
/ ``TypeError`` for bad options at creation.
"""

from pysite_agent.agent import (
    AgentRun,
    EvalReport,
    EvalSet,
    EvalSetError,
    ReplayResult,
    ReplayStep,
    SiteAgent,
    create_site_agent,
    load_eval_set,
    recorded_decisions,
    replay,
    run_eval,
)
from pysite_agent.agent.notebook import notebook_confirm
from pysite_agent.core.display import EventLog, TraceView
from pysite_agent.core.errors import ERROR_CODES, SiteAgentError
from pysite_agent.core.events import (
    AgentEvent,
    AnswerEvent,
    ConfirmRequestEvent,
    ConfirmResultEvent,
    DoneEvent,
    ErrorEvent,
    RunResult,
    TextDeltaEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from pysite_agent.core.signals import AbortController, AbortSignal
from pysite_agent.core.types import (
    ConfirmLine,
    ConfirmRequest,
    Decision,
    ModelAdapter,
    ModelRequest,
    RegisteredTool,
    Tool,
    ToolCall,
    ToolSource,
)
from pysite_agent.models import (
    chrome_built_in,
    custom,
    demo_rules,
    first_available,
    local_model,
    proxy,
)
from pysite_agent.tools import (
    DeclaredTool,
    PythonToolSource,
    ToolArgumentsError,
    ToolRefused,
    ToolRegistry,
    tool,
)

__version__ = "0.1.0"

__all__ = [
    "ERROR_CODES",
    "AbortController",
    "AbortSignal",
    "AgentEvent",
    "AgentRun",
    "AnswerEvent",
    "ConfirmLine",
    "ConfirmRequest",
    "ConfirmRequestEvent",
    "ConfirmResultEvent",
    "Decision",
    "DeclaredTool",
    "DoneEvent",
    "ErrorEvent",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "EventLog",
    "ModelAdapter",
    "ModelRequest",
    "PythonToolSource",
    "RegisteredTool",
    "ReplayResult",
    "ReplayStep",
    "RunResult",
    "SiteAgent",
    "SiteAgentError",
    "TextDeltaEvent",
    "ThinkingEvent",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallEvent",
    "ToolRefused",
    "ToolRegistry",
    "ToolResultEvent",
    "ToolSource",
    "TraceView",
    "chrome_built_in",
    "create_site_agent",
    "custom",
    "demo_rules",
    "first_available",
    "load_eval_set",
    "local_model",
    "notebook_confirm",
    "proxy",
    "recorded_decisions",
    "replay",
    "run_eval",
    "tool",
]
