"""The bridge: the agent loop, runs, events, replay. The only layer that executes tools."""

from pysite_agent.agent.agent import AgentRun, SiteAgent, create_site_agent
from pysite_agent.agent.replay import ReplayResult, ReplayStep, recorded_decisions, replay

__all__ = [
    "AgentRun",
    "ReplayResult",
    "ReplayStep",
    "SiteAgent",
    "create_site_agent",
    "recorded_decisions",
    "replay",
]
