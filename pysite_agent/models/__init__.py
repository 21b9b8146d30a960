"""Model adapters. Each turns a :class:`~pysite_agent.core.types.ModelRequest` into one reply
(``{"type": "tool", ...}`` or ``{"type": "answer", "text"}``); none executes a tool."""

from pysite_agent.models.base import CustomModel, FirstAvailable, custom, first_available
from pysite_agent.models.demo_rules import DemoRules, demo_rules

__all__ = ["CustomModel", "DemoRules", "FirstAvailable", "custom", "demo_rules", "first_available"]
