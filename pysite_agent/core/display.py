"""How runs, events and traces show themselves in a notebook (Jupyter, JupyterLite).

IPython's rich display protocol: an object with ``_repr_html_()`` is shown as HTML, and its
``repr()`` is the plain-text form (a terminal, a text-only front end, ``print``). The HTML is
always one sandboxed ``<iframe>`` (``sandbox=""``: no scripts, an opaque origin) whose
``srcdoc`` is a complete document with every value from the run HTML-escaped, the way the trace
view (:mod:`pysite_agent.core.trace_view`) is shown on the project's notebook page. The frame
is wrapped in a ``<div>``: IPython warns about HTML that is just an ``<iframe>``, so
``IPython.display.HTML(obj._repr_html_())`` stays quiet too.

- :class:`TraceView`: a trace v1 (from a ``RunResult``, an agent, a finished run, the dict or
  its JSON text) as the timeline.
- :class:`EventLog`: a list of events (what ``AgentRun.events`` returns), one row each.
- ``RunResult`` shows itself the same way (its own ``_repr_html_`` and ``repr``).
- :func:`reveal`: invisible and text-direction characters made visible as ``⟦U+202E⟧``, for
  the confirmation card's lines (:mod:`pysite_agent.core.lines`); ``web/element/reveal.js``
  applies the same ranges in the transcript and on the card.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from pysite_agent.core.events import AgentEvent, RunResult
from pysite_agent.core.text import map_strings

HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008),  # C0 controls, but tab, line feed and carriage return
    (0x000B, 0x000C),
    (0x000E, 0x001F),
    (0x007F, 0x009F),  # DEL and the C1 controls
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner, joiner; LRM, RLM
    (0x2028, 0x202E),  # line/paragraph separators; bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated formats
    (0x3164, 0x3164),  # Hangul filler
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation controls
    (0x1D173, 0x1D17A),  # musical symbol formatting controls
    (0xE0000, 0xE007F),  # tag characters
)
"""Code points that show nothing or reorder the text around them (Unicode bidi controls and
isolates, UAX #9 section 2; zero-width and other default-ignorable characters, Unicode
section 5.21; C0/C1 controls but tab and line breaks). ``"evil\u202egnp.exe"`` reads as
``evilexe.png`` in a browser; revealed it reads ``evil⟦U+202E⟧gnp.exe``. The same ranges are in
``web/element/reveal.js`` (tests/test_reveal_js.py checks that they agree)."""

_HIDDEN = re.compile(
    "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in HIDDEN_RANGES) + "]"
)


def reveal(text: str) -> str:
    """``text`` with each character of :data:`HIDDEN_RANGES` replaced by a visible marker,
    ``⟦U+XXXX⟧`` (four to six hex digits). Everything else is kept; the result holds no hidden
    character, so revealing twice changes nothing."""
    return _HIDDEN.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`HIDDEN_RANGES`."""
    return _HIDDEN.search(text) is not None


def _view() -> Any:
    """:mod:`pysite_agent.core.trace_view`, imported on first display (not at start-up, so
    a page that never shows a trace does not pay for it)."""
    from pysite_agent.core import trace_view

    return trace_view


def trace_of(value: Any) -> dict[str, Any]:
    """The trace v1 dict of a ``RunResult``, an agent (its latest finished run), a finished
    ``AgentRun``, a trace dict or its JSON text.

    Raises:
        ValueError: there is no trace yet, or ``value`` is none of these.
    """
    if isinstance(value, RunResult):
        return value.trace
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"not a trace: the text is not JSON ({exc})") from None
    if isinstance(value, dict):
        if not isinstance(value.get("steps"), list):
            raise ValueError("not a trace: expected an object with a 'steps' list")
        return value
    if hasattr(value, "last_trace"):  # a SiteAgent (the bridge layer; no import here)
        if value.last_trace is None:
            raise ValueError("this agent has not finished a run yet")
        return trace_of(value.last_trace)
    done = getattr(value, "done", None)
    if done is not None and hasattr(done, "result"):  # an AgentRun
        if not done.done():
            raise ValueError("the run is not done yet: await run.done first")
        return trace_of(done.result())
    raise ValueError(
        f"cannot show {type(value).__name__} as a trace: pass a RunResult, an agent, a "
        "finished run, a trace dict or its JSON text"
    )


