"""``eval CASES --url URL`` and ``--smoke``: the eval against a live page in headless Chromium.

The page's own WebMCP tools (``document.modelContext``: Chromium's own with ``--native``,
else the project's shim, which a page with ``loader.js`` installs) are listed and run through
Playwright, as the doctor does (:mod:`pysite_agent.cli.doctor`). Every case gets a fresh page
(a new browser context: no cookies or storage from the case before), as webmcp-evals'
browser and smoke runs do (GoogleChromeLabs/webmcp-tools, ``webmcp-evals/src/evaluator/``).

- **Live eval**: the model (demo rules, ``--proxy`` or ``--custom``, run here on CPython) sees
  the page's tools, and each call it makes runs on the page; the result goes back to the model
  and is judged against the case's ``result``. A tool that fails returns ``{"error": text}``
  to the model (as webmcp-evals does) and the trajectory goes on.
- **Smoke** (``--smoke``, no model): the expected calls themselves run in order (groups
  flattened in the author's order, optional calls left out), constraint values replaced by
  sample values (:func:`sample_value`); a case with no required call (one that expects an
  answer) is ``skipped`` (webmcp-evals refuses the whole file instead); a case passes when
  every call succeeds and its result matches the expected ``result``. A call that throws or
  reports a failure (``isError``, ``{"success": false}``, ``{"error": "..."}``, a text
  starting ``Error``), or whose result does not match, fails the case; a tool the page does
  not have (within 5 s) is an error; the case stops there.

Playwright's sync API cannot run inside an asyncio loop, so the eval's loop runs in a worker
thread and asks this (the caller's) thread to do each page operation.

Raises :class:`LivePageError` (one line) for a page that does not load, has no WebMCP tools,
or a Chromium that does not start.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlsplit

from pysite_agent.agent.eval_export import smoke_report
from pysite_agent.agent.eval_judge import Call, match_argument
from pysite_agent.agent.eval_report import CaseResult, EvalReport
from pysite_agent.agent.evals import (
    EvalCase,
    EvalSet,
    EvalSetError,
    PageError,
    leaves,
    load_eval_set,
    run_eval,
    tool_definitions,
)
from pysite_agent.cli.doctor import FLAGS, default_chromium
from pysite_agent.core.types import ModelAdapter

__all__ = [
    "LivePage",
    "LivePageError",
    "launched_browser",
    "run_live",
    "run_smoke",
    "sample_value",
]

_LIST = """async () => {
  const mc = document.modelContext;
  if (!mc || typeof mc.getTools !== 'function') return null;
  const plain = (v) => {
    if (v === undefined || v === null) return null;
    if (typeof v === 'string') { try { return JSON.parse(v); } catch { return null; } }
    try { return JSON.parse(JSON.stringify(v)); } catch { return null; }
  };
  const out = [];
  for (const t of await mc.getTools()) {
    out.push({ name: String(t.name), title: t.title ?? null,
      description: String(t.description ?? ''), inputSchema: plain(t.inputSchema),
      annotations: plain(t.annotations) });
  }
  return out;
}"""

_CALL = """async ([name, args, timeoutMs]) => {
  const mc = document.modelContext;
  if (!mc) return { ok: false, error: 'the page has no document.modelContext' };
  const tool = (await mc.getTools()).find((t) => String(t.name) === name);
  if (!tool) return { ok: false, missing: true, error: `tool "${name}" is not on the page` };
  let timer;
  // A form tool without toolautosubmit waits for the visitor to submit: after a second it
  // counts as "pending form submission" (as webmcp-evals' browser runs have it).
  const form = [...document.querySelectorAll('form[toolname]')]
    .find((f) => f.getAttribute('toolname') === name);
  const waits = form !== undefined && !form.hasAttribute('toolautosubmit');
  const slow = new Promise((resolve) => {
    const late = () => resolve(waits
      ? { ok: true, result: 'pending form submission' }
      : { ok: false, error: `no result in ${timeoutMs} ms` });
    timer = setTimeout(late, waits ? 1000 : timeoutMs);
  });
  const run = (async () => {
    try {
      const r = await mc.executeTool(tool, args);
      if (r === undefined || r === null) return { ok: true, result: null };
      if (typeof r === 'string') return { ok: true, result: r };
      return { ok: true, result: JSON.parse(JSON.stringify(r)) };
    } catch (e) {
      return { ok: false, error: String((e && e.message) || e) };
    }
  })();
  try { return await Promise.race([run, slow]); } finally { clearTimeout(timer); }
}"""


class LivePageError(RuntimeError):
    """The page cannot be evaluated: it does not load, has no tools, or no browser starts."""


@contextmanager
def launched_browser(*, native: bool = False, chromium: str | None = None) -> Iterator[Any]:
    """Headless Chromium through Playwright's sync API (``native``: Chromium's own WebMCP).

    Raises:
        LivePageError: Playwright is not installed or Chromium does not start.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise LivePageError(
            "a live page needs Playwright: pip install 'pysite-agent[doctor]'"
        ) from None
    executable = chromium or default_chromium()
    args = FLAGS + (["--enable-features=WebMCP"] if native else [])
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=executable, headless=True, args=args)
        except Exception as exc:  # noqa: BLE001 - one readable line
            raise LivePageError(
                f"Chromium did not start ({executable or 'Playwright'}): {exc}"
            ) from None
        try:
            yield browser
        finally:
            browser.close()


