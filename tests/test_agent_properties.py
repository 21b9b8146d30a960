"""Property-based checks of the policy invariants over random pages, replies and visitors.

Invariants (issue: core, "Tests"):
- no non-read-only call executes without a strict ``True`` from confirm unless it is pre-approved
  and none of rule 5's exceptions applies;
- a consequential call never runs unconfirmed;
- nothing runs after abort;
- every executed call appears in the trace with its decision.
"""

from __future__ import annotations

from typing import Any

from aio import run
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.core.wire import problems

ANNOTATIONS = [
    None,
    {},
    {"readOnlyHint": True},
    {"readOnlyHint": "true"},
    {"readOnlyHint": 1},
    {"readOnlyHint": False},
    {"consequentialHint": True},
    {"readOnlyHint": True, "consequentialHint": True},
    {"readOnlyHint": True, "untrustedContentHint": True},
    {"untrustedContentHint": True},
    {"readOnlyHint": False, "consequentialHint": "yes"},
    {"destructiveHint": True},
    {"consequentialHint": 0, "readOnlyHint": True},
    {"untrustedContentHint": "", "readOnlyHint": True},
]
CONFIRM_ANSWERS = [True, False, 1, "true", None, 1.0, "raise"]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}


def hint_set(value: Any) -> bool:
    return value is not None and value is not False


def oracle_allows(
    annotations: dict[str, Any] | None, pre_approved: bool, tainted: bool, answer: Any
) -> bool:
    strict_yes = answer is True
    if annotations is not None and hint_set(annotations.get("consequentialHint")):
        return strict_yes
    if annotations is not None and annotations.get("readOnlyHint") is True:
        return True
    if annotations is None or tainted:
        return strict_yes
    return True if pre_approved else strict_yes


page = st.lists(st.sampled_from(range(len(ANNOTATIONS))), min_size=1, max_size=3)
replies = st.lists(
    # (tool index, or 3 = an unknown name; whether the arguments are valid)
    st.tuples(st.integers(0, 3), st.sampled_from([True, True, True, False])),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # untrusted output, then a pre-approved non-read-only call: must ask
    page=[8, 5],
    approve_mask=[True, True, True, True],
    calls=[(0, True), (1, True)],
    answers=[False] * 6,
    abort_at=None,
    with_confirm=True,
)
@given(
    page=page,
    approve_mask=st.lists(st.booleans(), min_size=4, max_size=4),
    calls=replies,
    answers=st.lists(st.sampled_from(CONFIRM_ANSWERS), min_size=6, max_size=6),
    abort_at=st.one_of(st.none(), st.integers(0, 30)),
    with_confirm=st.booleans(),
)
def test_policy_invariants(
    page: list[int],
    approve_mask: list[bool],
    calls: list[tuple[int, bool]],
    answers: list[Any],
    abort_at: int | None,
    with_confirm: bool,
) -> None:
    names = [f"tool{i}" for i in range(len(page))]
    annotations = {names[i]: ANNOTATIONS[a] for i, a in enumerate(page)}
    executed: list[tuple[str, int]] = []
    violations: list[str] = []
    state = {"aborted": False, "events": 0}
    asked: dict[int, Any] = {}

    def make_execute(name: str) -> Any:
        def execute(args: dict[str, Any]) -> str:
            if state["aborted"]:
                violations.append(f"{name} ran after abort")
            executed.append((name, args["n"]))
            return f"{name} ran"

        return execute

    tools = [sa.Tool(n, f"Tool {n}.", make_execute(n), SCHEMA, annotations[n]) for n in names]
    pre_approved = [n for n, yes in zip(names, approve_mask, strict=False) if yes]

    script: list[dict[str, Any]] = []
    for k, (index, valid) in enumerate(calls):
        name = names[index] if index < len(names) else "unknown_tool"
        valid = valid is True
        script.append(
            {"type": "tool", "name": name, "arguments": {"n": k} if valid else {"n": "bad"}}
        )
    script.append({"type": "answer", "text": "done"})

    async def respond(request: sa.ModelRequest) -> Any:
        return script.pop(0) if script else {"type": "answer", "text": "end"}

    def confirm(request: sa.ConfirmRequest) -> Any:
        n = request.call.arguments["n"]
        answer = answers[n % len(answers)]
        asked[n] = answer
        if answer == "raise":
            raise RuntimeError("visitor UI failed")
        return answer

    agent = sa.create_site_agent(
        model=sa.custom(respond, name="random"),
        tools=tools,
        confirm=confirm if with_confirm else None,
        pre_approved=pre_approved,
        max_steps=10,
    )

    async def main() -> sa.RunResult:
        current: dict[str, sa.AgentRun] = {}

        def on_event(event: Any) -> None:
            state["events"] += 1
            if abort_at is not None and state["events"] == abort_at and "run" in current:
                state["aborted"] = True
                current["run"].abort()

        agent.on_event(on_event)
        current["run"] = agent.run("go")
        return await current["run"].done

    result = run(main())
    assert violations == []
    assert problems("trace-v1", result.trace) == []

    # Oracle over the executed calls, in order, with the untrusted state of the conversation.
    tainted = False
    expected: list[tuple[str, int]] = []
    steps = result.trace["steps"]
    considered = [s for s in steps if s["kind"] == "tool-call"]
    for step in considered:
        name, n = step["call"]["name"], step["call"]["arguments"]["n"]
        answer = asked.get(n) if with_confirm else None
        if answer == "raise":
            answer = None
        allowed = oracle_allows(annotations[name], name in pre_approved, tainted, answer)
        decision = (
            next(s for s in steps if s["kind"] == "decision" and s["callId"] == step["call"]["id"])
            if any(s["kind"] == "decision" and s["callId"] == step["call"]["id"] for s in steps)
            else None
        )
        if decision is None:
            continue  # aborted before a decision
        assert decision["allowed"] == allowed, (name, annotations[name], decision, tainted)
        if allowed and (name, n) in executed:
            expected.append((name, n))
            ann = annotations[name]
            if ann is not None and hint_set(ann.get("untrustedContentHint")):
                tainted = True
    assert executed == expected
    # Every executed call is in the trace with an allowing decision and a result.
    for name, n in executed:
        call_step = next(s for s in considered if s["call"]["arguments"]["n"] == n)
        call_id = call_step["call"]["id"]
        assert any(
            s["kind"] == "decision" and s["callId"] == call_id and s["allowed"] for s in steps
        )
        assert any(s["kind"] == "tool-result" and s["callId"] == call_id for s in steps)
        ann = annotations[name]
        if ann is not None and hint_set(ann.get("consequentialHint")):
            assert asked.get(n) is True
    if state["aborted"]:
        assert result.status in ("aborted", "answered", "error", "max-steps")