class TraceView:
    """A trace shown as its timeline: HTML in a notebook, text in ``repr()``.

    ``TraceView(result)`` takes what :func:`trace_of` takes. ``html()`` is the whole timeline
    document (:func:`~pysite_agent.core.trace_view.render_trace_html`).

    Raises:
        ValueError: from :func:`trace_of`.
    """

    def __init__(self, trace: Any, *, title: str = "pysite-agent run") -> None:
        self.trace = trace_of(trace)
        self.title = title

    def _shown(self) -> dict[str, Any]:
        # Invisible and text-direction characters as ⟦U+…⟧ markers, as on the card.
        shown: dict[str, Any] = map_strings(self.trace, reveal)
        return shown

    def html(self) -> str:
        from pysite_agent.core.trace_view import render_trace_html

        return render_trace_html(self._shown(), title=self.title)

    def _repr_html_(self) -> str:
        from pysite_agent.core.trace_view import frame

        return frame(self.html(), title=self.title, rows=len(self.trace["steps"]))

    def __repr__(self) -> str:
        from pysite_agent.core.trace_view import trace_text

        return trace_text(self._shown())


def event_line(event: dict[str, Any]) -> str:
    """One line of plain text for an event's JSON form."""
    kind = str(event.get("type", "?"))
    call = _view().as_dict(event.get("call"))
    if kind == "thinking":
        detail = f"step {event.get('step')} ({event.get('model')})"
    elif kind == "tool-call":
        detail = f"{call.get('name')} {_view().shorten(call.get('arguments'))}"
    elif kind == "confirm-request":
        request = _view().as_dict(event.get("request"))
        asked = _view().as_dict(request.get("call"))
        detail = f"{asked.get('name')}? (reason: {request.get('reason')})"
    elif kind == "confirm-result":
        decision = _view().as_dict(event.get("decision"))
        verdict = "allowed" if decision.get("allowed") is True else "denied"
        detail = f"{verdict} by {decision.get('by')}"
    elif kind == "tool-result":
        mark = " [error]" if event.get("isError") else ""
        mark += " [untrusted]" if event.get("untrusted") else ""
        detail = f"{call.get('name')}{mark}: {_view().shorten(event.get('text', ''))}"
    elif kind in ("answer", "text-delta"):
        detail = _view().shorten(event.get("text", ""))
    elif kind == "error":
        detail = f"{event.get('code')}: {_view().shorten(event.get('message', ''))}"
    elif kind == "done":
        result = _view().as_dict(event.get("result"))
        detail = str(result.get("status"))
    else:
        detail = _view().shorten({k: v for k, v in event.items() if k != "type"})
    return f"{kind:<15} {detail}".rstrip()


_EVENTS_CSS = """
:root { color-scheme: light dark; }
body { margin: 0; padding: 12px 16px; font: 13px/1.45 system-ui, sans-serif; }
h1 { font-size: 15px; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; }
td { padding: 3px 10px 3px 0; vertical-align: top; border-top: 1px solid #d0d7de80; }
td:first-child { font-weight: 600; white-space: nowrap; }
.allowed { color: #1a7f37; } .denied, .error { color: #b42318; }
"""


def events_document(events: list[dict[str, Any]], *, title: str) -> str:
    """The events (JSON forms) as one HTML document, every value escaped, no scripts."""
    rows = []
    for event in events:
        kind = str(event.get("type", "?"))
        line = event_line(event)[15:].strip()
        cls = ""
        if kind == "confirm-result":
            cls = "allowed" if line.startswith("allowed") else "denied"
        elif kind == "error":
            cls = "error"
        rows.append(f'<tr class="{cls}"><td>{escape(kind)}</td><td>{escape(line)}</td></tr>')
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_EVENTS_CSS}</style></head>\n"
        f"<body><h1>{escape(title)}</h1><table>{''.join(rows)}</table></body></html>\n"
    )


def _event_json(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return event
    data = event.to_json()
    return data if isinstance(data, dict) else {"type": "?", "value": data}


class EventLog(list[AgentEvent]):
    """A run's events (a ``list``): one row per event as HTML in a notebook, one line per
    event in ``repr()``."""

    title = "pysite-agent events"

    def _repr_html_(self) -> str:
        from pysite_agent.core.trace_view import frame

        events = [_event_json(e) for e in self]
        return frame(
            events_document(events, title=self.title), title=self.title, rows=len(events) // 2
        )

    def __repr__(self) -> str:
        lines = [event_line(_event_json(e)) for e in self]
        return "\n".join([f"{len(lines)} events", *(f"  {line}" for line in lines)])
