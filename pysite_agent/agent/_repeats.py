"""Identical calls within one run: "do not ask twice" and the loop breaker.

Both compare a call as the model wrote it: the tool's name and its arguments as canonical JSON
(:func:`pysite_agent.core.types.canonical_json`), within one run (one visitor message).

- **Do not ask twice** (:class:`JustDone`): a call identical to the one that *just ran and
  succeeded* (the run's latest call, outcome ``ran``, not an error) is neither shown as a card
  nor run again. It is recorded as an ``invalid-call`` step with the code ``already-done``,
  and the model is told it already ran, with that result, and asked to answer. If it asks for
  it once more, the run answers from that result itself (an ``answer`` step with
  ``fromCallId``). Measured with SmolLM2-135M in the demo shop: after an allowed reservation
  ran, the model proposed the identical one again in every run (docs/local-model.md).
- **The loop breaker** (:class:`Repeats`): the third identical call in a row that is not
  covered above (denied, invalid, failed) ends the run with ``repeated-call``
  (docs/models.md, "Loops").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.text import shortened
from pysite_agent.core.types import canonical_json

MAX_IDENTICAL_CALLS = 2
"""Identical consecutive calls a run may make; the next identical one ends the run."""

ALREADY_DONE_CODE = "already-done"

ALREADY_DONE_TEXT = (
    "Not run again: this exact call (same tool, same arguments) already ran for this request "
    "and succeeded. Its result was:\n{result}\nDo not call it again: answer the visitor now "
    "from that result."
)

ANSWER_MAX_CHARS = 600
"""The most characters of a tool's result the run quotes when it answers from it."""


def call_key(name: str, arguments: Any) -> str:
    """The identity of a call: ``[name, arguments]`` as canonical JSON."""
    return canonical_json([name, arguments])


@dataclass
class Done:
    """The run's latest call that ran and succeeded.

    ``text`` is the result as the visitor saw it, ``model_text`` as the model got it (fenced
    when untrusted); ``told`` is whether the model was already told it ran.
    """

    key: str
    call_id: str
    name: str
    text: str
    model_text: str
    untrusted: bool
    told: bool = False

    def error(self) -> dict[str, Any]:
        """The ``error`` of the trace's ``invalid-call`` step for a repeat of this call."""
        return {
            "code": ALREADY_DONE_CODE,
            "message": f"The same call already ran ({self.call_id}); it was not run again.",
            "problems": [],
        }

    def model_result(self) -> str:
        """What the model is told instead of running the call again."""
        return ALREADY_DONE_TEXT.format(result=self.model_text)

    def answer(self) -> str:
        """The run's own answer when the model asks a third time: the result itself, or (for
        an untrusted result, which must not become the assistant's words) a pointer to it."""
        if self.untrusted or not self.text.strip():
            return f"Done: {self.name} ran once; its result is shown above."
        return f"Done ({self.name}): {shortened(self.text, ANSWER_MAX_CHARS)}"


class JustDone:
    """Remembers the run's latest call and whether it succeeded (see the module docstring)."""

    def __init__(self) -> None:
        self._last: Done | None = None

    def find(self, name: str, arguments: Any) -> Done | None:
        """The latest call when this one is identical to it and it succeeded, else ``None``
        (and a different call forgets it: a repeat after something else ran runs again)."""
        last = self._last
        if last is not None and last.key == call_key(name, arguments):
            return last
        self._last = None
        return None

    def record(
        self, call_id: str, name: str, arguments: Any, result: tuple[str, str, bool] | None
    ) -> None:
        """The outcome of the call just handled: ``result`` is ``(text, model_text,
        untrusted)`` when it ran and succeeded, else ``None`` (denied, invalid, failed)."""
        if result is None:
            self._last = None
            return
        text, model_text, untrusted = result
        self._last = Done(call_key(name, arguments), call_id, name, text, model_text, untrusted)


class Repeats:
    """The loop breaker: counts identical consecutive calls in one run (same tool, same
    arguments as canonical JSON; denied and invalid calls count too)."""

    def __init__(self) -> None:
        self._last: str | None = None
        self._count = 0

    def check(self, name: str, arguments: Any) -> None:
        """Count this call.

        Raises:
            SiteAgentError: ``repeated-call`` on the third identical call in a row (not run).
        """
        key = call_key(name, arguments)
        self._count = self._count + 1 if key == self._last else 1
        self._last = key
        if self._count > MAX_IDENTICAL_CALLS:
            raise SiteAgentError(
                "repeated-call",
                f"The assistant asked for the same action ({name}, with the same details) "
                f"{self._count} times in a row, so it was stopped and not done again. "
                "Try asking in other words.",
            )
