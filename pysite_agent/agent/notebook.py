"""A confirm for a kernel with no page: :func:`notebook_confirm` asks with ``input()``.

In a notebook (Jupyter's ipykernel, JupyterLite's Pyodide kernel) ``input()`` shows a text box
below the running cell; in a terminal it reads a line. Only an explicit yes allows: ``y`` or
``yes`` in any case, with spaces around it. Anything else denies: ``no``, an empty answer,
``true``, ``ok``, end of input (``EOFError``: no standard input, as under ``CI=true``) and an
interrupt while asked (``KeyboardInterrupt``: the notebook's Interrupt button). The run goes
on after a denial and the model is told the call was not run (README, rule 2: a strict
``True``).

Pass it as ``create_site_agent(..., confirm=notebook_confirm)``. ``ask_with(read_line)``
makes one that reads answers from another function (tests, a custom prompt).

Why not Allow/Deny buttons (``ipywidgets``): Jupyter's kernel takes one shell message at a
time, so a widget's click is handled only after the running cell ends, and a confirm that
waited for a click inside the run would wait for ever. ``input()`` is answered while the cell
runs, in Jupyter and in JupyterLite.
"""

from __future__ import annotations

from collections.abc import Callable

from pysite_agent.core.types import ConfirmRequest

#: The answers that allow (after ``strip().lower()``); every other answer denies.
YES = frozenset({"y", "yes"})

_REASONS = {
    "not-read-only": "it can change something, so it asks first",
    "annotations-unknown": "the tool does not say whether it changes anything",
    "after-untrusted": "untrusted content was read in this conversation",
    "consequential": "the tool marks it as consequential",
}


def is_yes(answer: object) -> bool:
    """True only for a ``str`` that is ``y`` or ``yes`` (any case, spaces around ignored)."""
    return isinstance(answer, str) and answer.strip().lower() in YES


def prompt_text(request: ConfirmRequest) -> str:
    """What the visitor reads: the tool, why it asks, each argument line, then the question."""
    title = request.tool.title or request.call.name
    why = _REASONS.get(str(request.reason), str(request.reason))
    lines = [f"pysite-agent asks: allow {title} ({request.call.name})? ({why})"]
    if request.tool.description:
        lines.append(f"  {request.tool.description.strip().splitlines()[0]}")
    lines.extend(f"  {line.label}: {line.value}" for line in request.lines)
    lines.append("Type yes to allow; anything else denies: ")
    return "\n".join(lines)


def ask_with(read_line: Callable[[str], str]) -> Callable[[ConfirmRequest], bool]:
    """A confirm that asks ``read_line(prompt)`` (like ``input``) and allows only a yes.

    ``EOFError`` and ``KeyboardInterrupt`` from ``read_line`` deny; any other exception
    propagates (and the agent's policy denies the call: a confirm that raises never allows).
    """

    def confirm(request: ConfirmRequest) -> bool:
        try:
            answer = read_line(prompt_text(request))
        except (EOFError, KeyboardInterrupt):
            return False
        return is_yes(answer)

    return confirm


def notebook_confirm(request: ConfirmRequest) -> bool:
    """Ask below the running cell with ``input()``; ``True`` only for an explicit yes.

    See the module docstring for what allows and what denies.
    """
    return ask_with(input)(request)
