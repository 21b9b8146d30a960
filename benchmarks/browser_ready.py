"""From the click on the launcher to "ready", old and new in one run, with the main thread's
largest frame gap, Long Tasks, and the start-up path taken (memory snapshot or not).

Headless Chromium on loopback, the demo shop with demo rules, every file served with
``Cache-Control: max-age=3600`` (a hosted bundle). The clock starts at the click (the
element's ``site-agent:open`` mark) and stops at ``site-agent:ready`` (agent created, model
availability known). In the same run, each a median of ``--runs`` (default 5):

- ``new``: the bundle built from the working tree;
  (old and new take turns run by run, so a drifting load hits both alike)
- ``old``: the bundle built from ``--base`` (default: the commit before memory snapshots came,
  i.e. the parent of the first commit that added ``web/runtime/snapshot.js``), from ``git archive``
  into a temporary folder;

each in two states:

- ``cold``: a fresh browser context per run: empty HTTP cache, empty Cache Storage
  (a first visit; the new code takes a snapshot then, state ``made``);
- ``later``: the same context reloaded after a first visit (a later visit or another page of
  the site: warm HTTP cache; the new code starts from the stored snapshot, ``used``);

and, for scale, ``bare loadPyodide``: a page that only runs ``loadPyodide()`` from the same
bundle with a warm HTTP cache (the issue's yardstick: later visits should take <= 0.3x it).

``shipped`` answers "store it per origin, or ship it in the bundle?": the snapshot a first
visit made is saved as a file next to the bundle; a fresh context (empty HTTP cache) fetches it
and starts ``loadPyodide`` from it. It prints the snapshot's size, raw and gzipped.

``--leads 300,600,1000`` adds cold visits where the pointer comes within 60 px of the launcher
that many ms before the click (the visitor's reach for it): the new code starts the worker's
Python on that intent, the old one (with ``--base`` before that change) only prefetched.
``click -> ready`` is measured from the click either way.

``--no-old`` skips the old tree (a shorter run). Each new start's steps, from the element's
performance marks (``boot_marks.py``), are printed as a table, cold and later (medians).

Per run: ``total`` (click -> ready), boot phases from the marks, ``frame gap`` (the largest gap
between ``requestAnimationFrame`` callbacks from the click to ready: how long the page could
not paint), ``longest task`` and ``long tasks`` (Long Tasks API). The load average is printed
before and after.

Usage: python benchmarks/browser_ready.py [--runs 5] [--base REV] [--leads 300,600,1000] [--no-old]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import itertools
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from boot_marks import READ_MARKS, breakdown
from browser_common import REPO, TAKE_SNAPSHOT, bundle, chromium, median, save

from pysite_agent.cli.demo import DemoServer

OBSERVER = """
window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longtasks.push([e.startTime, e.duration]);
}).observe({ type: 'longtask', buffered: true });
window.__frames = [];
const __tick = (t) => { window.__frames.push(t); requestAnimationFrame(__tick); };
requestAnimationFrame(__tick);
"""

PHASES = [
    ("boot.js", "boot-start", "runtime:start"),
    ("Pyodide core", "runtime:start", "runtime:end"),
    ("packages", "packages:start", "packages:end"),
    ("import", "import:start", "import:end"),
    ("agent", "boot-end", "ready"),
    ("total", "open", "ready"),
]
KEYS = [name for name, _, _ in PHASES] + ["frame gap", "longest task", "long tasks"]

BARE = """async () => {
  const t0 = performance.now();
  const { loadPyodide } = await import('/pyodide/pyodide.mjs');
  const pyodide = await loadPyodide({ indexURL: new URL('/pyodide/', location.href).href });
  pyodide.runPython('1 + 1');
  return performance.now() - t0;
}"""

SHIPPED = """async () => {
  const t0 = performance.now();
  const [{ loadPyodide }, bytes] = await Promise.all([
    import('/pyodide/pyodide.mjs'),
    fetch('/shipped/snapshot.bin').then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b)),
  ]);
  const pyodide = await loadPyodide({
    indexURL: new URL('/pyodide/', location.href).href, _loadSnapshot: bytes });
  const ok = pyodide.runPython("import sys; 'pysite_agent' in sys.modules");
  return { ms: performance.now() - t0, ok };
}"""

EMPTY_PAGE = "<!doctype html><meta charset='utf-8'><title>bare</title><p>bare"


def base_commit() -> str:
    """The parent of the first commit that added web/runtime/snapshot.js."""
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "web/runtime/snapshot.js"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not added:
        raise SystemExit("no commit adds web/runtime/snapshot.js: pass --base")
    return f"{added[-1]}~1"


@contextmanager
def old_tree(rev: str) -> Iterator[tuple[Path, Path]]:
    """(bundle, examples) of ``rev``, built in a temporary folder with the same download cache."""
    with tempfile.TemporaryDirectory(prefix="pysite-old-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev], cwd=REPO, check=True, capture_output=True
        ).stdout
        archive_path = Path(tmp) / "src.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tf:
            tf.extractall(src, filter="data")
        out = Path(tmp) / "bundle"
        env = {**os.environ, "PYSITE_AGENT_CACHE_DIR": str(REPO / ".cache" / "pysite-agent")}
        subprocess.run(
            [sys.executable, "-m", "pysite_agent", "bundle", str(out)],
            cwd=src,
            env=env,
            check=True,
            capture_output=True,
        )
        yield out, src / "examples"


def one_load(page: Any, url: str, lead: int = 0) -> dict[str, Any]:
    page.mouse.move(0, 0)
    page.goto(url)
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_timeout(300)
    if lead:
        box = page.locator("site-agent >> .launcher").bounding_box()
        page.mouse.move(box["x"] - 60, box["y"] + 5, steps=3)  # near it: the visitor's intent
        page.wait_for_timeout(lead)
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "performance.getEntriesByName('site-agent:ready').length > 0", timeout=180_000
    )
    page.wait_for_timeout(50)  # one more frame after ready closes the last gap
    marks = dict(
        page.evaluate(
            """() => performance.getEntriesByType('mark')
                .filter((m) => m.name.startsWith('site-agent:'))
                .map((m) => [m.name.slice(11), m.startTime])"""
        )
    )
    out: dict[str, Any] = {
        name: marks[end] - marks[start] for name, start, end in PHASES if start in marks
    }
    opened, ready = marks["open"], marks["ready"]
    tasks = page.evaluate("window.__longtasks")
    inside = [d for s, d in tasks if opened <= s + d and s <= ready]
    out["longest task"] = max(inside, default=0.0)
    out["long tasks"] = float(len(inside))
    frames = page.evaluate("window.__frames")
    before = [t for t in frames if t <= opened][-1:]
    after = [t for t in frames if t > ready][:1]
    window = before + [t for t in frames if opened < t <= ready] + after
    out["frame gap"] = max((b - a for a, b in itertools.pairwise(window)), default=0.0)
    detail = page.evaluate(
        "performance.getEntriesByName('site-agent:snapshot').at(-1)?.detail?.state ?? null"
    )
    out["snapshot"] = detail or "-"
    out["parts"] = breakdown(page.evaluate(READ_MARKS))
    return out


def wait_saved(page: Any) -> None:
    """After a first visit by the new code: until its snapshot is stored (if one was made)."""
    page.wait_for_function(
        """() => {
        const made = performance.getEntriesByName('site-agent:snapshot').at(-1)?.detail?.made;
        return !made || performance.getEntriesByName('site-agent:snapshot-saved').length > 0;
    }""",
        timeout=60_000,
    )


def measure_sites(
    browser: Any, sites: dict[str, DemoServer], runs: int, leads: list[int]
) -> dict[str, Any]:
    """Cold (with each lead) and later visits of each site, the sites taking turns (so
    drifting load hits both alike). Cold visits without a lead wait until the first visit's
    snapshot is stored (the maker's timing), with a lead they do not."""
    results: dict[str, Any] = {
        name: {"cold": [], "later": [], **{f"cold lead {ms}": [] for ms in leads}} for name in sites
    }
    for _ in range(runs):
        for lead in [0, *leads]:
            for name, server in sites.items():
                context = browser.new_context()
                context.add_init_script(OBSERVER)
                page = context.new_page()
                sample = one_load(page, server.url, lead)
                if lead:
                    results[name][f"cold lead {lead}"].append(sample)
                else:
                    wait_saved(page)
                    sample["parts"] = breakdown(page.evaluate(READ_MARKS))
                    results[name]["cold"].append(sample)
                context.close()
    pages = {}
    for name, server in sites.items():
        context = browser.new_context()
        context.add_init_script(OBSERVER)
        page = context.new_page()
        one_load(page, server.url)  # the first visit: fills the HTTP cache (makes a snapshot)
        wait_saved(page)
        pages[name] = (context, page)
    for _ in range(runs):
        for name, server in sites.items():
            results[name]["later"].append(one_load(pages[name][1], server.url))
    results["new"]["snapshot_b64"] = [pages["new"][1].evaluate(TAKE_SNAPSHOT)]
    for context, _page in pages.values():
        context.close()
    return results


def measure_bare(browser: Any, server: DemoServer, runs: int) -> list[float]:
    context = browser.new_context()
    page = context.new_page()
    page.route(
        "**/bare.html",
        lambda route: route.fulfill(status=200, content_type="text/html", body=EMPTY_PAGE),
    )
    page.goto(server.url + "bare.html")
    page.evaluate(BARE)  # warm the HTTP cache
    out = []
    for _ in range(runs):
        page.goto(server.url + "bare.html")
        out.append(float(page.evaluate(BARE)))
    context.close()
    return out


def measure_shipped(browser: Any, server: DemoServer, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        context = browser.new_context()
        page = context.new_page()
        page.route(
            "**/bare.html",
            lambda route: route.fulfill(status=200, content_type="text/html", body=EMPTY_PAGE),
        )
        page.goto(server.url + "bare.html")
        result = page.evaluate(SHIPPED)
        assert result["ok"] is True, result
        out.append(float(result["ms"]))
        context.close()
    return out


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key in KEYS:
        values = [s[key] for s in samples if key in s]
        if values:
            row[key] = median(values)
    row["snapshot"] = sorted({s["snapshot"] for s in samples})
    rows = {r for s in samples for r in s.get("parts", {})}
    row["parts"] = {
        r: median([s["parts"][r] for s in samples if r in s["parts"]]) for r in sorted(rows)
    }
    return row


def print_parts(summary: dict[str, dict[str, Any]], columns: list[str]) -> None:
    """Where each start's time went (boot_marks.STEPS order), one column per row of summary."""
    from boot_marks import STEPS

    order = [row for row, _, _ in STEPS]
    rows = sorted(
        {r for c in columns for r in summary[c]["parts"]},
        key=lambda r: (order.index(r) if r in order else len(order), r),
    )
    print(f"{'step (ms)':36}" + "".join(f"{c:>16}" for c in columns))
    for r in rows:
        cells = [summary[c]["parts"].get(r) for c in columns]
        print(
            f"{r[:36]:36}"
            + "".join("{:>16}".format("-" if v is None else f"{v:.0f}") for v in cells)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", default=None, help="the old commit (default: see above)")
    parser.add_argument("--leads", default="", help="ms between intent and click, e.g. 300,1000")
    parser.add_argument("--no-old", action="store_true", help="measure the working tree only")
    args = parser.parse_args()
    leads = [int(v) for v in args.leads.split(",") if v.strip()]
    rev = args.base or base_commit()
    old_rev = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()
    load_before = os.getloadavg()
    new_bundle = bundle()
    summary: dict[str, dict[str, Any]] = {}
    samples: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="pysite-shipped-") as shipped_dir,
        nullcontext((new_bundle, REPO / "examples")) if args.no_old else old_tree(rev) as (
            old_bundle,
            old_examples,
        ),
        chromium() as browser,
    ):
        new_site = DemoServer(
            [Path(shipped_dir), new_bundle, REPO / "examples"],
            port=0,
            cache_control="max-age=3600",
        ).start()
        old_site = DemoServer(
            [old_bundle, old_examples], port=0, cache_control="max-age=3600"
        ).start()
        try:
            sites = {"new": new_site} if args.no_old else {"old": old_site, "new": new_site}
            both = measure_sites(browser, sites, args.runs, leads)
            old, new = both.get("old"), both["new"]
            bare = measure_bare(browser, new_site, args.runs)
            snapshot = base64.b64decode(new.pop("snapshot_b64")[0])
            (Path(shipped_dir) / "shipped").mkdir()
            (Path(shipped_dir) / "shipped" / "snapshot.bin").write_bytes(snapshot)
            shipped = measure_shipped(browser, new_site, args.runs)
        finally:
            new_site.stop()
            old_site.stop()
    for name, data in (("old", old), ("new", new)):
        if data is None:
            continue
        for state, runs_of in data.items():
            summary[f"{name} {state}"] = summarize(runs_of)
            samples[f"{name} {state}"] = runs_of
    bare_ms = median(bare)
    sizes = {"raw": len(snapshot), "gzip6": len(gzip.compress(snapshot, 6))}
    load_after = os.getloadavg()

    print(f"old = {old_rev} (--base), new = working tree; medians of {args.runs} runs, ms")
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}")
    columns = list(summary)
    print(f"{'':14}" + "".join(f"{c:>14}" for c in columns))
    for key in KEYS:
        cells = [summary[c].get(key) for c in columns]
        print(
            f"{key:14}" + "".join("{:>14}".format("-" if v is None else f"{v:.0f}") for v in cells)
        )
    print(f"{'snapshot':14}" + "".join(f"{'/'.join(summary[c]['snapshot']):>14}" for c in columns))
    later = summary["new later"]["total"]
    print(
        f"bare loadPyodide (warm HTTP cache): {bare_ms:.0f} ms; "
        f"new later / bare = {later / bare_ms:.2f}"
    )
    for c in columns:
        if c.startswith("new cold"):
            print(f"{c} / bare = {summary[c]['total'] / bare_ms:.2f}")
    print_parts(summary, [c for c in columns if c in ("new cold", "new later")])
    print(
        f"shipped snapshot, first visit (fetch {sizes['raw'] / 1e6:.1f} MB, "
        f"{sizes['gzip6'] / 1e6:.1f} MB gzipped, + loadPyodide from it): {median(shipped):.0f} ms"
    )
    path = save(
        "browser_ready",
        {
            "runs": args.runs,
            "old": old_rev,
            "load_average": {"before": load_before[0], "after": load_after[0]},
            "median_ms": summary,
            "bare_load_pyodide_ms": bare_ms,
            "shipped_first_visit_ms": median(shipped),
            "snapshot_bytes": sizes,
            "samples": {**samples, "bare": bare, "shipped": shipped},
        },
    )
    print(json.dumps({"saved": str(path)}))


if __name__ == "__main__":
    main()
