"""Where a start's time goes, from the element's performance marks (not a benchmark itself).

``web/runtime/boot.js`` marks each step of a start (``site-agent:boot:*``, documented on
``bootPython``; in worker mode the worker's marks are placed on the page's timeline by
``web/runtime/start.js``), the element marks ``open`` (the click), ``boot-start`` /
``boot-end`` (the page's side of the start) and ``ready``. ``READ_MARKS`` is the JavaScript
that reads them all in a page; ``breakdown`` turns them into the rows of the table in
``docs/performance.md``: each a duration in ms, or absent when that step did not happen (a
start from the memory snapshot has no ``CPython + stdlib`` row, a normal one no
``snapshot read``). Used by ``browser_ready.py`` and ``browser_engines.py``.
"""

from __future__ import annotations

from typing import Any

#: () => {marks: {name: startTime}, saved: detail of site-agent:snapshot-saved | null, origin}
READ_MARKS = """() => {
  const marks = {};
  for (const m of performance.getEntriesByType('mark')) {
    if (m.name.startsWith('site-agent:') && !(m.name.slice(11) in marks)) {
      marks[m.name.slice(11)] = m.startTime;
    }
  }
  const saved = performance.getEntriesByName('site-agent:snapshot-saved').at(-1)?.detail ?? null;
  const state = performance.getEntriesByName('site-agent:snapshot').at(-1)?.detail?.state ?? null;
  return { marks, saved, state, origin: performance.timeOrigin };
}"""

#: The rows, in the order of a start: (row, from mark, to mark).
STEPS: list[tuple[str, str, str]] = [
    ("worker + boot.js loaded", "boot-start", "boot:begin"),
    ("lock read", "boot:begin", "boot:lock"),
    ("Pyodide's scripts imported", "boot:begin", "boot:pyodide.mjs"),
    ("pyodide.asm.mjs imported", "boot:begin", "boot:asm.mjs"),
    ("stored snapshot read + checked", "boot:lock", "boot:snapshot-read"),
    (
        "fetch pyodide.asm.wasm",
        "boot:fetch:pyodide.asm.wasm:start",
        "boot:fetch:pyodide.asm.wasm:end",
    ),
    (
        "fetch python_stdlib.zip",
        "boot:fetch:python_stdlib.zip:start",
        "boot:fetch:python_stdlib.zip:end",
    ),
    ("wasm compile + instantiate", "boot:wasm:start", "boot:wasm:end"),
    ("CPython + stdlib start", "boot:wasm:end", "boot:emscripten"),
    ("Pyodide's Python set-up", "boot:emscripten", "boot:core"),
    ("scripts imported -> core up", "boot:pyodide.mjs", "boot:core"),
    ("wheels fetched (from begin)", "boot:begin", "boot:wheels"),
    ("packages placed / loaded", "boot:core", "boot:packages"),
    ("import pysite_agent", "boot:packages", "boot:import:pysite_agent"),
    (
        "import .browser.element",
        "boot:import:pysite_agent",
        "boot:import:pysite_agent.browser.element",
    ),
    (
        "import .browser.event_loop",
        "boot:import:pysite_agent.browser.element",
        "boot:import:pysite_agent.browser.event_loop",
    ),
    (
        "import .tools.model_context",
        "boot:import:pysite_agent.browser.event_loop",
        "boot:import:pysite_agent.tools.model_context",
    ),
    ("event loop installed", "boot:import:pysite_agent.tools.model_context", "boot:event-loop"),
    ("boot.js end -> page told", "boot:end", "boot-end"),
    ("agent set-up (boot-end -> ready)", "boot-end", "ready"),
    ("boot total (boot-start -> boot-end)", "boot-start", "boot-end"),
    ("click -> ready", "open", "ready"),
]


def breakdown(read: dict[str, Any]) -> dict[str, float]:
    """Durations (ms) of ``STEPS`` from one page's ``READ_MARKS``, plus the snapshot maker's
    (``maker: start after ready``, ``maker: run``, ``maker: read-back``) when it stored one."""
    marks: dict[str, float] = read["marks"]
    out = {row: marks[b] - marks[a] for row, a, b in STEPS if a in marks and b in marks}
    timing = (read.get("saved") or {}).get("timing")
    if timing and "ready" in marks and timing.get("end") is not None:
        ready_epoch = read["origin"] + marks["ready"]
        out["maker: start after ready"] = timing["start"] - ready_epoch
        if timing.get("stored") is not None:
            out["maker: run (start -> stored)"] = timing["stored"] - timing["start"]
            out["maker: read-back by the page"] = timing["end"] - timing["stored"]
    return out
