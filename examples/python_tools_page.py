"""The task board's actions, in Python (``python-tools.html`` runs this file in Pyodide).

Each action is a function declared with ``@registry.tool``: its input schema comes from the type
hints, its description from the docstring. ``await registry.mount()`` registers them on
``document.modelContext``, where ``<site-agent>`` (and any other WebMCP client) finds them.
``finish_task`` and ``clear_board`` are offered only while the board has tasks; every call
through a mounted tool re-checks that, so they appear and disappear as the board changes.

All text reaches the page through ``textContent``.
"""

from typing import Literal

import js

from pysite_agent.tools.declare import ToolRegistry

Priority = Literal["low", "normal", "high"]

board: list[dict[str, str]] = []
registry = ToolRegistry()


def has_tasks() -> bool | str:
    return True if board else "The board has no tasks."


def render() -> None:
    """Show the board (text only, never HTML)."""
    document = js.document
    items = document.getElementById("tasks")
    items.replaceChildren()
    for task in board:
        item = document.createElement("li")
        suffix = "" if task["priority"] == "normal" else f" ({task['priority']} priority)"
        item.textContent = task["title"] + suffix
        item.dataset.priority = task["priority"]
        items.append(item)
    document.getElementById("count").textContent = str(len(board))
    document.getElementById("empty").hidden = bool(board)


def numbered() -> str:
    lines = [f"{i}. {t['title']} ({t['priority']})" for i, t in enumerate(board, 1)]
    return "\n".join(lines) if lines else "The board is empty."


@registry.tool(read_only=True, title="Show tasks")
def list_tasks() -> str:
    """Show the tasks on the board, with their numbers."""
    return numbered()


@registry.tool(title="Add a task")
def add_task(title: str, priority: Priority = "normal") -> str:
    """Put a new task on the board.

    Args:
        title: what is to be done, in a few words.
        priority: how urgent it is.
    """
    title = title.strip()
    if not title:
        raise ValueError("a task needs a title")
    board.append({"title": title, "priority": priority})
    render()
    return f"Added task {len(board)}: {title}"


@registry.tool(title="Finish a task", available=has_tasks)
def finish_task(number: int) -> str:
    """Mark a task as done by its number; it leaves the board.

    Args:
        number: the task's number, as list_tasks shows it (1 is the first).
    """
    if not 1 <= number <= len(board):
        raise IndexError(f"there is no task {number}; the board has {len(board)}")
    done = board.pop(number - 1)
    render()
    return f"Finished: {done['title']}"


@registry.tool(title="Clear the board", consequential=True, available=has_tasks)
def clear_board() -> str:
    """Remove every task at once."""
    count = len(board)
    board.clear()
    render()
    return f"Removed {count} tasks."


render()
mounted = await registry.mount()  # noqa: F704 - runPythonAsync allows top-level await
js.document.getElementById("status").textContent = (
    "Python is running. Tools on document.modelContext: " + ", ".join(mounted.names) + "."
)
js.document.documentElement.dataset.ready = "true"
