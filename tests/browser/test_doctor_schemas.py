"""The page doctor agrees with the shim on schemas (both lanes): a tool the shim and Chromium
register is never an error that says it is refused.

- ``additionalProperties: true`` (or a schema) is a note, not an error, and the tool is listed
  and runs;
- a ``<form toolname>`` with date and email inputs, whose ``format`` Chromium writes itself
  (with ``--native``), gets no finding about ``format``;
- a keyword outside the subset written by the page (``patternProperties``) is a warning; an
  invalid ``pattern`` stays an error (the agent refuses every call to such a tool).
"""

from __future__ import annotations

from typing import Any

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>doctor and schemas</title></head>
<body>
<site-agent models="demo"></site-agent>
<form toolname="book_table" tooldescription="Requests a table reservation for a date.">
  <label>Date <input type="date" name="day" required></label>
  <label>Email <input type="email" name="mail"></label>
  <button>Request Reservation</button>
</form>
<script type="module">
  import '/loader.js';
  const mc = document.modelContext;
  const reg = (tool) => mc.registerTool({ execute: (a) => JSON.stringify(a), ...tool });
  await reg({ name: 'open_extras', description: 'Saves the visitor preferences, any keys.',
              annotations: { readOnlyHint: false },
              inputSchema: { type: 'object', properties: { theme: { type: 'string' } },
                             additionalProperties: true } });
  await reg({ name: 'typed_extras', description: 'Saves named counters for the visitor.',
              annotations: { readOnlyHint: false },
              inputSchema: { type: 'object', additionalProperties: { type: 'integer' } } });
  await reg({ name: 'by_pattern', description: 'Saves labels whose keys start with x-.',
              annotations: { readOnlyHint: false },
              inputSchema: { type: 'object', patternProperties: { '^x-': { type: 'string' } } } });
  await reg({ name: 'bad_pattern', description: 'Looks up an order by its reference code.',
              annotations: { readOnlyHint: true },
              inputSchema: { type: 'object',
                             properties: { ref: { type: 'string', pattern: '(' } } } });
  document.documentElement.dataset.ready = 'true';
</script>
</body></html>"""

PATH = "tests/browser/pages/doctor-schemas-inline.html"  # served by the route below only


def open_report(page: Any, http_server: Any) -> dict[str, Any]:
    url = http_server.url(PATH)
    page.route(url, lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE))
    page.goto(url)
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    report: dict[str, Any] = page.evaluate(
        "() => document.querySelector('site-agent').agent.doctor()"
    )
    return report


def test_what_the_shim_registers_is_never_an_error_that_it_is_refused(
    page: Any, http_server: Any, lane: str
) -> None:
    report = open_report(page, http_server)
    listed = {t["name"] for t in report["tools"]}
    assert {"open_extras", "typed_extras", "by_pattern", "bad_pattern", "book_table"} <= listed
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for f in report["findings"]:
        by_tool.setdefault(f["tool"], []).append(f)
    for f in report["findings"]:
        assert "refuses the tool" not in f["message"], f
        assert "refuses to register" not in f["message"], f
    for name in ("open_extras", "typed_extras"):
        subset = [f for f in by_tool.get(name, []) if f["code"] == "schema-subset"]
        assert subset and {f["severity"] for f in subset} == {"info"}, subset
        assert "register the tool" in subset[0]["message"]
    # The form's schema is the browser's own: nothing about 'format' (and no error at all).
    form = by_tool.get("book_table", [])
    assert not [f for f in form if "format" in f["message"]], form
    assert not [f for f in form if f["severity"] == "error"], form
    pattern_props = [f for f in by_tool["by_pattern"] if f["code"] == "schema-subset"]
    assert [f["severity"] for f in pattern_props] == ["warning"]
    bad = [f for f in by_tool["bad_pattern"] if f["code"] == "schema-subset"]
    assert [f["severity"] for f in bad] == ["error"]
    assert "refuses every call" in bad[0]["message"]
    # The shim registers and runs the tool the old rule called refused.
    ran = page.evaluate(
        """async () => {
            const mc = document.modelContext;
            const tool = (await mc.getTools()).find((t) => t.name === 'open_extras');
            return await mc.executeTool(tool, { theme: 'dark', extra: 1 });
        }"""
    )
    assert "extra" in ran
    if lane == "native":
        assert report["webmcp"] == "native"
        # Chromium wrote 'format' into the form's schema itself.
        schema = next(t for t in report["tools"] if t["name"] == "book_table")["inputSchema"]
        assert "format" in str(schema), schema