class LivePage:
    """One fresh page at ``url`` in ``browser`` (a Playwright sync ``Browser``), its tools
    listed once they appear (within ``wait_ms``), calls run with ``call_timeout_ms`` each."""

    def __init__(
        self, browser: Any, url: str, *, wait_ms: int = 5000, call_timeout_ms: int = 30_000
    ) -> None:
        self.browser, self.url = browser, url
        self.wait_ms, self.call_timeout_ms = wait_ms, call_timeout_ms
        self.context: Any = None
        self.page: Any = None

    def open(self) -> list[dict[str, Any]]:
        """Loads the page and returns its tools ``[{name, title, description, inputSchema,
        annotations}]``.

        Raises:
            LivePageError: not an http(s) URL, the page does not load (or answers an error
                status), or no tool appears within ``wait_ms``.
        """
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise LivePageError(f"could not load {self.url}: only http(s) pages are evaluated")
        self.close()
        self.context = self.browser.new_context()
        self.page = self.context.new_page()
        try:
            response = self.page.goto(self.url, wait_until="load", timeout=30_000)
        except Exception as exc:  # noqa: BLE001 - one readable line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise LivePageError(f"could not load {self.url}: {first}") from None
        if response is not None and not response.ok:
            raise LivePageError(f"could not load {self.url}: HTTP {response.status}")
        deadline = time.monotonic() + self.wait_ms / 1000
        while True:
            try:
                tools = self.tools()
            except PageError as exc:
                raise LivePageError(f"{self.url}: {exc}") from None
            if tools or time.monotonic() >= deadline:
                break
            self.page.wait_for_timeout(100)
        if tools is None:
            raise LivePageError(f"{self.url} has no document.modelContext (no WebMCP, no shim)")
        if not tools:
            raise LivePageError(f"{self.url} registered no WebMCP tools in {self.wait_ms} ms")
        return tools

    def tools(self) -> list[dict[str, Any]] | None:
        """The page's tools now (``None``: the page has no ``document.modelContext``); while
        the page moves to another document, those of the next one.

        Raises:
            PageError: the page cannot be read (it crashed, or keeps navigating).
        """
        for attempt in range(3):
            try:
                listed: list[dict[str, Any]] | None = self.page.evaluate(_LIST)
                return listed
            except Exception as exc:  # noqa: BLE001 - one readable line
                first = _first_line(exc)
                if "navigat" not in first or attempt == 2:
                    raise PageError(f"the page's tools could not be listed: {first}") from None
                with suppress(Exception):  # a page that is gone fails the next attempt
                    self.page.wait_for_load_state("load", timeout=30_000)
        return None  # pragma: no cover - the loop returns or raises

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Runs a tool: ``{"ok": True, "result"}`` (a text that holds JSON read as that JSON;
        an MCP ``content`` result as its first text), else ``{"ok": False, "error",
        "missing"?}``; a tool that reports a failure is ``ok: False`` too. A ``<form toolname>``
        tool without ``toolautosubmit`` that has no result after a second (it waits for the
        visitor) returns ``"pending form submission"``, as webmcp-evals does. A call that takes
        the page to another document is ``{"ok": True, "result": None, "navigated": URL}``
        once that document has loaded (its result is lost with the old document)."""
        try:
            out: dict[str, Any] = self.page.evaluate(
                _CALL, [name, dict(arguments), self.call_timeout_ms]
            )
        except Exception as exc:  # noqa: BLE001 - the page went away, navigated or crashed
            first = _first_line(exc)
            if "navigat" not in first:
                return {"ok": False, "error": f"the page failed: {first}"}
            # The call took the page to another document (a form tool's submission, a link):
            # it ran; its result, if any, belonged to the document that is gone.
            with suppress(Exception):  # a page that is gone fails the next call
                self.page.wait_for_load_state("load", timeout=30_000)
            return {"ok": True, "result": None, "navigated": self.page.url}
        if not out.get("ok"):
            return out
        result = _normalized(out.get("result"))
        failure = _reported_failure(result)
        if failure is not None:
            return {"ok": False, "error": failure, "result": result}
        return {"ok": True, "result": result}

    def close(self) -> None:
        if self.context is not None:
            try:
                self.context.close()
            finally:
                self.context = self.page = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _normalized(result: Any) -> Any:
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return result
    if isinstance(result, dict) and isinstance(result.get("content"), list) and result["content"]:
        first = result["content"][0]
        if isinstance(first, dict) and isinstance(first.get("text"), str):
            return (
                {"isError": True, "error": first["text"]}
                if result.get("isError")
                else first["text"]
            )
    return result


def _reported_failure(result: Any) -> str | None:
    if isinstance(result, str):
        failed = re.match(r"(?i)error[:\s]", result.strip())
        return f"the tool reported a failure: {result.strip()}" if failed else None
    if isinstance(result, dict) and (
        result.get("success") is False
        or result.get("isError") is True
        or isinstance(result.get("error"), str)
    ):
        detail = result.get("error") or result.get("message") or json.dumps(result)
        return f"the tool reported a failure: {detail}"
    return None


# -- the eval thread -------------------------------------------------------------------------


class _Pump:
    """Runs a coroutine in a worker thread; page operations it asks for run in this thread."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()

    async def on_page(self, job: Callable[[], Any]) -> Any:
        future: Future[Any] = Future()
        self.jobs.put((job, future))
        return await asyncio.wrap_future(future)

    def run(self, make: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}

        def worker() -> None:
            try:
                box["value"] = asyncio.run(make())
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                box["error"] = exc
            finally:
                self.jobs.put(None)

        thread = threading.Thread(target=worker, name="eval-loop", daemon=True)
        thread.start()
        while (item := self.jobs.get()) is not None:
            job, future = item
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - raised in the eval's loop
                future.set_exception(exc)
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]


