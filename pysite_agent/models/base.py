"""``custom(fn)`` and ``first_available(*models)`` (docs/models.md), and the one reader of a
model's optional members.

A model adapter has ``name`` and ``async respond(request) -> reply``; optionally
``async availability() -> "unavailable" | "downloadable" | "downloading" | "available"`` and
``async prepare(on_progress, signal)`` (e.g. to download Chrome's on-device model after a click).
Every optional member the package reads is in :data:`OPTIONAL_MEMBERS`, and only
:func:`optional_member` (and the helpers built on it here) reads one: the agent, the chain and
the element glue ask here instead of probing models themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.signals import AbortSignal, maybe_await
from pysite_agent.core.types import Availability, ModelAdapter, ModelRequest

AVAILABILITY_VALUES = ("unavailable", "downloadable", "downloading", "available")


__all__ = [
    "AVAILABILITY_VALUES",
    "OPTIONAL_MEMBERS",
    "CustomModel",
    "FirstAvailable",
    "answered_by",
    "availability_of",
    "can_prepare",
    "custom",
    "first_available",
    "maybe_await",
    "model_parts",
    "optional_member",
    "reset_model",
]

OPTIONAL_MEMBERS = (
    "availability",
    "prepare",
    "reset",
    "can_prepare",
    "last_model_name",
    "models",
    "clear",
    "download_bytes",
    "stored_bytes",
    "last_usage",
    "warm",
)
"""A model's optional members: ``availability()`` and ``prepare(on_progress, signal)`` (sync or
async), ``reset()`` (a new conversation), ``can_prepare`` (a bool, when ``prepare`` exists but
cannot always run), ``last_model_name`` (a chain: the model that answered the latest step),
``models`` (a chain: its models, in order), and for a model the site hosts (``local``):
``clear()`` (remove the copy kept on this device), ``download_bytes`` and ``stored_bytes``
(its size, and what the kept copy takes, in bytes), ``last_usage`` (the latest step's token
counts, a dict) and ``warm(instructions, tools, signal)`` (read the fixed start of the prompt
before the visitor asks)."""

_MISSING: Any = object()


def optional_member(model: object, name: str, default: Any = None) -> Any:
    """``model``'s optional member ``name`` (one of :data:`OPTIONAL_MEMBERS`), or ``default``
    when it has none. The value is returned as it is: callers check it is callable.

    Raises:
        ValueError: ``name`` is not in :data:`OPTIONAL_MEMBERS` (a typo, caught here).
    """
    if name not in OPTIONAL_MEMBERS:
        raise ValueError(f"{name!r} is not an optional model member: {OPTIONAL_MEMBERS}")
    return getattr(model, name, default)


def model_parts(model: object) -> list[Any]:
    """The models of a chain (its ``models``), or ``[model]`` for a single model."""
    return list(optional_member(model, "models") or (model,))


def can_prepare(model: object) -> Any:
    """Whether ``model`` can be prepared: its ``can_prepare`` when it has one, else whether it
    has a callable ``prepare``."""
    return optional_member(model, "can_prepare", callable(optional_member(model, "prepare")))


def answered_by(model: Any) -> str:
    """The name of the model that answered the latest step: a chain's ``last_model_name``, else
    ``model.name``."""
    name: str = optional_member(model, "last_model_name") or model.name
    return name


def reset_model(model: object) -> None:
    """Call ``model.reset()`` when it has one (e.g. Chrome's adapter destroys its sessions); an
    error in it is ignored (a new conversation starts anyway)."""
    reset = optional_member(model, "reset")
    if callable(reset):
        with contextlib.suppress(Exception):
            reset()


async def availability_of(model: Any) -> Availability:
    """``model.availability()`` when it has one (unknown values count as ``unavailable``),
    else ``"available"``. An ``availability()`` that raises counts as ``unavailable``."""
    fn = optional_member(model, "availability")
    if fn is None:
        return "available"
    try:
        value = await maybe_await(fn())
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
        value = await maybe_await(self._availability())
        return value if value in AVAILABILITY_VALUES else "unavailable"

    async def respond(self, request: ModelRequest) -> Any:
        return await maybe_await(self._fn(request))


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
            reset_model(model)

    async def prepare(
        self, on_progress: Callable[[float], Any] | None = None, signal: AbortSignal | None = None
    ) -> None:
        """Prepare the first model that is ``downloadable`` (e.g. start Chrome's download)."""
        for model in self.models:
            if await availability_of(model) in ("downloadable", "downloading"):
                prepare = optional_member(model, "prepare")
                if prepare is not None:
                    await maybe_await(prepare(on_progress, signal))
                return


def first_available(*models: ModelAdapter) -> FirstAvailable:
    """Chain ``models``: for each step, the first that reports ``available`` answers.

    Raises:
        ValueError: no models given.
    """
    return FirstAvailable(*models)
