"""Model adapters. Each turns a :class:`~pysite_agent.core.types.ModelRequest` into one reply
(``{"type": "tool", ...}`` or ``{"type": "answer", "text"}``); none executes a tool."""

from pysite_agent.models.base import CustomModel, FirstAvailable, custom, first_available
from pysite_agent.models.chrome import ChromeBuiltIn, chrome_built_in
from pysite_agent.models.demo_rules import DemoRules, demo_rules
from pysite_agent.models.local import LocalModel, local_model
from pysite_agent.models.proxy import ProxyModel, proxy

__all__ = [
    "ChromeBuiltIn",
    "CustomModel",
    "DemoRules",
    "FirstAvailable",
    "LocalModel",
    "ProxyModel",
    "chrome_built_in",
    "custom",
    "demo_rules",
    "first_available",
    "local_model",
    "proxy",
]
