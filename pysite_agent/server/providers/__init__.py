"""Translations between protocol v1 and each provider's HTTP API (pure: no I/O here).

Each module exposes a :class:`Provider`: ``build`` turns a prepared request into the
provider's HTTP request, ``parse`` turns the provider's JSON reply into a protocol v1 reply
(``{"type": "tool", ...}`` or ``{"type": "answer", ...}``) or raises :class:`Unusable`.
"""

from __future__ import annotations

from pysite_agent.server.providers._base import Prepared, Provider, Unusable, UpstreamRequest
from pysite_agent.server.providers.anthropic import ANTHROPIC
from pysite_agent.server.providers.gemini import GEMINI
from pysite_agent.server.providers.openai import OPENAI

PROVIDERS: dict[str, Provider] = {"anthropic": ANTHROPIC, "openai": OPENAI, "gemini": GEMINI}

__all__ = ["PROVIDERS", "Prepared", "Provider", "Unusable", "UpstreamRequest"]
