"""Trace v1: the JSON record of one run (schema: ``pysite_agent/schemas/trace-v1.schema.json``).

``{version: 1, startedAt, endedAt, model, status, steps}``; each step has a ``kind`` (user, model,
tool-call, invalid-call, decision, tool-result, answer, error) and an ``at`` time. Times are
ISO-8601 UTC with milliseconds (``2026-11-30T04:42:54.123Z``); ``durationMs`` is milliseconds.
"""

from __future__ import annotations

import copy as _copy
import time
from datetime import UTC, datetime
from typing import Any

TRACE_VERSION = 1


def utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def monotonic_ms() -> float:
    """A monotonic clock in milliseconds, for ``durationMs``."""
    return time.perf_counter() * 1000.0


def duration_ms(started_ms: float) -> float:
    """Milliseconds since ``started_ms`` (from :func:`monotonic_ms`), rounded to 0.001 ms."""
    return round(max(0.0, monotonic_ms() - started_ms), 3)


class TraceRecorder:
    """Collects the steps of one run; :meth:`to_json` gives a deep copy of the trace."""

    def __init__(self, model: str) -> None:
        self.started_at = utc_now()
        self.ended_at: str | None = None
        self.model = model
        self.status = "running"
        self.steps: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append a step ``{"kind": kind, "at": now, **fields}`` and return it."""
        step = {"kind": kind, "at": utc_now(), **fields}
        self.steps.append(step)
        return step

    def finish(self, status: str) -> None:
        self.status = status
        self.ended_at = utc_now()

    def to_json(self, *, copy: bool = True) -> dict[str, Any]:
        """The trace as JSON data (trace v1). ``copy=False`` shares the recorder's step dicts
        instead of deep-copying them: only for a caller that serializes the result at once
        and never changes it (the element's record after each step)."""
        return {
            "version": TRACE_VERSION,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "model": self.model,
            "status": self.status,
            "steps": _copy.deepcopy(self.steps) if copy else self.steps,
        }
