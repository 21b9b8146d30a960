"""The policy invariants as a property over random pages, replies, visitors, tool changes and
aborts. ``tests/test_agent_properties.py`` runs it in CI with a few hundred examples;
``python benchmarks/properties.py`` runs it at 10,000 or more (docs/security.md records the result).

Invariants checked on every example (README, "The safety rules"):

- no non-read-only call executes without a strict ``True`` from the visitor unless it is
  pre-approved and none of rule 5's exceptions applies (consequential, after untrusted output,
  no annotations); a consequential call never runs unconfirmed;
- a decision is bound to its call: when the page changes its tools after a call was decided and
  before it ran, the call does not run (``stale-tools``), and no tool of the same name runs in
  its place;
- an abort stops the run: once aborted before the answer, the run ends ``aborted``, with its
  ``aborted`` error as the trace's last step, and no tool, model call or question happens after
  the abort;
- every executed call appears in the trace with an allowing decision and its result.

Hint values are drawn from :data:`HINT_VALUES` (``True``, ``False``, absent and the edge values
``None``, ``""``, ``0``, ``1`` and strings), so each run meets all of them (the tests check it).
"""

from __future__ import annotations

from typing import Any

from aio import run
from hypothesis import strategies as st

import pysite_agent as sa
from pysite_agent.core.wire import problems

ABSENT = "<absent>"
HINT_VALUES: list[Any] = [ABSENT, True, False, None, "", 0, 1, "true", "false", "yes"]
HINTS = ("readOnlyHint", "consequentialHint", "untrustedContentHint")
CONFIRM_ANSWERS = [True, False, 1, "true", None, 1.0, "raise"]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}
# What the page does to its tools right after a call was decided (before it runs).
CHANGES = ["none", "none", "re-register", "replace", "unregister", "add-other"]


def _annotations(values: tuple[Any, Any, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None  # the page gave no annotations
    return {h: v for h, v in zip(HINTS, values, strict=True) if not _absent(v)}


def _absent(value: Any) -> bool:
    return isinstance(value, str) and value == ABSENT


def hint_set(value: Any) -> bool:
    """Rule 5's and 6's "marked": any value but ``False``/``None``."""
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


hint_value = st.sampled_from(HINT_VALUES)
hint_triple = st.tuples(hint_value, hint_value, hint_value)
tool_annotations = st.one_of(st.none(), hint_triple, hint_triple)  # a page without annotations: 1/3
examples = st.fixed_dictionaries(
    {
        "page": st.lists(tool_annotations, min_size=1, max_size=3),
        "approve_mask": st.lists(st.booleans(), min_size=3, max_size=3),
        # (tool index, or 3 = an unknown name; whether the arguments are valid)
        "calls": st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from([True, True, True, False])),
            min_size=1,
            max_size=6,
        ),
        "answers": st.lists(st.sampled_from(CONFIRM_ANSWERS), min_size=6, max_size=6),
        "abort_at": st.one_of(st.none(), st.integers(1, 30)),
        "with_confirm": st.booleans(),
        "change": st.sampled_from(CHANGES),
        "change_at": st.integers(0, 5),
    }
)


def seen_values(example: dict[str, Any]) -> set[str]:
    """Which hint values (as ``repr``) an example's page uses, for the coverage check."""
    return {repr(v) for values in example["page"] if values is not None for v in values}


