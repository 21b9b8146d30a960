"""The shared generators at the remaining input boundaries of docs/boundaries.md: the stored
visit record, the element's settings (attributes and properties), eval files, notebook input
and the argument check. Every value is either taken or refused with the documented error
(never another exception). CPython and Pyodide (tests/pyodide/test_core_suite.py)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from generators import dismantle, hostile_text, hostile_value, nested_dict, nested_list
from hypothesis import given, settings
from hypothesis import strategies as st

from pysite_agent.agent.evals import EvalSetError, load_eval_set
from pysite_agent.browser._config import ConfigError, parse_config
from pysite_agent.core import visit
from pysite_agent.core.display import TraceView, trace_of
from pysite_agent.core.validation import check_arguments

check_arguments({}, {"type": "object"})  # imports jsonschema now, not in a timed example

SETTINGS = ("proxyUrl", "baseUrl", "models", "maxSteps", "timeoutMs", "instructions", "debug")

#: A value in one field of an otherwise whole record, or the whole record itself.
record = st.one_of(
    hostile_value,
    st.fixed_dictionaries({"version": st.just(1), "messages": hostile_value}),
    st.fixed_dictionaries(
        {"message": hostile_text(20), "stepsUsed": hostile_value, "trace": hostile_value}
    ),
)


@settings(max_examples=150)
@given(record)
def test_the_stored_visit_record_is_taken_or_refused_with_value_error(value: Any) -> None:
    for reader in (visit.check_conversation, visit.check_run, visit.page_of):
        with contextlib.suppress(ValueError):
            reader(value)


@settings(max_examples=150)
@given(st.dictionaries(st.sampled_from(SETTINGS), hostile_value, max_size=4))
def test_the_elements_settings_are_taken_or_refused_with_config_error(raw: dict[str, Any]) -> None:
    with contextlib.suppress(ConfigError):
        parse_config(raw)


@settings(max_examples=150)
@given(
    st.one_of(
        hostile_value,
        st.fixed_dictionaries({"tools": hostile_value, "cases": hostile_value}),
        st.lists(st.fixed_dictionaries({"messages": hostile_value, "expectedCall": hostile_value})),
    )
)
def test_eval_files_are_taken_or_refused_with_eval_set_error(data: Any) -> None:
    with contextlib.suppress(EvalSetError):
        load_eval_set(data)


@settings(max_examples=150)
@given(st.one_of(hostile_value, hostile_text(), st.fixed_dictionaries({"steps": hostile_value})))
def test_notebook_input_is_a_trace_or_a_value_error(value: Any) -> None:
    try:
        trace_of(value)
    except ValueError:
        return
    repr(TraceView(value))


@settings(max_examples=200)
@given(hostile_value, st.one_of(st.none(), st.just({"type": "object"})))
def test_any_arguments_are_checked_without_raising(arguments: Any, schema: Any) -> None:
    check_arguments(schema, arguments)


@pytest.mark.parametrize("make", [nested_list, nested_dict])
def test_deep_values_at_the_readers_raise_nothing_else(make: Any) -> None:
    deep = make(10_000)
    try:
        for reader in (visit.check_conversation, visit.check_run):
            with pytest.raises(ValueError):
                reader(deep)
        with pytest.raises(ConfigError):
            parse_config({"models": deep})
        with pytest.raises(EvalSetError):
            load_eval_set(deep)
        assert not check_arguments(None, {"a": deep}).ok
    finally:
        dismantle(deep)
