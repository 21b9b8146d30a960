"""A trace v1 as a self-contained HTML timeline (no scripts, no external requests).

Shows the user message, each model reply with its duration, each call with its arguments and the
tool's hints, the decision and who made it, results (untrusted ones marked, errors marked, the
outcome: ran, threw, timeout, stale-tools, aborted), invalid calls with their problems, the answer
or the error. Every value from the trace is HTML-escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

_CSS = """
:root { color-scheme: light dark; --bg:#fff; --fg:#1f2328; --muted:#57606a; --line:#d0d7de;
  --surface:#f6f8fa; --ok:#1a7f37; --bad:#b42318; --warn:#9a6700; --accent:#0f766e; }
@media (prefers-color-scheme: dark) { :root { --bg:#0d1117; --fg:#e6edf3; --muted:#9198a1;
  --line:#30363d; --surface:#161b22; --ok:#3fb950; --bad:#f85149; --warn:#d29922;
  --accent:#2dd4bf; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, sans-serif; }
h1 { font-size: 18px; margin: 0 0 4px; }
.meta { color: var(--muted); margin-bottom: 16px; }
ol { list-style: none; margin: 0; padding: 0 0 0 18px; border-left: 2px solid var(--line); }
li { position: relative; margin: 0 0 12px; padding: 8px 12px; background: var(--surface);
  border: 1px solid var(--line); border-radius: 8px; }
li::before { content: ""; position: absolute; left: -25px; top: 14px; width: 10px; height: 10px;
  border-radius: 50%; background: var(--line); }
li.user::before, li.answer::before { background: var(--accent); }
li.denied::before, li.error::before, li.invalid::before, li.failed::before {
  background: var(--bad); }
li.allowed::before { background: var(--ok); }
li.untrusted { border-color: var(--warn); border-style: dashed; }
.kind { font-weight: 600; margin-right: 6px; }
.time { color: var(--muted); font-size: 12px; float: right; }
.badge { display: inline-block; font-size: 12px; padding: 0 6px; border-radius: 10px;
  border: 1px solid currentColor; margin-right: 4px; }
.muted { color: var(--muted); font-size: 12px; margin-right: 6px; }
.ok { color: var(--ok); } .bad { color: var(--bad); } .warn { color: var(--warn); }
pre { white-space: pre-wrap; word-break: break-word; margin: 6px 0 0; font: 12px/1.4 ui-monospace,
  monospace; background: var(--bg); padding: 6px 8px; border-radius: 6px;
  border: 1px solid var(--line); }
table { border-collapse: collapse; margin-top: 4px; }
td { padding: 1px 10px 1px 0; vertical-align: top; }
td:first-child { color: var(--muted); }
"""


def _ms(step: dict[str, Any]) -> str:
    value = step.get("durationMs")
    return f"{value:.1f} ms" if isinstance(value, int | float) else ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=repr)


def _row(key: str, value: str) -> str:
    return f"<tr><td>{escape(key)}</td><td>{escape(value)}</td></tr>"


def _badge(text: str, cls: str = "") -> str:
    return f'<span class="badge {cls}">{escape(text)}</span>'


def _args_table(arguments: Any) -> str:
    if not isinstance(arguments, dict) or not arguments:
        return f"<pre>{escape(_json(arguments))}</pre>"
    rows = "".join(
        _row(str(k), v if isinstance(v, str) else _json(v)) for k, v in arguments.items()
    )
    return f"<table>{rows}</table>"


def _hints(hints: Any) -> str:
    if hints is None:
        return '<span class="badge warn">no annotations</span>'
    if not isinstance(hints, dict):
        return ""
    labels = {
        "readOnlyHint": ("read-only", "ok"),
        "consequentialHint": ("consequential", "bad"),
        "untrustedContentHint": ("untrusted content", "warn"),
    }
    out = []
    for key, (label, cls) in labels.items():
        if hints.get(key) not in (None, False):
            out.append(f'<span class="badge {cls}">{label}</span>')
    return "".join(out)


def _step(step: dict[str, Any]) -> str:
    kind = str(step.get("kind", "?"))
    at = escape(str(step.get("at", "")))
    head = (
        f'<span class="time">{at} {escape(_ms(step))}</span>'
        f'<span class="kind">{escape(kind)}</span>'
    )
    if kind == "user":
        return f'<li class="user">{head}<pre>{escape(str(step.get("text", "")))}</pre></li>'
    if kind == "answer":
        source = step.get("fromCallId")
        note = (  # the run answered by itself from a call's result (agent/_repeats.py)
            f'<span class="muted">from the result of {escape(str(source))}</span>' if source else ""
        )
        return f'<li class="answer">{head}{note}<pre>{escape(str(step.get("text", "")))}</pre></li>'
    if kind == "model":
        reply = step.get("reply")
        what = ""
        if isinstance(reply, dict) and reply.get("type") == "tool":
            what = f"asks for {escape(str(reply.get('name')))}"
        elif isinstance(reply, dict) and reply.get("type") == "answer":
            what = "answers"
        return (
            f'<li class="model">{head}{escape(str(step.get("model", "")))} {what}'
            f" (step {escape(str(step.get('step', '')))})"
            f"<details><summary>reply</summary><pre>{escape(_json(reply))}</pre></details></li>"
        )
    if kind == "tool-call":
        call = as_dict(step.get("call"))
        tool = as_dict(step.get("tool"))
        return (
            f'<li class="call">{head}{escape(str(call.get("name", "")))} '
            f'<span class="muted">· {escape(str(call.get("id", "")))}</span> '
            f"{_hints(tool.get('hints'))}{_args_table(call.get('arguments'))}</li>"
        )
    if kind == "invalid-call":
        call = as_dict(step.get("call"))
        error = as_dict(step.get("error"))
        problems = "".join(
            _row(str(p.get("path") or "/"), str(p.get("message")))
            for p in as_list(error.get("problems"))
            if isinstance(p, dict)
        )
        cls = "" if error.get("code") == "already-done" else "bad"  # not run again: no fault
        return (
            f'<li class="invalid">{head}{_badge(str(error.get("code")), cls)}'
            f"{escape(str(call.get('name', '')))}: {escape(str(error.get('message', '')))}"
            f"{_args_table(call.get('arguments'))}<table>{problems}</table></li>"
        )
    if kind == "decision":
        allowed = step.get("allowed") is True
        cls, word = ("allowed", "allowed") if allowed else ("denied", "denied")
        reason = step.get("reason")
        why = f" (asked: {escape(str(reason))})" if reason else ""
        if step.get("cause"):
            why += f" · ended: {escape(str(step.get('cause')))}"
        badge = "ok" if allowed else "bad"
        return (
            f'<li class="{cls}">{head}<span class="badge {badge}">{word}</span>'
            f"by {escape(str(step.get('by')))}{why} · call {escape(str(step.get('callId')))}</li>"
        )
    if kind == "tool-result":
        classes = ["result"]
        badges = [f'<span class="badge">{escape(str(step.get("outcome")))}</span>']
        if step.get("untrusted"):
            classes.append("untrusted")
            badges.append('<span class="badge warn">untrusted</span>')
        if step.get("isError"):
            classes.append("failed")
            badges.append('<span class="badge bad">error</span>')
        if step.get("navigated"):
            badges.append('<span class="badge warn">navigated</span>')
        return (
            f'<li class="{" ".join(classes)}">{head}{escape(str(step.get("name", "")))} '
            f"{''.join(badges)}<pre>{escape(str(step.get('text', '')))}</pre></li>"
        )
    if kind == "trim":
        limits = [
            f"{key} {escape(str(step[key]))}"
            for key in ("maxMessages", "maxBodyBytes")
            if key in step
        ]
        notes = "; ".join(str(n) for n in step.get("notes") or [])
        return (
            f'<li class="trim">{head}step {escape(str(step.get("step", "")))}: '
            f"{escape(str(step.get('droppedMessages', 0)))} older messages left out, "
            f"{escape(str(step.get('shortenedResults', 0)))} results shortened, "
            f"{escape(str(step.get('sentMessages', 0)))} sent "
            f'<span class="muted">({escape(str(step.get("reason", "")))}'
            f"{', ' + ', '.join(limits) if limits else ''})</span>"
            f"{'<pre>' + escape(notes) + '</pre>' if notes else ''}</li>"
        )
    if kind == "page":
        where = f"{step.get('origin', '')}{step.get('path', '')}"
        return f'<li class="page">{head}{escape(where)}</li>'
    if kind == "error":
        return (
            f'<li class="error">{head}{_badge(str(step.get("code")), "bad")}'
            f"{escape(str(step.get('message', '')))}</li>"
        )
    return f"<li>{head}<pre>{escape(_json(step))}</pre></li>"


def render_trace_html(trace: dict[str, Any], *, title: str = "pysite-agent run") -> str:
    """The trace as one HTML document (a ``str``), with inline CSS and no scripts.

    Raises:
        ValueError: ``trace`` is not a dict with a ``steps`` list.
    """
    if not isinstance(trace, dict) or not isinstance(trace.get("steps"), list):
        raise ValueError("not a trace: expected an object with a 'steps' list")
    steps = trace["steps"]
    durations = [
        s.get("durationMs", 0) for s in steps if isinstance(s, dict) and s.get("kind") == "model"
    ]
    tool_ms = [
        s.get("durationMs", 0)
        for s in steps
        if isinstance(s, dict) and s.get("kind") == "tool-result"
    ]
    meta = (
        f"model {escape(str(trace.get('model', '')))} · status "
        f"<strong>{escape(str(trace.get('status', '')))}</strong> · "
        f"{escape(str(trace.get('startedAt', '')))} → {escape(str(trace.get('endedAt', '')))} · "
        f"model {sum(d for d in durations if isinstance(d, int | float)):.1f} ms, "
        f"tools {sum(d for d in tool_ms if isinstance(d, int | float)):.1f} ms"
    )
    items = "\n".join(_step(s) for s in steps if isinstance(s, dict))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
        f'<body><h1>{escape(title)}</h1><div class="meta">{meta}</div>\n<ol>\n{items}\n</ol>'
        "</body></html>\n"
    )


#: The frame's height in CSS pixels: a base plus a share per row, at most :data:`MAX_HEIGHT`
#: (the frame cannot size itself: it runs no script); it scrolls beyond that.
BASE_HEIGHT = 110
ROW_HEIGHT = 58
MAX_HEIGHT = 720
_FRAME_STYLE = "width:100%;border:1px solid #d0d7de;border-radius:8px;background:#fff"


def frame(document: str, *, title: str, rows: int) -> str:
    """``document`` (a complete HTML document) in a sandboxed iframe, wrapped in a ``<div>``."""
    height = min(MAX_HEIGHT, BASE_HEIGHT + ROW_HEIGHT * max(rows, 1))
    return (
        '<div class="pysite-agent-view">'
        f'<iframe sandbox="" title="{escape(title)}" srcdoc="{escape(document, quote=True)}" '
        f'style="{_FRAME_STYLE};height:{height}px"></iframe></div>'
    )


def shorten(value: Any, limit: int = 160) -> str:
    """``value`` (text, or JSON of anything else) on one line, at most ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list (for a trace file that is not well formed)."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one (a trace read as it is, never trusted)."""
    return value if isinstance(value, dict) else {}


def step_line(step: dict[str, Any]) -> str:
    """One line of plain text for a trace step."""
    kind = str(step.get("kind", "?"))
    if kind in ("user", "answer"):
        detail = shorten(step.get("text", ""))
        if kind == "answer" and step.get("fromCallId"):
            detail += f" (from the result of {step.get('fromCallId')})"
    elif kind == "model":
        reply = as_dict(step.get("reply"))
        what = f"asks for {reply.get('name')}" if reply.get("type") == "tool" else "answers"
        detail = f"{step.get('model', '')} {what} (step {step.get('step', '')})"
    elif kind in ("tool-call", "invalid-call"):
        call = as_dict(step.get("call"))
        detail = f"{call.get('name', '')} {shorten(call.get('arguments'))}"
        if kind == "invalid-call":
            error = as_dict(step.get("error"))
            detail += f": {error.get('code')}: {shorten(error.get('message', ''))}"
    elif kind == "decision":
        verdict = "allowed" if step.get("allowed") is True else "denied"
        detail = f"{verdict} by {step.get('by')}"
        if step.get("reason"):
            detail += f" (asked: {step.get('reason')})"
        if step.get("cause"):
            detail += f", ended: {step.get('cause')}"
    elif kind == "tool-result":
        marks = "".join(
            f" [{mark}]"
            for mark, key in (("untrusted", "untrusted"), ("error", "isError"))
            if step.get(key)
        )
        detail = f"{step.get('name', '')} {step.get('outcome', '')}{marks}: "
        detail += shorten(step.get("text", ""))
    elif kind == "error":
        detail = f"{step.get('code')}: {shorten(step.get('message', ''))}"
    else:
        rest = {k: v for k, v in step.items() if k not in ("kind", "at")}
        detail = shorten(rest)
    return f"{kind:<13} {detail}".rstrip()


def trace_text(trace: dict[str, Any]) -> str:
    """The trace as plain text: a head line, then one line per step."""
    steps = [s for s in trace.get("steps", []) if isinstance(s, dict)]
    head = f"trace v1 · model {trace.get('model', '')} · status {trace.get('status', '')}"
    return "\n".join([head, *(f"  {step_line(s)}" for s in steps)])