def check(example: dict[str, Any]) -> None:
    """Run one example and check every invariant (raises ``AssertionError``)."""
    page = example["page"]
    names = [f"tool{i}" for i in range(len(page))]
    annotations = {names[i]: _annotations(values) for i, values in enumerate(page)}
    after_change = dict(annotations)  # the annotations of the tools registered by the change
    executed: list[tuple[str, int]] = []
    violations: list[str] = []
    state: dict[str, Any] = {"aborted": False, "events": 0, "abort_event": None, "changed": None}
    asked: dict[int, Any] = {}

    def make_execute(name: str, kind: str = "original") -> Any:
        def execute(args: dict[str, Any]) -> str:
            if state["aborted"]:
                violations.append(f"{name} ran after abort")
            if args["n"] == state["changed"] and example["change"] != "add-other":
                # Its own tool changed after the decision (another tool coming keeps it).
                violations.append(f"{name} ({kind}) ran for a call decided before the change")
            executed.append((name, args["n"]))
            return f"{name} ran"

        return execute

    def tool(name: str, kind: str = "original") -> sa.Tool:
        return sa.Tool(name, f"Tool {name}.", make_execute(name, kind), SCHEMA, annotations[name])

    source = sa.PythonToolSource([tool(n) for n in names])
    pre_approved = [n for n, yes in zip(names, example["approve_mask"], strict=False) if yes]

    script: list[dict[str, Any]] = []
    for k, (index, valid) in enumerate(example["calls"]):
        name = names[index] if index < len(names) else "unknown_tool"
        arguments = {"n": k} if valid else {"n": "bad"}
        script.append({"type": "tool", "name": name, "arguments": arguments})
    script.append({"type": "answer", "text": "done"})

    async def respond(request: sa.ModelRequest) -> Any:
        if state["aborted"]:
            violations.append("the model was asked after abort")
        return script.pop(0) if script else {"type": "answer", "text": "end"}

    def confirm(request: sa.ConfirmRequest) -> Any:
        if state["aborted"]:
            violations.append("the visitor was asked after abort")
        n = request.call.arguments["n"]
        answer = example["answers"][n % len(example["answers"])]
        asked[n] = answer
        if answer == "raise":
            raise RuntimeError("visitor UI failed")
        return answer

    def change_tools(event: Any) -> None:
        """After the decision of call ``change_at``, the page changes its tools."""
        n = event.call.arguments.get("n") if isinstance(event.call.arguments, dict) else None
        if example["change"] == "none" or n != example["change_at"] or state["changed"] is not None:
            return
        state["changed"] = n
        name = event.call.name
        if example["change"] in ("re-register", "replace", "unregister"):
            source.unregister(name)
        if example["change"] == "re-register":  # same content, a new registration
            source.register(tool(name, "re-registered"))
        elif example["change"] == "replace":  # same name, other content
            after_change[name] = {}
            source.register(
                sa.Tool(name, "Another tool.", make_execute(name, "replacement"), SCHEMA, {})
            )
        elif example["change"] == "add-other":
            source.register(sa.Tool("other", "Other.", lambda a: "other", None, {}))

    agent = sa.create_site_agent(
        model=sa.custom(respond, name="random"),
        tools=source,
        confirm=confirm if example["with_confirm"] else None,
        pre_approved=pre_approved,
        max_steps=10,
    )

    async def main() -> sa.RunResult:
        current: dict[str, sa.AgentRun] = {}

        def on_event(event: Any) -> None:
            state["events"] += 1
            if event.type == "confirm-result":
                change_tools(event)
            run_ = current.get("run")
            if state["events"] == example["abort_at"] and run_ is not None and not run_.done.done():
                state["aborted"] = True
                state["abort_event"] = event.type
                run_.abort()

        agent.on_event(on_event)
        current["run"] = agent.run("go")
        return await current["run"].done

    result = run(main())
    assert violations == []
    assert problems("trace-v1", result.trace) == []
    steps = result.trace["steps"]

    # Abort: before the answer, the run ends aborted and says so last; nothing happened after.
    if state["aborted"] and state["abort_event"] not in ("answer", "error", "done"):
        assert result.status == "aborted", (state["abort_event"], result.status)
        assert steps[-1]["kind"] == "error" and steps[-1]["code"] == "aborted"

    # Oracle over the decided calls, in order, with the untrusted state of the conversation.
    tainted = False
    expected: list[tuple[str, int]] = []
    considered = [s for s in steps if s["kind"] == "tool-call"]
    for step in considered:
        name, n = step["call"]["name"], step["call"]["arguments"]["n"]
        call_id = step["call"]["id"]
        changed = state["changed"]
        ann = after_change[name] if changed is not None and n > changed else annotations[name]
        answer = asked.get(n) if example["with_confirm"] else None
        if answer == "raise":
            answer = None
        allowed = oracle_allows(ann, name in pre_approved, tainted, answer)
        decision = next(
            (s for s in steps if s["kind"] == "decision" and s["callId"] == call_id), None
        )
        if decision is None:
            continue  # aborted before a decision
        if "cause" in decision:  # a question the abort ended: a recorded denial
            assert decision["allowed"] is False and state["aborted"]
            assert (name, n) not in executed
            continue
        assert decision["allowed"] == allowed, (name, ann, decision, tainted)
        outcome = next(
            (s["outcome"] for s in steps if s["kind"] == "tool-result" and s["callId"] == call_id),
            None,
        )
        if allowed and n == state["changed"] and example["change"] != "add-other":
            # The binding: decided, then its tool changed: not run, never substituted.
            assert outcome in ("stale-tools", None), outcome
            assert all(e[1] != n for e in executed)
        if allowed and n == state["changed"] and example["change"] == "add-other":
            # Another tool came (a route's own): the decision's tool stayed, so it runs.
            assert outcome in ("ran", "threw", "timeout", None), outcome
        if allowed and (name, n) in executed:
            expected.append((name, n))
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
        changed = state["changed"]
        ann = after_change[name] if changed is not None and n > changed else annotations[name]
        if ann is not None and hint_set(ann.get("consequentialHint")):
            assert asked.get(n) is True
