"""The confirmation policy: which calls run directly and which ask the visitor.

Rules (the README's "The safety rules"):

- Rule 2: a tool whose ``readOnlyHint`` is strictly ``True`` runs without asking.
- Rule 3: every other call asks; only a strict ``True`` from ``confirm`` allows it.
- Rule 4: without a ``confirm`` function, every call that needs asking is denied.
- Rule 5: names in ``pre_approved`` skip asking, except (always asking):
  (a) tools marked ``consequentialHint`` (cannot be turned off; this project also asks for a
      consequential tool that claims to be read-only),
  (b) every non-read-only call once an ``untrustedContentHint`` tool has returned in this
      conversation,
  (c) tools for which the source returned no annotations at all.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pysite_agent.core.types import AskReason, Confirm, ConfirmRequest, Decision, RegisteredTool


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    """Either a decision made without the visitor, or the reason to ask."""

    decision: Decision | None
    ask_reason: AskReason | None


def evaluate(
    tool: RegisteredTool, *, pre_approved: Collection[str], after_untrusted: bool
) -> PolicyOutcome:
    """Decide a call to ``tool`` without the visitor where the rules allow it.

    Returns a :class:`PolicyOutcome` whose ``decision`` is set when no question is needed
    (``by`` is ``read-only`` or ``pre-approved``), else whose ``ask_reason`` says why to ask.
    """
    if tool.consequential:
        return PolicyOutcome(None, "consequential")
    if tool.read_only:
        return PolicyOutcome(Decision(True, "read-only"), None)
    if tool.annotations is None:
        return PolicyOutcome(None, "annotations-unknown")
    if after_untrusted:
        return PolicyOutcome(None, "after-untrusted")
    if tool.name in pre_approved:
        return PolicyOutcome(Decision(True, "pre-approved"), None)
    return PolicyOutcome(None, "not-read-only")


async def ask(confirm: Confirm | None, request: ConfirmRequest) -> Decision:
    """Ask the visitor through ``confirm`` and return the decision (``by="visitor"``).

    Only a strict ``True`` (``result is True``) allows: ``1``, ``"yes"``, a truthy object or a
    JS ``true`` wrapped in anything else all deny (rule 3). Without ``confirm`` the call is
    denied with ``by="no-confirm"`` (rule 4). A ``confirm`` that raises denies.
    """
    if confirm is None:
        return Decision(False, "no-confirm", request.reason)
    try:
        answer: Any = confirm(request)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:  # noqa: BLE001 - a failing confirm denies, it never allows
        return Decision(False, "visitor", request.reason)
    return Decision(answer is True, "visitor", request.reason)
