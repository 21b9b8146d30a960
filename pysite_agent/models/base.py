"""``custom(fn)`` and ``first_available(*models)`` (docs/models.md).

A model adapter has ``name`` and ``async respond(request) -> reply``; optionally
``async availability() -> "unavailable" | "downloadable" | "downloading" | "available"`` and
``async prepare(on_progress, signal)`` (e.g. to download Chrome's on-device model after a click).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import Availability, ModelAdapter, ModelRequest

AVAILABILITY_VALUES = ("unavailable", "downloadable", "downloading", "available")


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


async def availability_of(model: Any) -> Availability:
    """``model.availability()`` when it has one (unknown values count as ``unavailable``),
    else ``"available"``. An ``availability()`` that raises counts as ``unavailable``."""
    fn = getattr(model, "availability", None)
    if fn is None:
        return "available"
    try:
        value = await _maybe_await(fn())
    except Exception:  # noqa: BLE001 - a failing probe means "not usable now"
        return "unavailable"
    return value if value in AVAILABILITY_VALUES else "unavailable"


class CustomModel:
    """A model from a function ``fn(request) -> reply`` (sync or async)."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], Any],
        *,
        name: str | None = None,
        availability: Callable[[], Availability | Awaitable[Availability]] | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError("custom(fn): fn must be callable")
        self._fn = fn
        self._name = name or getattr(fn, "__name__", None) or "custom"
        if self._name == "<lambda>":
            self._name = "custom"
        self._availability = availability

    @property
    def name(self) -> str:
        return self._name

    async def availability(self) -> Availability:
        if self._availability is None:
            return "available"
        value = await _maybe_await(self._availability())
        return value if value in AVAILABILITY_VALUES else "unavailable"

    async def respond(self, request: ModelRequest) -> Any:
        return await _maybe_await(self._fn(request))


def custom(
    fn: Callable[[ModelRequest], Any],
    *,
    name: str | None = None,
    availability: Callable[[], Availability | Awaitable[Availability]] | None = None,
) -> CustomModel:
    """A model adapter from ``fn(request) -> reply``; ``fn`` may be sync or async.

    Raises:
        TypeError: ``fn`` is not callable.
    """
    return CustomModel(fn, name=name, availability=availability)


class FirstAvailable:
    """Per step, the first model whose availability is ``"available"`` answers.

    ``last_model_name`` is the name of the model that answered the latest step.

    Raises (from :meth:`respond`):
        SiteAgentError: ``model-download-required`` when none is available but one is
            ``downloadable``; ``model-unavailable`` when none is available at all.
    """

    def __init__(self, *models: ModelAdapter) -> None:
        if not models:
            raise ValueError("first_available() needs at least one model")
        self.models = models
        self.last_model_name: str | None = None

    @property
    def name(self) -> str:
        return " / ".join(m.name for m in self.models)

    async def availability(self) -> Availability:
        states = [await availability_of(m) for m in self.models]
        for state in ("available", "downloading", "downloadable"):
            if state in states:
                return state  # type: ignore[return-value,unused-ignore]
        return "unavailable"

    async def pick(self) -> ModelAdapter:
        """The model that would answer now (see the class docstring for errors)."""
        states = []
        for model in self.models:
            state = await availability_of(model)
            if state == "available":
                return model
            states.append(state)
        if "downloadable" in states or "downloading" in states:
            raise SiteAgentError(
                "model-download-required",
                "The on-device model must be downloaded first, and no other model is available.",
            )
        raise SiteAgentError("model-unavailable", "No model is available on this device.")

    async def respond(self, request: ModelRequest) -> Any:
        model = await self.pick()
        self.last_model_name = model.name
        return await model.respond(request)

    def reset(self) -> None:
        """A new conversation: each chained model's optional ``reset()`` is called."""
        for model in self.models:
            reset = getattr(model, "reset", None)
            if callable(reset):
                with contextlib.suppress(Exception):
                    reset()

    async def prepare(
        self, on_progress: Callable[[float], Any] | None = None, signal: AbortSignal | None = None
    ) -> None:
        """Prepare the first model that is ``downloadable`` (e.g. start Chrome's download)."""
        for model in self.models:
            if await availability_of(model) in ("downloadable", "downloading"):
                prepare = getattr(model, "prepare", None)
                if prepare is not None:
                    await _maybe_await(prepare(on_progress, signal))
                return


def first_available(*models: ModelAdapter) -> FirstAvailable:
    """Chain ``models``: for each step, the first that reports ``available`` answers.

    Raises:
        ValueError: no models given.
    """
    return FirstAvailable(*models)