def _without_tools(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: v for k, v in data.items() if k != "tools"}
    return data


def run_live(
    browser: Any,
    url: str,
    data: Any,
    model: ModelAdapter,
    *,
    instructions: str | None = None,
    max_steps: int = 6,
    wait_ms: int = 5000,
    call_timeout_ms: int = 30_000,
) -> EvalReport:
    """The eval of ``data`` (eval set v1 JSON) with ``model`` against the tools of ``url``.

    The page's tools stand for the set's (a set-level ``tools`` is ignored), listed again
    before every model request (a page may register tools as it goes); each case gets a
    fresh page. Raises :class:`LivePageError` (the first page does not load or has no tools)
    and :class:`~pysite_agent.agent.evals.EvalSetError` (the set is not eval set v1).
    """
    page = LivePage(browser, url, wait_ms=wait_ms, call_timeout_ms=call_timeout_ms)
    try:
        eval_set = load_eval_set(_without_tools(data), tools=page.open(), check_tools=False)
        pump = _Pump()

        async def execute(name: str, arguments: dict[str, Any]) -> Any:
            out = await pump.on_page(lambda: page.call(name, arguments))
            return out["result"] if out["ok"] else {"error": out["error"]}

        async def list_tools() -> tuple[dict[str, Any], ...]:
            return tool_definitions(await pump.on_page(lambda: page.tools() or []))

        async def each_case() -> list[CaseResult]:
            results: list[CaseResult] = []
            for index, case in enumerate(eval_set.cases):
                if index:
                    await pump.on_page(page.open)  # a fresh page for every case
                one = EvalSet((case,), eval_set.instructions)
                report = await run_eval(
                    one,
                    model,
                    instructions=instructions,
                    max_steps=max_steps,
                    execute=execute,
                    list_tools=list_tools,
                )
                results += report.cases
            return results

        cases = pump.run(each_case)
    finally:
        page.close()
    return EvalReport(f"{getattr(model, 'name', 'model')} on {url}", cases)


