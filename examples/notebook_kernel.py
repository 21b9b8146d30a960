"""The notebook page's kernel: runs the cells a person types, in Pyodide on the page's main thread.

``notebook.js`` loads this file into the runtime that ``loader.js`` starts (the self-hosted
bundle), creates one :class:`Kernel` with :func:`create_kernel` and talks to it through a small
boundary, in the style of ``<site-agent>``'s controller:

JS -> Python (methods of the kernel; ``run_cell`` resolves to a JSON **string**)::

    run_cell(code) -> {"count": int, "ok": bool, "repr"?: str, "error"?: str}
    interrupt()    -> cancel the running cell (a pending confirmation counts as denied)

Python -> JS (the ``bridge`` object ``notebook.js`` passes in; strings only, no proxies)::

    bridge.write(stream, text)             # "stdout" | "stderr": below the running cell
    bridge.confirm(request_json, signal)   # -> Promise<boolean>: Allow/Deny buttons
    bridge.frame(html, title)              # a sandboxed iframe (srcdoc) below the cell

Cells run with ``pyodide.code.eval_code_async``: top-level ``await`` works and the value of a
last expression is shown (``Out[n]``). The namespace starts with the names in :data:`HELPERS`.
"""

from __future__ import annotations

import asyncio
import io
import json
import linecache
import sys
import traceback
from typing import Any

from pyodide.code import eval_code_async

import pysite_agent as sa
from pysite_agent import ffi
from pysite_agent.core.trace_view import render_trace_html
from pysite_agent.tools.declare import ToolRegistry, tool


class _Stream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr``: text goes below the running cell."""

    def __init__(self, kernel: Kernel, name: str) -> None:
        self._kernel = kernel
        self._name = name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self._kernel.write(self._name, str(text))
        return len(text)


class Kernel:
    """One notebook's Python state: the namespace and the running cell."""

    def __init__(self, bridge: Any) -> None:
        self._bridge = bridge
        self.count = 0
        self._task: asyncio.Future[Any] | None = None
        self.namespace: dict[str, Any] = {"__name__": "__main__", **self._helpers()}
        sys.stdout = _Stream(self, "stdout")
        sys.stderr = _Stream(self, "stderr")

    # ---- JS -> Python

    async def run_cell(self, code: str) -> str:
        """Run ``code`` in the notebook's namespace; see the module docstring for the reply."""
        self.count += 1
        count = self.count
        filename = f"<cell {count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        self._task = asyncio.ensure_future(
            eval_code_async(code, globals=self.namespace, filename=filename)
        )
        try:
            value = await self._task
        except asyncio.CancelledError:
            return json.dumps({"count": count, "ok": False, "error": "Interrupted."})
        except BaseException as exc:  # noqa: BLE001 - shown under the cell, like a REPL
            return json.dumps({"count": count, "ok": False, "error": _format_error(exc)})
        finally:
            self._task = None
        reply: dict[str, Any] = {"count": count, "ok": True}
        if value is not None:
            self.namespace["_"] = value
            reply["repr"] = repr(value)
        return json.dumps(reply)

    def interrupt(self) -> None:
        """Cancel the running cell, if any."""
        if self._task is not None:
            self._task.cancel()

    # ---- Python -> JS

    def write(self, stream: str, text: str) -> None:
        self._bridge.write(stream, text)

    # ---- the names a person starts with

    def _helpers(self) -> dict[str, Any]:
        from pysite_agent.models.chrome import chrome_built_in
        from pysite_agent.models.proxy import proxy

        return {
            "sa": sa,
            "tool": tool,
            "ToolRegistry": ToolRegistry,
            "create_site_agent": sa.create_site_agent,
            "demo_rules": sa.demo_rules,
            "custom": sa.custom,
            "first_available": sa.first_available,
            "chrome_model": chrome_built_in,
            "proxy_model": proxy,
            "confirm": self.confirm,
            "show_events": show_events,
            "show_trace": self.show_trace,
        }

    async def confirm(self, request: sa.ConfirmRequest) -> bool:
        """Ask with Allow/Deny buttons below the running cell; ``True`` only for Allow.

        Pass it as ``create_site_agent(..., confirm=confirm)``. When the run is aborted (or the
        cell interrupted) the buttons go away and the answer is ``False``.
        """
        payload = json.dumps(request.to_json(), ensure_ascii=False)
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(self._bridge)) as link:
            answer = await ffi.call_abortable(
                link, ffi.maybe_await(self._bridge.confirm(payload, link.signal))
            )
        return answer is True

    def show_trace(self, trace: Any = None, *, title: str = "pysite-agent run") -> None:
        """Show a trace as a timeline below the cell (in a sandboxed iframe).

        ``trace``: a ``RunResult``, an agent (its last run), an ``AgentRun`` (once done), the
        trace dict, or its JSON text.

        Raises:
            ValueError: there is no trace yet, or it is not a trace v1.
        """
        data = _trace_of(trace)
        self._bridge.frame(render_trace_html(data, title=title), title)


def _trace_of(value: Any) -> dict[str, Any]:
    if isinstance(value, sa.RunResult):
        return value.trace
    if isinstance(value, sa.SiteAgent):
        if value.last_trace is None:
            raise ValueError("this agent has not finished a run yet")
        return value.last_trace
    if isinstance(value, sa.AgentRun):
        if not value.done.done():
            raise ValueError("the run is not done yet: await run.done first")
        return value.done.result().trace
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError("show_trace() needs a RunResult, an agent, a run or a trace dict")
    return value


def _event_line(event: dict[str, Any]) -> str:
    kind = event.get("type", "?")
    if kind == "thinking":
        return f"thinking      step {event.get('step')} ({event.get('model')})"
    if kind == "tool-call":
        call = event["call"]
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
        return f"tool-call     {call.get('name')} {arguments}"
    if kind == "confirm-request":
        request = event["request"]
        return f"confirm       {request['call']['name']}? (reason: {request.get('reason')})"
    if kind == "confirm-result":
        decision = event["decision"]
        verdict = "allowed" if decision.get("allowed") else "denied"
        return f"decision      {verdict} by {decision.get('by')}"
    if kind == "tool-result":
        mark = " [error]" if event.get("isError") else ""
        return f"tool-result   {event['call'].get('name')}{mark}: {event.get('text')}"
    if kind == "answer":
        return f"answer        {event.get('text')}"
    if kind == "error":
        return f"error         {event.get('code')}: {event.get('message')}"
    if kind == "done":
        return f"done          {event['result'].get('status')}"
    return kind


def show_events(run: Any) -> None:
    """Print one line per event of an ``AgentRun`` (or a list of events)."""
    events = run.events if isinstance(run, sa.AgentRun) else list(run)
    for event in events:
        print(_event_line(event.to_json() if hasattr(event, "to_json") else event))


def _format_error(exc: BaseException) -> str:
    """The traceback from the first frame of a cell on (the kernel's own frames dropped)."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


def create_kernel(bridge: Any) -> Kernel:
    """The kernel for one notebook page; ``bridge`` is the JS object described above."""
    return Kernel(bridge)
