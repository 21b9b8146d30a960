"""The policy invariants as a property (``tests/policy_properties.py``), at CI's size.

``python benchmarks/properties.py`` runs the same property at 10,000 examples or more.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from policy_properties import HINT_VALUES, check, examples, seen_values

CI_EXAMPLES = int(os.environ.get("PYSITE_PROPERTY_EXAMPLES", "300"))


def test_policy_invariants() -> None:
    seen: set[str] = set()

    @settings(
        max_examples=CI_EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(examples)
    def prop(example: dict[str, Any]) -> None:
        seen.update(seen_values(example))
        check(example)

    prop()
    # The generator met every edge hint value in this run.
    assert seen >= {repr(v) for v in HINT_VALUES}, sorted({repr(v) for v in HINT_VALUES} - seen)


def test_untrusted_output_then_a_pre_approved_call_asks() -> None:
    check(
        {
            "page": [(True, "<absent>", True), (False, "<absent>", "<absent>")],
            "approve_mask": [True, True, True],
            "calls": [(0, True), (1, True)],
            "answers": [False] * 6,
            "abort_at": None,
            "with_confirm": True,
            "change": "none",
            "change_at": 0,
        }
    )


def test_a_decision_then_a_re_registration_runs_nothing() -> None:
    check(
        {
            "page": [(True, "<absent>", "<absent>")],
            "approve_mask": [False, False, False],
            "calls": [(0, True), (0, True)],
            "answers": [True] * 6,
            "abort_at": None,
            "with_confirm": True,
            "change": "re-register",
            "change_at": 0,
        }
    )
