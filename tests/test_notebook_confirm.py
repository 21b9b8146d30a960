"""The notebook confirm: only an explicit yes allows (README, rule 3: a strict ``True``)."""

from __future__ import annotations

import builtins
import io
from collections.abc import Callable

import pytest
from aio import run
from helpers import ScriptedModel, Shop, answer, ask, tool_call

import pysite_agent as sa
from pysite_agent.agent.notebook import ask_with, is_yes


class Interrupted(Exception):
    pass


def reader(answer_or_error: object, prompts: list[str]) -> Callable[[str], str]:
    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        if isinstance(answer_or_error, BaseException):
            raise answer_or_error
        return answer_or_error  # type: ignore[return-value]

    return read_line


def run_with(confirm: Callable[[sa.ConfirmRequest], bool]) -> tuple[Shop, sa.RunResult, list]:
    shop = Shop()
    model = ScriptedModel([tool_call("add_to_cart", {"product": "mug", "quantity": 2}), answer()])
    agent = sa.create_site_agent(model=model, tools=shop.tools(), confirm=confirm)
    events, result = run(ask(agent, "add two mugs"))
    return shop, result, events


ALLOWING = ["y", "yes", "YES ", " Y", "\tyes\n", "Yes"]
DENYING = ["no", "", " ", "n", "true", "True", "1", "ok", "yes please", "yess", "oui", "y e s"]


@pytest.mark.parametrize("text", ALLOWING)
def test_an_explicit_yes_allows_and_the_tool_runs(text: str) -> None:
    prompts: list[str] = []
    shop, result, events = run_with(ask_with(reader(text, prompts)))
    assert shop.cart == {"mug": 2}
    decisions = [s for s in result.trace["steps"] if s["kind"] == "decision"]
    assert [(d["allowed"], d["by"]) for d in decisions] == [(True, "visitor")]
    assert len(prompts) == 1


@pytest.mark.parametrize("text", DENYING)
def test_anything_else_denies_and_nothing_runs(text: str) -> None:
    shop, result, _ = run_with(ask_with(reader(text, [])))
    assert shop.cart == {}
    decisions = [s for s in result.trace["steps"] if s["kind"] == "decision"]
    assert [(d["allowed"], d["by"]) for d in decisions] == [(False, "visitor")]


@pytest.mark.parametrize("error", [EOFError(), KeyboardInterrupt()])
def test_end_of_input_and_an_interrupt_deny(error: BaseException) -> None:
    shop, result, _ = run_with(ask_with(reader(error, [])))
    assert shop.cart == {}
    assert result.status == "answered"  # the run goes on: the model hears of the denial
    tool_results = [s for s in result.trace["steps"] if s["kind"] == "tool-result"]
    assert tool_results == []


def test_a_reader_that_fails_otherwise_denies_too() -> None:
    shop, _, _ = run_with(ask_with(reader(Interrupted("boom"), [])))
    assert shop.cart == {}


@pytest.mark.parametrize("value", [True, 1, b"yes", None, ["yes"]])
def test_is_yes_takes_only_text(value: object) -> None:
    assert is_yes(value) is False


def test_the_prompt_names_the_tool_why_and_each_argument() -> None:
    prompts: list[str] = []
    run_with(ask_with(reader("no", prompts)))
    (prompt,) = prompts
    lines = prompt.splitlines()
    assert lines[0].startswith("pysite-agent asks: allow ") and "(add_to_cart)?" in lines[0]
    assert "it can change something" in lines[0]
    assert any("mug" in line for line in lines[1:-1]) and any("2" in line for line in lines[1:-1])
    assert lines[-1] == "Type yes to allow; anything else denies: "


@pytest.mark.parametrize(("typed", "cart"), [("yes", {"mug": 2}), ("no", {})])
def test_notebook_confirm_asks_with_input(
    monkeypatch: pytest.MonkeyPatch, typed: str, cart: dict[str, int]
) -> None:
    prompts: list[str] = []
    monkeypatch.setattr(builtins, "input", reader(typed, prompts))
    shop, _, _ = run_with(sa.notebook_confirm)
    assert shop.cart == cart and len(prompts) == 1


def test_notebook_confirm_without_standard_input_denies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # input() meets the end of input
    shop, _, _ = run_with(sa.notebook_confirm)
    assert shop.cart == {}
