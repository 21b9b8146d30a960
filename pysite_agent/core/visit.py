"""A conversation that lasts the visit: the state that crosses pages, checked when read
(docs/element.md, "Across pages").

Two JSON shapes, both plain data that can cross any channel (a worker's ``postMessage``, the
element's ``sessionStorage`` record):

- the **conversation state** ``{"version": 1, "messages": [...], "afterUntrusted": bool}``:
  protocol v1 messages and the safety state that belongs with them (README rule 5). It is
  taken whole or not at all: a conversation never comes back without its untrusted-output
  state;
- the **run state** of a run that a page change interrupted: ``{"message": str, "stepsUsed":
  int, "trace": trace v1 so far, "pendingCall": {"id", "name", "arguments"} | null,
  "cause": "navigated" | null}``; ``pendingCall`` is the call that was running (or waiting for
  the visitor, then ``cause`` is ``"navigated"``) when the page went away.

A page is ``{"origin", "path"}`` only: query strings and fragments may hold tokens and never go
into the trace or to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from pysite_agent.core.fencing import FENCE_TAG
from pysite_agent.core.wire import problems

STATE_VERSION: Final = 1
"""The version of the conversation state (and of the element's stored record)."""


def page_of(url_or_page: Any) -> dict[str, str]:
    """``{"origin", "path"}`` from a URL string or a mapping with ``origin`` and ``path``;
    any query or fragment is dropped.

    Raises:
        ValueError: not an absolute ``http(s)`` URL, or a mapping without string fields.
    """
    if isinstance(url_or_page, Mapping):
        origin, path = url_or_page.get("origin"), url_or_page.get("path")
        if not isinstance(origin, str) or not isinstance(path, str):
            raise ValueError("a page needs string 'origin' and 'path'")
        url = origin + (path if path.startswith("/") else "/" + path)
    elif isinstance(url_or_page, str):
        url = url_or_page
    else:
        raise ValueError("a page is a URL or {origin, path}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        raise ValueError(f"not a page address: {url[:100]!r}")
    return {"origin": f"{parts.scheme}://{parts.netloc.lower()}", "path": parts.path or "/"}


def check_conversation(state: Any) -> tuple[list[dict[str, Any]], bool]:
    """The messages and the untrusted-output state of a conversation state.

    The state follows from the messages (README, rule 5): it is ``True`` when any tool result
    is untrusted (``"untrusted": true``, or its content in the ``untrusted-data`` fence),
    whatever ``afterUntrusted`` says; the flag can only add caution, never remove it.

    Raises:
        ValueError: the state is not version 1, a message does not match protocol v1's
            message shapes, a tool call is not followed by its result (or a result has no
            call), or ``afterUntrusted`` is not a boolean; nothing is taken then.
    """
    if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
        raise ValueError("not a version 1 conversation state")
    messages, flag = state.get("messages"), state.get("afterUntrusted")
    if not isinstance(flag, bool):
        raise ValueError("the conversation state has no afterUntrusted flag")
    if not isinstance(messages, list):
        raise ValueError("the conversation state's messages are not a list")
    out: list[dict[str, Any]] = []
    open_id: str | None = None
    for i, message in enumerate(messages):
        found = problems("protocol-v1", message, "message")
        if found:
            raise ValueError(f"message {i}: {found[0]}")
        if open_id is not None and message.get("toolCallId") != open_id:
            raise ValueError(f"message {i}: a tool call without its result")
        if message.get("role") == "tool" and open_id is None:
            raise ValueError(f"message {i}: a tool result without its call")
        call = message.get("toolCall")
        open_id = call["id"] if isinstance(call, Mapping) else None
        out.append(dict(message))
    if open_id is not None:
        raise ValueError("the last tool call has no result")
    return out, flag or any(_untrusted(message) for message in out)


def _untrusted(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is an untrusted tool result: marked ``untrusted``, or fenced."""
    if message.get("role") != "tool":
        return False
    content = message.get("content")
    fenced = isinstance(content, str) and content.lstrip().startswith(f"<{FENCE_TAG} ")
    return message.get("untrusted") is True or fenced


def check_run(run: Any) -> dict[str, Any]:
    """A run state (module docstring), checked.

    Raises:
        ValueError: a field is missing or of the wrong type, or the trace fails trace v1.
    """
    if not isinstance(run, Mapping):
        raise ValueError("a run state is an object")
    message, steps, trace = run.get("message"), run.get("stepsUsed"), run.get("trace")
    if not isinstance(message, str):
        raise ValueError("a run state needs the visitor's 'message'")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError("a run state needs 'stepsUsed' (an integer >= 0)")
    found = problems("trace-v1", trace)
    if found:
        raise ValueError(f"the run's trace: {found[0]}")
    pending = run.get("pendingCall")
    if pending is not None and (
        not isinstance(pending, Mapping)
        or not isinstance(pending.get("id"), str)
        or not isinstance(pending.get("name"), str)
    ):
        raise ValueError("'pendingCall' must be {id, name, arguments} or null")
    cause = run.get("cause")
    if cause not in (None, "navigated"):
        raise ValueError("'cause' must be 'navigated' or null")
    return {
        "message": message,
        "stepsUsed": steps,
        "trace": trace,
        "pendingCall": None if pending is None else dict(pending),
        "cause": cause,
    }


RUN_ENDED_TEXT: Final = {
    "expired": "No page took the run up within {seconds} s, so it stopped.",
    "no-element": "The next page had no assistant, so the run stopped there.",
    "elsewhere": "The conversation moved on without this run, so it stopped.",
}
"""Why an interrupted run ended without being resumed (the trace's ``error`` message)."""

RESUME_DEADLINE_S: Final = 30
"""An interrupted run is taken up only by a page that reads it within this many seconds of
the page change; later, it ends as ``aborted`` (docs/element.md, "Across pages")."""


def end_run(run: Any, why: str, at: str) -> dict[str, Any]:
    """The finished trace of an interrupted run that was not resumed: its steps, an ``error``
    step (``aborted``, with the reason from :data:`RUN_ENDED_TEXT`) and status ``aborted``.

    ``at`` is the time to record (ISO-8601 UTC). Raises ``ValueError`` for a bad run state.
    """
    checked = check_run(run)
    trace = dict(checked["trace"])
    message = RUN_ENDED_TEXT.get(why, RUN_ENDED_TEXT["elsewhere"]).format(seconds=RESUME_DEADLINE_S)
    trace["steps"] = [
        *trace["steps"],
        {"kind": "error", "at": at, "code": "aborted", "message": message},
    ]
    trace["status"] = "aborted"
    trace["endedAt"] = at
    return trace