# -- smoke -----------------------------------------------------------------------------------


def sample_value(key: str, expected: Any) -> Any:
    """A concrete value that satisfies ``expected`` (a value, or a constraint object with
    ``$contains``, ``$gt``/``$gte``/``$lt``/``$lte``, ``$type``, ``$any`` or ``$pattern``),
    recursively through objects and arrays. ``$type: "string"`` for a key with ``date`` in
    its name is tomorrow's ISO date (as webmcp-evals' smoke run does).

    Raises:
        EvalSetError: no sample could be made (a ``$pattern`` this cannot satisfy, or
            constraints that contradict each other); give a concrete value instead.
    """
    if isinstance(expected, list):
        return [sample_value(key, item) for item in expected]
    if not isinstance(expected, dict):
        return expected
    if not expected or not all(k.startswith("$") for k in expected):
        return {k: sample_value(k, v) for k, v in expected.items()}
    value = _candidate(key, expected)
    if not match_argument(expected, value):
        raise EvalSetError(
            f"{key}: no sample value satisfies {json.dumps(expected)}; give a concrete value"
        )
    return value


def _candidate(key: str, constraint: Mapping[str, Any]) -> Any:
    if "$contains" in constraint:
        return str(constraint["$contains"])
    if "$pattern" in constraint:
        return _pattern_sample(str(constraint["$pattern"]))
    bounds = [constraint.get(k) for k in ("$gte", "$lte", "$gt", "$lt")]
    if any(b is not None for b in bounds):
        low, high, above, below = bounds
        if low is not None:
            return low
        if high is not None:
            return high
        if above is not None and below is not None:
            return (above + below) / 2
        if above is not None:
            return above + 1
        return float(str(below)) - 1
    kind = constraint.get("$type")
    if kind == "string" and "date" in key.lower():
        return (datetime.date.today() + datetime.timedelta(days=1)).isoformat()
    return {
        "string": "sample",
        "number": 1,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }.get(str(kind), "sample")


def _class_sample(found: re.Match[str]) -> str:
    body = found.group(1)
    if body.startswith("^"):
        return "a" if "a" not in body else "z"
    return body[1] if body.startswith("\\") and len(body) > 1 else body[:1] or "a"


