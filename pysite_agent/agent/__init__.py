"""The bridge: the agent loop, runs, events, replay. The only layer that executes tools."""

from pysite_agent.agent.agent import AgentRun, SiteAgent, create_site_agent
from pysite_agent.agent.evals import EvalReport, EvalSet, EvalSetError, load_eval_set, run_eval
from pysite_agent.agent.replay import ReplayResult, ReplayStep, recorded_decisions, replay

__all__ = [
    "AgentRun",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "ReplayResult",
    "ReplayStep",
    "SiteAgent",
    "create_site_agent",
    "load_eval_set",
    "recorded_decisions",
    "replay",
    "run_eval",
]
