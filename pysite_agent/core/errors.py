"""Error codes and the one exception the agent raises.

The codes docs/python-api.md lists (errors; ``SiteAgentError.code`` and
``RunResult.error.code``):

- ``aborted``: the run was aborted (``AgentRun.abort()`` or its ``signal``).
- ``busy``: ``SiteAgent.run()`` was called while a run was in progress.
- ``max-steps``: ``max_steps`` model turns passed without an answer.
- ``model-unavailable``: no model adapter can answer on this device.
- ``model-download-required``: the on-device model must be downloaded first (needs a user gesture).
- ``model-error``: the model adapter raised or its endpoint failed.
- ``bad-reply``: the model's reply was not one of the two reply shapes.
- ``no-tools``: there is no tool source (e.g. ``tools=None`` outside a browser).
- ``conversation-too-long``: the latest message with its calls and results does not fit the
  model endpoint's caps, even with older messages left out and results shortened
  (:mod:`pysite_agent.core.history`).
- ``repeated-call``: the model asked for the same call (same tool, same arguments as
  canonical JSON) a third time in a row in one run; that call was not run.

``stale-tools`` is not a run error: it is the error *result* the model receives for a call whose
tools changed between the decision and the execution (see :mod:`pysite_agent.core.policy`).
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

ErrorCode = Literal[
    "aborted",
    "busy",
    "max-steps",
    "model-unavailable",
    "model-download-required",
    "model-error",
    "bad-reply",
    "no-tools",
    "conversation-too-long",
    "repeated-call",
]

ERROR_CODES: Final[frozenset[str]] = frozenset(get_args(ErrorCode))

STALE_TOOLS: Final = "stale-tools"


class SiteAgentError(Exception):
    """The agent's error, carrying one of :data:`ERROR_CODES` in ``code``.

    Raises:
        ValueError: if ``code`` is not one of :data:`ERROR_CODES`.
    """

    code: ErrorCode
    message: str

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown SiteAgentError code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"SiteAgentError({self.code!r}, {self.message!r})"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The wire form ``{"code": str, "message": str}``."""
        return {"code": self.code, "message": self.message}

    @classmethod
    def from_json(cls, data: Any) -> SiteAgentError:
        """Read the wire form back; an unknown code becomes ``model-error``."""
        code = data.get("code") if isinstance(data, dict) else None
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, str):
            message = "unknown error"
        if code not in ERROR_CODES:
            return cls("model-error", message)
        return cls(code, message)


def model_unavailable(model: Any) -> SiteAgentError:
    """``model-unavailable`` for ``model`` (a model adapter), with its ``unavailable_reason``
    when it has one (a ``str``; e.g. Chrome's model says why the browser has none)."""
    why = getattr(model, "unavailable_reason", "")
    detail = f": {why}" if isinstance(why, str) and why else ""
    name = getattr(model, "name", type(model).__name__)
    return SiteAgentError("model-unavailable", f"The model '{name}' is not available here{detail}.")