def _pattern_sample(pattern: str) -> str:
    """A text for a simple ``$pattern`` (literals, ``.*``, ``\\d``, ``\\s``, classes,
    groups with ``|``, ``{n}``); :func:`sample_value` checks it matches."""
    text = re.sub(r"^\(\?[a-zA-Z]+\)", "", pattern)
    text = text.replace("^", "").replace("$", "") if "[^" not in text else text
    text = re.sub(r"\.[*+]\??", " ", text)
    text = re.sub(r"\\d", "1", text)
    text = re.sub(r"\\s", " ", text)
    text = re.sub(r"\[([^\]]*)\]", _class_sample, text)
    text = re.sub(r"\(\?:", "(", text)
    text = re.sub(r"\(([^()|]*)(\|[^()]*)?\)", r"\1", text)
    text = re.sub(r"(.)\{(\d+)(,\d*)?\}", lambda m: m.group(1) * int(m.group(2)), text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"[?*+]", "", text)
    return text.strip() or "sample"


def _steps(case: EvalCase) -> list[tuple[Call, dict[str, Any]]]:
    steps = []
    for call in leaves(case.expected):
        if call.optional:
            continue
        if not isinstance(call.arguments, dict):
            raise EvalSetError(
                f"case {case.name!r}: {call.name} needs an 'arguments' object to smoke-test"
            )
        steps.append((call, {k: sample_value(k, v) for k, v in call.arguments.items()}))
    return steps  # none: the case expects an answer (or only optional calls), skipped


def run_smoke(
    browser: Any,
    url: str,
    data: Any,
    *,
    wait_ms: int = 5000,
    call_timeout_ms: int = 30_000,
) -> dict[str, Any]:
    """Runs each case's expected calls on a fresh page at ``url``; the report's JSON
    (:func:`~pysite_agent.agent.eval_export.smoke_report`). Every case is checked for sample
    values before any page opens, so a bad case leaves no journey half run.

    Raises:
        LivePageError: the page does not load or has no tools.
        EvalSetError: a case cannot be smoke-tested (a required call without an arguments
            object, no sample for a constraint). A tool the page lacks when its step comes
            (after 5 s of waiting) is that case's ``error``.
    """
    page = LivePage(browser, url, wait_ms=wait_ms, call_timeout_ms=call_timeout_ms)
    try:
        eval_set = load_eval_set(_without_tools(data), tools=page.open(), check_tools=False)
        plans = [(case, _steps(case)) for case in eval_set.cases]
        cases = []
        opened = True
        for case, steps in plans:
            if not steps:
                cases.append(_skipped(case))
                continue
            if not opened:
                page.open()
            cases.append(_smoke_case(page, case, steps))
            opened = False
    finally:
        page.close()
    return smoke_report(url, cases)


def _skipped(case: EvalCase) -> dict[str, Any]:
    problem = "no required call to run (the case expects an answer)"
    return {
        "name": case.name,
        "outcome": "skipped",
        "durationMs": 0.0,
        "steps": [],
        "trajectory": [],
        "problem": problem,
    }


def _smoke_case(
    page: LivePage, case: EvalCase, steps: list[tuple[Call, dict[str, Any]]]
) -> dict[str, Any]:
    started = time.monotonic()
    trajectory: list[dict[str, Any]] = []
    outcome, problem = "pass", ""
    for number, (call, arguments) in enumerate(steps, 1):
        out = page.call(call.name, arguments)
        for _ in range(50 if out.get("missing") else 0):  # a tool may register late
            page.page.wait_for_timeout(100)
            out = page.call(call.name, arguments)
            if not out.get("missing"):
                break
        entry = {"type": "tool", "name": call.name, "arguments": arguments}
        trajectory.append({**entry, "result": out.get("result", {"error": out.get("error")})})
        where = f"step {number} ({call.name})"
        if not out["ok"]:
            outcome = "error" if out.get("missing") else "fail"
            problem = f"{where}: {out['error']}"
            break
        if call.has_result and not match_argument(call.result, out["result"]):
            outcome = "fail"
            problem = f"{where}: the result does not match {json.dumps(call.result)}"
            break
    out_case: dict[str, Any] = {
        "name": case.name,
        "outcome": outcome,
        "durationMs": round((time.monotonic() - started) * 1000, 1),
        "steps": [],
        "trajectory": trajectory,
    }
    if problem:
        out_case["problem"] = problem
    return out_case
